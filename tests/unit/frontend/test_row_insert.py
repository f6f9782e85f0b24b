"""Single-row INSERTs made as Python tuples (`frontend.row_insert`, `frontend.dml_rows`), through a
frontend with a real meta service over SQLite and a real DML log:

- on random statements and parameters, a row the plan makes is exactly the row the Arrow path makes
  (`frontend.handlers.dml.literal_rows`), and where the Arrow path refuses or fails, the plan makes
  none (it never decides an error itself);
- the plan is made once per statement, again after DDL, and a REVOKE takes effect at once;
- the rows reach meta's DML batches, and survive a crash through the DML log, beside Arrow records.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Iterator
from dataclasses import replace
from decimal import Decimal

import pyarrow as pa
import pytest

from frontend import dml_commit, loop_insert, row_insert
from frontend.dml_log import DmlLog, encode_rows
from frontend.dml_rows import Rows, concat
from frontend.handlers import dml
from frontend.plan_cache import RowInsertPlan
from frontend.session import Frontend, Session, _insert_template, substitute_params
from meta.service import MetaService
from risingspark.chunk import OP, SEQ
from risingspark.errors import DuplicateColumn, InsufficientPrivilege, RisingSparkError
from risingspark.types import INT4, INT8, VARCHAR, DataType, Field
from support.meta_tables import create_table, sqlite_meta

SMALLINT = DataType.parse("smallint")
# r: a table without a primary key (a hidden row id), a NOT NULL column, a column the plan cannot write
R_FIELDS = (Field("a", SMALLINT), Field("b", INT4), Field("c", INT8), Field("d", VARCHAR),
            Field("e", DataType.parse("numeric(10,2)")), Field("_row_id", INT8, hidden=True))


@pytest.fixture
def meta(tmp_path) -> Iterator[MetaService]:
    service = sqlite_meta(tmp_path)
    create_table(service, "t", (Field("k", INT8), Field("v", VARCHAR)))
    create_table(service, "r", R_FIELDS, 5, row_id=True, extra={"not_null": ["b"]})
    yield service


@pytest.fixture
def frontend(meta: MetaService, tmp_path) -> Iterator[Frontend]:
    fe = Frontend(meta, meta.objects, cache_bytes=1 << 20, workers=2, dml_log_dir=tmp_path / "log")
    yield fe
    fe.close()


def _session(frontend: Frontend, user: str = "root") -> Session:
    s = frontend.new_session()
    asyncio.run(s.startup({"user": user, "database": "dev"}))
    return s


def _recorded(meta: MetaService, columns: list[str]) -> list[tuple]:
    with meta.store.engine.connect() as conn:
        paths = [p for (p,) in conn.exec_driver_sql("SELECT path FROM dml_batches ORDER BY id")]
    return [tuple(r.values()) for p in paths for r in meta.objects.read_parquet(p).select(columns).to_pylist()]


# ---- the plan's rows against the Arrow path's ----------------------------------------------------

_COLUMNS = ("a", "b", "c", "d", "e")
_PARAMS = [0, 1, -1, 7, 32767, 32768, -32769, 2**31 - 1, 2**31, -(2**31) - 1, 2**63 - 1, 2**63, True, False, 1.5,
           Decimal("2.50"), "5", " -7 ", "\t12\n", "abc", "", "1e3", "4.0", "x'y", "+3", "--1", None]
_OIDS = [0, 20, 21, 23, 25, 1043, 16, 701, 1700]
_LITERALS = ["0", "-5", "40000", "2147483648", "'12'", "' 9 '", "'a''b'", "'x'", "1.5", "NULL", "TRUE", "FALSE",
             "9223372036854775808"]


def _arrow_row(session: Session, template, params: list, oids: list[int]) -> tuple | str | None:
    """The Arrow path's row (user columns), "error" where it raises, None where it takes the general path."""
    stmt = replace(template, values_text=substitute_params(template.values_text, params, oids))
    try:
        made = dml.literal_rows(session, stmt)
    except RisingSparkError:
        return "error"
    if made is None:
        return None
    rel, table = made
    assert table.num_rows == 1
    full = dml.with_change_columns(table, pa.array([1], pa.int8()).to_numpy())
    return full.schema, full.drop_columns([SEQ, "_row_id"]).to_pylist()[0]


def test_the_plan_makes_the_arrow_paths_row_or_none(frontend: Frontend) -> None:
    session = _session(frontend)
    rng = random.Random(20261129)
    made = refused = 0
    for _ in range(3000):
        cols = rng.sample(_COLUMNS[:4] if rng.random() < 0.9 else _COLUMNS, rng.randint(1, 4))
        if rng.random() < 0.7 and "b" not in cols:
            cols.append("b")  # (NOT NULL: without it, no row)
        items, params, oids = [], [], []
        for col in cols:
            if rng.random() < 0.3:
                items.append(rng.choice(_LITERALS))
                continue
            if rng.random() < 0.6:  # a value a driver sends for the column
                value, oid = ((rng.choice(["x", "", "it's", "5"]), rng.choice([0, 25, 1043])) if col == "d" else
                              (rng.randint(-100, 100), rng.choice([0, 20, 21, 23])))
            else:
                value, oid = rng.choice(_PARAMS), rng.choice(_OIDS)
            params.append(value)
            oids.append(oid)
            items.append(f"${len(params)}")
        text = f"INSERT INTO r ({', '.join(cols)}) VALUES ({', '.join(items)})"
        template = _insert_template(text)
        assert template is not None, text
        expected = _arrow_row(session, template, params, oids)
        plan = row_insert.plan_row_insert(session, template, 1)
        rows = plan.rows(params, oids) if plan is not None else None
        if rows is None:
            refused += 1
            continue
        made += 1
        assert isinstance(expected, tuple), (text, params, oids, expected)
        schema, values = expected
        assert rows.schema.equals(schema)
        table = rows.to_table()
        assert table.num_rows == 1 and table.column("_row_id").null_count == 0
        assert table.drop_columns([SEQ, "_row_id"]).to_pylist()[0] == values, (text, params, oids)
    assert made > 500 and refused > 500, (made, refused)  # (both sides of the property were exercised)


def test_a_row_the_plan_refuses_gets_the_arrow_paths_error(frontend: Frontend) -> None:
    session = _session(frontend)
    with pytest.raises(RisingSparkError, match='null value in column "b"'):
        asyncio.run(session.execute("INSERT INTO r (a, b) VALUES ($1, $2)", [21, 23], [1, None]))
    with pytest.raises(RisingSparkError, match='null value in column "k"'):
        asyncio.run(session.execute("INSERT INTO t VALUES ($1, $2)", [20, 25], [None, "x"]))
    with pytest.raises(RisingSparkError, match="smallint out of range"):
        asyncio.run(session.execute("INSERT INTO r (a, b) VALUES ($1, 1)", [21], [40000]))
    with pytest.raises(DuplicateColumn, match='column "k" specified more than once'):  # (PostgreSQL's 42701)
        asyncio.run(session.execute("INSERT INTO t (k, k) VALUES ($1, $2)", [20, 20], [1, 2]))


def test_long_texts_are_left_to_the_arrow_path(frontend: Frontend, meta: MetaService) -> None:
    create_table(meta, "two", (Field("k", INT8), Field("x", VARCHAR), Field("y", VARCHAR)))
    session = _session(frontend)
    template = _insert_template("INSERT INTO two VALUES ($1, $2, $3)")
    plan = row_insert.plan_row_insert(session, template, 1)
    assert plan is not None
    half = row_insert.MAX_TEXT_CHARS // 2
    assert plan.rows([1, "x" * half, "y" * half], [20, 25, 25]) is not None
    assert plan.rows([1, "x" * half, "y" * (half + 1)], [20, 25, 25]) is None  # (the row's texts: on a thread)


# ---- the plan in the cache -----------------------------------------------------------------------

def test_the_plan_is_made_once_again_after_ddl_and_a_revoke_takes_effect(frontend: Frontend, meta: MetaService,
                                                                         monkeypatch) -> None:
    made = []
    real = row_insert.plan_row_insert
    monkeypatch.setattr(loop_insert, "plan_row_insert", lambda *a: made.append(a) or real(*a))
    root = _session(frontend)
    sql = "INSERT INTO t VALUES ($1, $2)"
    for k in range(3):
        assert asyncio.run(root.execute(sql, [20, 25], [k, f"v{k}"])).tag == "INSERT 0 1"
    assert len(made) == 1
    assert isinstance(frontend.plans.last(root._plan_key(sql, [20, 25])), RowInsertPlan)
    create_table(meta, "other")  # DDL: a new catalog version
    asyncio.run(root.execute(sql, [20, 25], [3, "v3"]))
    assert len(made) == 2

    for stmt in ("CREATE USER writer", "GRANT INSERT ON t TO writer"):
        asyncio.run(root.execute(stmt, [], []))
    writer = _session(frontend, "writer")
    asyncio.run(writer.execute(sql, [20, 25], [4, "v4"]))
    asyncio.run(writer.execute(sql, [20, 25], [5, "v5"]))  # (by the writer's plan)
    asyncio.run(root.execute("REVOKE INSERT ON t FROM writer", [], []))
    with pytest.raises(InsufficientPrivilege, match="permission denied for table t"):
        asyncio.run(writer.execute(sql, [20, 25], [6, "v6"]))
    # a user dropped and made again under its name is another user: the old one's session has no plan of the new one's
    for stmt in ("DROP USER writer", "CREATE USER writer", "GRANT INSERT ON t TO writer"):
        asyncio.run(root.execute(stmt, [], []))
    asyncio.run(_session(frontend, "writer").execute(sql, [20, 25], [7, "v7"]))
    with pytest.raises(InsufficientPrivilege):
        asyncio.run(writer.execute(sql, [20, 25], [8, "v8"]))
    frontend.dml.drain(timeout=30)
    assert _recorded(meta, ["k", "v"]) == [(k, f"v{k}") for k in (0, 1, 2, 3, 4, 5, 7)]


def test_a_text_of_literals_alone_keeps_no_plan(frontend: Frontend) -> None:
    """A driver that binds on the client sends a new text each time: its plans would push the repeated
    statements' out of the cache."""
    session = _session(frontend)
    asyncio.run(session.execute("SELECT 1", [], []))
    cached = len(frontend.plans)
    for k in range(20):
        assert asyncio.run(session.execute(f"INSERT INTO t VALUES ({k}, 'v')", [], [])).tag == "INSERT 0 1"
    assert len(frontend.plans) == cached


# ---- the rows in the log and in meta --------------------------------------------------------------

def test_rows_survive_a_crash_in_the_log_beside_arrow_records(meta: MetaService, tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(dml_commit, "ASYNC_COMMIT_DELAY_S", 3600.0)  # meta records nothing before the "crash"
    crashed = Frontend(meta, meta.objects, cache_bytes=1 << 20, workers=2, dml_log_dir=tmp_path / "log")
    session = _session(crashed)
    asyncio.run(session.execute("INSERT INTO t VALUES ($1, $2)", [20, 25], [0, "zero"]))  # a row plan's
    asyncio.run(session.execute("INSERT INTO t VALUES (1, 'one'), (2, 'two')", [], []))  # the Arrow path's
    asyncio.run(session.execute("INSERT INTO r (b, d) VALUES ($1, $2)", [23, 0], [3, "three"]))
    asyncio.run(session.execute("INSERT INTO t VALUES ($1, $2)", [20, 25], [4, None]))
    assert isinstance(crashed.plans.last(session._plan_key("INSERT INTO t VALUES ($1, $2)", [20, 25])),
                      RowInsertPlan)  # (so two of the log's records are tuples)
    log = crashed.dml._log
    assert log is not None and log.written == 4
    assert _recorded(meta, ["k"]) == []
    log.close()  # the process died: nothing recorded

    monkeypatch.setattr(dml_commit, "ASYNC_COMMIT_DELAY_S", 0.0)
    restarted = Frontend(meta, meta.objects, cache_bytes=1 << 20, workers=2, dml_log_dir=tmp_path / "log")
    restarted.dml.drain(timeout=30)
    with meta.store.engine.connect() as conn:
        paths = [p for (p,) in conn.exec_driver_sql("SELECT path FROM dml_batches ORDER BY id")]
    tables = [meta.objects.read_parquet(p) for p in paths]
    assert [t.select(["k", "v"]).to_pylist() for t in tables if "k" in t.column_names] == \
        [[{"k": 0, "v": "zero"}, {"k": 1, "v": "one"}, {"k": 2, "v": "two"}], [{"k": 4, "v": None}]]  # (a file a run)
    (r_rows,) = [t for t in tables if "b" in t.column_names]
    assert r_rows.select(["a", "b", "c", "d", "e"]).to_pylist() == [{"a": None, "b": 3, "c": None, "d": "three",
                                                                    "e": None}]
    assert r_rows.column("_row_id").null_count == 0
    restarted.close()


def test_a_log_record_of_rows_reads_back_as_its_table(tmp_path) -> None:
    schema = pa.schema([(OP, pa.int8()), (SEQ, pa.int64()), ("k", pa.int64()), ("v", pa.string()),
                        ("x", pa.decimal128(10, 2))])
    rows = Rows(schema, [(1, 10, 5, "a", None), (1, 11, -(2**63), "é'\n", None)])
    arrow = pa.table({OP: pa.array([1], pa.int8()), SEQ: [12], "k": [6], "v": ["b"],
                      "x": pa.array([Decimal("1.50")], pa.decimal128(10, 2))})
    log = DmlLog(tmp_path / "log")
    log.unrecorded(0)
    log.sync(log.append(7, encode_rows(rows)))
    log.sync(log.append(7, encode_rows(arrow)))
    log.close()
    reopened = DmlLog(tmp_path / "log")
    records = reopened.unrecorded(0)
    assert [r.rows for r in records] == [rows.to_table(), arrow]
    assert concat([rows, arrow, rows]).column("k").to_pylist() == [5, -(2**63), 6, 5, -(2**63)]
    reopened.close()
