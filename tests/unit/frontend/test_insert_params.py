"""Parameterized single-row INSERTs (what drivers send) take the fast VALUES path of
`frontend.values` — no batch query — and a parameter whose typed literal the fast path cannot read
(a double) takes the general path, storing what PostgreSQL stores; with ``synchronous_commit = off``
they return once queued, and FLUSH's drain records them. A real meta service over SQLite and a real
object store; no compute node (nothing here runs an epoch)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from decimal import Decimal

import pytest

from frontend.session import Frontend, Session, _Running
from meta.service import MetaService
from meta.store.store import MetaStore
from risingspark.storage.object_store import ObjectStore
from risingspark.types import INT4, INT8, VARCHAR, DataType, Field
from support.meta_tables import create_table

INT8_OID, FLOAT8_OID, UNKNOWN_OID = 20, 701, 0


@pytest.fixture
def session(tmp_path) -> Iterator[Session]:
    store = MetaStore(f"sqlite:///{tmp_path / 'meta.db'}")
    store.upgrade()
    objects = ObjectStore(str(tmp_path / "objects"))
    meta = MetaService(store, objects, None)
    create_table(meta, "t", (Field("k", INT8), Field("n", INT4), Field("v", VARCHAR),
                       Field("x", DataType.parse("numeric(10,2)"))))
    frontend = Frontend(meta, objects, cache_bytes=1 << 20, workers=2)
    s = frontend.new_session()
    asyncio.run(s.startup({"user": "root", "database": "dev"}))
    yield s
    frontend.close()


def _insert(session: Session, params: list, oids: list[int]) -> None:
    key = session._plan_key("INSERT INTO t VALUES ($1, $2, $3, $4)", oids)
    session._run_planned(key, params, _Running(key.text))


def _stored(session: Session) -> list[tuple]:
    """Every row of every DML batch meta recorded, in order."""
    meta, store = session.frontend.meta, session.frontend.store
    batches = meta.store.engine.connect().exec_driver_sql("SELECT path FROM dml_batches ORDER BY id").fetchall()
    rows = []
    for (path,) in batches:
        t = store.read_parquet(path).select(["k", "n", "v", "x"])
        rows += [tuple(r.values()) for r in t.to_pylist()]
    return rows


def test_driver_parameters_take_the_fast_path(session: Session, monkeypatch) -> None:
    batch_queries: list = []
    run_batch = Session.run_batch
    monkeypatch.setattr(Session, "run_batch", lambda self, *a, **kw: batch_queries.append(a) or run_batch(self, *a, **kw))
    # as the wire decodes them: integers as ints, strings (untyped) as str, NULLs untyped
    _insert(session, [1, 7, "a'b", 12], [INT8_OID, INT8_OID, UNKNOWN_OID, INT8_OID])
    _insert(session, [2, None, None, 3], [INT8_OID, UNKNOWN_OID, UNKNOWN_OID, INT8_OID])
    assert batch_queries == []
    # a double's 2.5 into an integer column: PostgreSQL rounds it to even (2); the typed statement
    # answers, through a batch query
    _insert(session, [3, 2.5, "z", 0.125], [INT8_OID, FLOAT8_OID, UNKNOWN_OID, FLOAT8_OID])
    assert len(batch_queries) == 1
    assert _stored(session) == [(1, 7, "a'b", Decimal("12.00")), (2, None, None, Decimal("3.00")),
                                (3, 2, "z", Decimal("0.13"))]


def test_asynchronous_inserts_are_recorded_in_order_by_the_drain(session: Session) -> None:
    session.vars.set("synchronous_commit", "off")
    for k in range(200):
        _insert(session, [k % 50, k, "v", 1], [INT8_OID, INT8_OID, UNKNOWN_OID, INT8_OID])
    session.frontend.dml.drain()
    stored = _stored(session)
    assert [r[1] for r in stored] == list(range(200))
    batches = session.frontend.meta.store.engine.connect().exec_driver_sql("SELECT count(*) FROM dml_batches").scalar()
    assert batches < 200  # statements shared files and commits
