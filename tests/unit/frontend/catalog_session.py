"""A frontend session over an in-memory catalog (no storage, no Spark) for catalog query tests."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace

import psycopg
import pyarrow as pa
import pytest

from frontend.session import Frontend, Session
from meta.catalog import CatalogSnapshot
from risingspark.catalog import (
    DatabaseCatalog,
    JobStatus,
    RelationCatalog,
    RelationKind,
    SchemaCatalog,
)
from risingspark.errors import RisingSparkError
from risingspark.storage.desc import HummockVersion, StateTableDesc
from risingspark.storage.object_store import ObjectStore
from risingspark.types import INT4, INT8, TIMESTAMP, VARCHAR, DataType, Field

DB, PUBLIC, OTHER = 1000, 1001, 1002


def relation(rel_id: int, name: str, kind: RelationKind, fields: tuple[Field, ...], pk: tuple[int, ...],
             schema_id: int = PUBLIC, **kw) -> RelationCatalog:
    desc = StateTableDesc(rel_id, fields, pk, pk)
    return RelationCatalog(rel_id, DB, schema_id, name, kind, fields, pk, pk, kw.pop("definition", f"CREATE {name}"),
                           state_tables=(desc,), **kw)


ORDERS = relation(1010, "orders", RelationKind.TABLE,
                  (Field("id", INT8), Field("customer", INT4), Field("amount", DataType.parse("numeric(12,2)")),
                   Field("note", VARCHAR), Field("created_at", TIMESTAMP)), (0,),
                  definition="CREATE TABLE orders (id BIGINT PRIMARY KEY, customer INT, amount NUMERIC(12,2), "
                             "note VARCHAR, created_at TIMESTAMP)",
                  extra={"comment": "all orders", "column_comments": {"note": "free text"}})
EVENTS = relation(1011, "events", RelationKind.TABLE, (Field("v", VARCHAR), Field("_row_id", INT8, hidden=True)), (1,),
                  row_id_index=1, definition="CREATE TABLE events (v VARCHAR)")
SUMMARY = relation(1012, "summary", RelationKind.MATERIALIZED_VIEW, (Field("customer", INT4), Field("n", INT8)), (0,),
                   definition="CREATE MATERIALIZED VIEW summary AS SELECT customer, count(*) AS n FROM orders "
                              "GROUP BY customer", dependencies=(1010,))
HIDDEN = relation(1013, "orders", RelationKind.TABLE, (Field("x", INT4),), (0,), schema_id=OTHER,
                  definition="CREATE TABLE other.orders (x INT PRIMARY KEY)")


class FakeMeta:
    """What sessions ask of meta for catalog queries."""

    def __init__(self, relations: list[RelationCatalog]) -> None:
        self.snapshot = CatalogSnapshot(
            7, {DB: DatabaseCatalog(DB, "dev")},
            {PUBLIC: SchemaCatalog(PUBLIC, DB, "public"), OTHER: SchemaCatalog(OTHER, DB, "other")},
            {r.id: r for r in relations})
        self.pending: CatalogSnapshot | None = None  # a change made through another frontend
        self.syncs = 0

    def catalog_snapshot(self) -> CatalogSnapshot:
        return self.snapshot

    def reads_locally(self) -> bool:
        return True

    def statement_mark(self) -> CatalogSnapshot:
        return self.snapshot

    def catalog_moved_since(self, mark: CatalogSnapshot) -> bool:
        """Install `pending`, as `meta.client.MetaClient.catalog_moved_since` brings a frontend's
        copy up to date, and say whether the catalog moved since `mark`."""
        self.syncs += 1
        if self.pending is not None:
            self.snapshot, self.pending = self.pending, None
        return self.snapshot is not mark

    def pin_version(self) -> HummockVersion:
        return HummockVersion(1, 0)

    def unpin_version(self, version: HummockVersion) -> None:
        pass

    def ddl_progress(self) -> list:
        return []

    def write_stalls(self) -> list:
        return []

    def row_count(self, table_id: int) -> int:
        return 0


def make_session(relations: list[RelationCatalog] | None = None) -> Session:
    rels = relations if relations is not None else [ORDERS, EVENTS, SUMMARY, HIDDEN]
    store = ObjectStore(tempfile.mkdtemp(prefix="catalog-test-"))
    frontend = Frontend(FakeMeta(rels), store, cache_bytes=1 << 20, workers=2)
    session = frontend.new_session()
    session.pid = 42
    return session


def select_both(oracle_dsn: str, expressions: list[str]) -> tuple[pa.Table, tuple, list[int]]:
    """``SELECT e0 AS c0, e1 AS c1, ...`` of `expressions` as a batch query here (its typed result)
    and in PostgreSQL (its row, and its columns' type OIDs as a client sees them)."""
    session = make_session()
    query = "SELECT " + ", ".join(f"{e} AS c{i}" for i, e in enumerate(expressions))
    table = session.run_batch(session.parse_sql(query), typed=True)
    with psycopg.connect(oracle_dsn, autocommit=True) as pg:
        cur = pg.execute(query)
        row = cur.fetchone()
        assert row is not None
        return table, tuple(row), [d.type_code for d in cur.description]


@contextmanager
def oracle_with_view(oracle_dsn: str, name: str, query: str) -> Iterator[psycopg.Connection]:
    """A connection to the oracle where `name` is a temporary view of `query`: the catalog view of a
    test's session, in PostgreSQL."""
    with psycopg.connect(oracle_dsn, autocommit=True) as conn:
        conn.execute(f"CREATE OR REPLACE TEMP VIEW {name} AS {query}")
        yield conn


def batch_rows(session: Session, query: str) -> list[tuple]:
    """The rows of batch query `query` in `session`, as tuples (columns by position)."""
    table = session.run_batch(session.parse_sql(query))
    return list(zip(*(c.to_pylist() for c in table.columns), strict=True))


# the catalog's `orders` (`ORDERS`) as a view in PostgreSQL (`oracle_with_view`), with one row
ORDERS_ORACLE = ("SELECT 1::bigint AS id, 2 AS customer, 3.5::numeric(12,2) AS amount, 'x'::varchar AS note, "
                 "'2024-01-01'::timestamp AS created_at")


def described_here(query: str) -> tuple[list[tuple], list[int]]:
    """The rows of a client's batch query here and the type OIDs it is described with
    (RowDescription's)."""
    from frontend.session import columns_of

    session = make_session()
    table = session.run_batch(session.parse_sql(query), typed=True)
    return [tuple(r.values()) for r in table.to_pylist()], [c.type_oid for c in columns_of(table)]


def described_there(pg: psycopg.Connection, query: str) -> tuple[list[tuple], list[int]]:
    """`described_here` in PostgreSQL."""
    cur = pg.execute(query)
    return cur.fetchall(), [d.type_code for d in cur.description]


def fail_both(oracle_dsn: str, sql: str) -> tuple[RisingSparkError, psycopg.Error]:
    """The errors `sql` fails with as a batch query here and in PostgreSQL (each must fail)."""
    with psycopg.connect(oracle_dsn, autocommit=True) as pg, pytest.raises(psycopg.Error) as want:
        pg.execute(sql)
    session = make_session()
    with pytest.raises(RisingSparkError) as got:
        session.run_batch(session.parse_sql(sql))
    return got.value, want.value


def creating(rel: RelationCatalog) -> RelationCatalog:
    return replace(rel, status=JobStatus.CREATING)
