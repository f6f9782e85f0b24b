"""The type OIDs a client is told for the string outputs of batch queries, against PostgreSQL (the
oracle): a text-valued expression is a ``text`` (25), ``pg_typeof`` a ``regtype`` (2206), a
varchar column and a cast to varchar a ``character varying`` (1043) (`frontend.output_oids`), with
the values unchanged; also in a prepared statement's Describe and rows over the wire, and in the
binary format (a regtype's is its OID)."""

from __future__ import annotations

import asyncio
import struct

import psycopg
import pytest
from catalog_session import ORDERS_ORACLE, described_here, described_there, make_session, oracle_with_view

from frontend import batch_stream
from frontend.pgwire.codec import binary_value
from frontend.pgwire.row_stream import RowStream
from frontend.session import columns_of

REGTYPE = 2206

_here, _there = described_here, described_there


@pytest.fixture(scope="module")
def pg(oracle_dsn: str):
    with oracle_with_view(oracle_dsn, "orders", ORDERS_ORACLE) as conn:
        yield conn


EXPRESSIONS = [
    "SELECT 'a' || 'b' AS a, 'x'::text AS b, upper('a') AS c, concat('a', 1) AS d, 'x' AS e, "
    "to_char(date '2024-01-02', 'YYYY-MM') AS f, lower('A'::varchar) AS g, 'y'::varchar AS h, CAST('z' AS text) AS i, NULL AS j",
    "SELECT substring('abc', 2) AS a, trim(' a ') AS b, replace('ab', 'a', 'c') AS c, left('ab', 1) AS d, "
    "lpad('a', 3) AS e, split_part('a,b', ',', 2) AS f, md5('a') AS g, repeat('a', 2) AS h, 1::text AS i, "
    "1::varchar AS j, concat_ws('-', 'a', 'b') AS k, '{\"a\": \"b\"}'::jsonb ->> 'a' AS l",
    "SELECT coalesce(NULL, 'a') AS a, coalesce('a'::varchar, 'b') AS b, coalesce('a'::text, 'b'::varchar) AS c, "
    "CASE WHEN 1 > 0 THEN 'a' END AS d, CASE WHEN 1 > 0 THEN 'a'::varchar ELSE 'b' END AS e, "
    "greatest('a', 'b') AS f, nullif('a', 'b') AS g, (SELECT 'a') AS h, (SELECT 'a'::varchar) AS i",
    "SELECT x, y, x || y AS z, max(x) OVER () AS m FROM (VALUES ('a', 'b'::varchar)) v(x, y)",
    "WITH w AS (SELECT 'a'::text AS q, 'b'::varchar AS r) SELECT q, r, q || r AS s, upper(r) AS t FROM w",
    "SELECT 'a' AS x UNION ALL SELECT 'b' ORDER BY x",
    "SELECT 'a'::varchar AS x, 'c' AS y UNION SELECT 'b', 'd' || 'e' ORDER BY x",
    "VALUES ('a', 1), ('b', 2)",
    "SELECT * FROM (VALUES ('a', 'b'::varchar)) v(x, y)",
    "SELECT pg_typeof(1) AS a, pg_typeof('a'::text) AS b, pg_typeof(pg_typeof(1)) AS c, pg_typeof(1)::text AS d, "
    "pg_typeof(x) AS e FROM (VALUES (1.5::real)) v(x)",
    "SELECT format_type(23, -1) AS a, upper(NULL) AS b, string_agg(x, ',') AS c, max(x) AS d, min(x) AS e "
    "FROM (VALUES ('a'), ('b')) v(x)",
]


@pytest.mark.parametrize("query", EXPRESSIONS)
def test_string_outputs_are_described_as_postgresql(pg: psycopg.Connection, query: str) -> None:
    assert _here(query) == _there(pg, query), query


RELATIONS = [
    "SELECT note, upper(note) AS u, note || '!' AS c, note::text AS t, coalesce(note, 'a') AS n, max(note) AS m, "
    "string_agg(note, ',') AS s, pg_typeof(note) AS p FROM orders GROUP BY note",
    "SELECT o.note, o.*, 'a' || o.note AS c FROM orders o",
    "SELECT s.u, s.note FROM (SELECT upper(note) AS u, note FROM orders) s",
]


@pytest.mark.parametrize("query", RELATIONS)
def test_outputs_over_a_relation_are_described_as_postgresql(pg: psycopg.Connection, query: str) -> None:
    # (a varchar column stays a character varying: the catalog's only string type, see the module doc)
    assert _here(query)[1] == _there(pg, query)[1], query


def test_regtype_binary_format_is_its_oid() -> None:
    # (PostgreSQL's binary regtype is the type's OID, a uint32)
    assert binary_value("integer", REGTYPE) == struct.pack("!I", 23)
    assert binary_value("character varying[]", REGTYPE) == struct.pack("!I", 1015)


def test_prepared_statement_describes_text(pg: psycopg.Connection) -> None:
    # (Describe of a prepared statement announces the OIDs its rows come with)
    sql = "SELECT 'a' || $1 AS a, upper($2::varchar) AS b, $3::varchar AS c, pg_typeof($4::text) AS d, $5::text AS e"
    args = ["b", "c", "d", "e", "f"]
    session = make_session()

    async def run() -> tuple[list[int], list[int], list[tuple]]:
        _, described = await session.describe(sql, [])
        result = await session.execute(sql, [], args)
        assert described is not None
        rows = result.rows.to_pylist() if hasattr(result.rows, "to_pylist") else result.rows
        return [c.type_oid for c in described], [c.type_oid for c in result.columns], \
            [tuple(r.values()) if isinstance(r, dict) else tuple(r) for r in rows]

    described, executed, rows = asyncio.run(run())
    cur = pg.execute(sql.replace("$", "%s").replace("%s1", "%s").replace("%s2", "%s").replace("%s3", "%s")
                     .replace("%s4", "%s").replace("%s5", "%s"), args, prepare=True)
    oids = [d.type_code for d in cur.description]
    assert (described, executed, rows) == (oids, oids, cur.fetchall())


def test_a_streamed_result_is_described_as_postgresql(pg: psycopg.Connection, monkeypatch) -> None:
    # (a result of more than one batch is sent as a stream: each batch labelled as the first)
    monkeypatch.setattr(batch_stream, "BATCH_ROWS", 256)
    query = "SELECT 'n' || x::text AS a, x::varchar AS b, pg_typeof(1.5) AS c FROM generate_series(1, 1000) AS g(x)"
    session = make_session()
    rows = session.stream_batch(session.parse_sql(query))
    assert isinstance(rows, RowStream)
    try:
        oids = [c.type_oid for c in columns_of(rows.schema.empty_table())]
        values, schemas = [], set()
        while (batch := rows.take(300)) is not None:
            values += [tuple(r.values()) for r in batch.to_pylist()]
            schemas.add(tuple(c.type_oid for c in columns_of(batch)))
    finally:
        rows.close()
    assert (values, oids) == _there(pg, query) and schemas == {tuple(oids)}
