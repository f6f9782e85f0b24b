"""Result types of batch queries against PostgreSQL (the oracle): ``pg_typeof``'s names
(`frontend.catalog.pg_typeof`), the type of ``sum`` (`frontend.catalog.sum_types`: a real's a real,
a smallint's or an integer's a bigint) and of ``sign`` (`frontend.catalog.sign_function`: a double,
a numeric's a numeric), in the values and in the types a client is told (RowDescription's OIDs),
for queries the binder does not type (VALUES, no FROM: `frontend.batch_types`)."""

from __future__ import annotations

import math

import numpy as np
import psycopg
import pytest
from catalog_session import ORDERS_ORACLE, described_here, described_there, oracle_with_view

from frontend.pgwire.codec import FLOAT4


def _comparable(v: object, oid: int) -> object:
    """A real as a 32-bit value (psycopg reads it from its shortest text), a NaN comparable."""
    if isinstance(v, float) and oid == FLOAT4:
        v = float(np.float32(v))
    return "NaN" if isinstance(v, float) and math.isnan(v) else v


def _here(query: str) -> tuple[list[tuple], list[int]]:
    rows, oids = described_here(query)
    return [tuple(_comparable(v, o) for v, o in zip(row, oids, strict=True)) for row in rows], oids


def _there(pg: psycopg.Connection, query: str) -> tuple[list[tuple], list[int]]:
    rows, oids = described_there(pg, query)
    return [tuple(_comparable(v, o) for v, o in zip(row, oids, strict=True)) for row in rows], oids


@pytest.fixture(scope="module")
def pg(oracle_dsn: str):
    with oracle_with_view(oracle_dsn, "orders", ORDERS_ORACLE + " WHERE false") as conn:  # (empty, as here)
        yield conn


TYPEOFS = [
    "SELECT pg_typeof(1) AS a, pg_typeof(1.5) AS b, pg_typeof(2.5::real) AS c, pg_typeof(2.5::float8) AS d, "
    "pg_typeof(5000000000) AS e, pg_typeof(-2147483648) AS f, pg_typeof(1e3) AS g, pg_typeof(1::int2) AS h, "
    "pg_typeof(1.5::numeric(5,2)) AS i",
    "SELECT pg_typeof('a'::text) AS a, pg_typeof('a'::varchar(3)) AS b, pg_typeof('a') AS c, pg_typeof(NULL) AS d, "
    "pg_typeof(upper('a')) AS e, pg_typeof('a' || 'b') AS f, pg_typeof('a'::char(2)) AS g, pg_typeof('a'::name) AS h",
    "SELECT pg_typeof(true) AS a, pg_typeof(date '2024-01-01') AS b, pg_typeof('2024-01-01'::timestamp) AS c, "
    "pg_typeof('2024-01-01'::timestamptz) AS d, pg_typeof(interval '1 day') AS e, pg_typeof('{}'::jsonb) AS f, "
    "pg_typeof(ARRAY[1, 2]) AS g, pg_typeof(ARRAY['a']) AS h, pg_typeof(pg_typeof(1)) AS i",
    "SELECT pg_typeof(x) AS a, pg_typeof(y) AS b, pg_typeof(z) AS c, pg_typeof(x || y) AS d, pg_typeof(y * 2) AS e, "
    "pg_typeof(z + 1) AS f FROM (VALUES ('a', 1::int2, 2.5::real)) v(x, y, z)",
    "SELECT pg_typeof(sum(y)) AS a, pg_typeof(sum(z)) AS b, pg_typeof(avg(z)) AS c, pg_typeof(sign(max(y))) AS d, "
    "pg_typeof(sum(y::bigint)) AS e, pg_typeof(10 / 4) AS f FROM (VALUES (1::int2, 2.5::real)) v(y, z)",
    "SELECT pg_typeof(max(id)) AS a, pg_typeof(max(customer)) AS b, pg_typeof(max(amount)) AS c, "
    "pg_typeof(max(note)) AS d, pg_typeof(max(created_at)) AS e FROM orders",
]


@pytest.mark.parametrize("query", TYPEOFS)
def test_pg_typeof_names_types_as_postgresql(pg: psycopg.Connection, query: str) -> None:
    # (a regtype, OID 2206, as PostgreSQL's: `frontend.output_oids`)
    assert _here(query) == _there(pg, query), query


SUMS = [
    "SELECT sum(x) AS s, avg(x) AS a FROM (VALUES (1.5::real), (2.25::real)) v(x)",
    "SELECT sum(x)::text = '3.3000002' AS s, sum(x) * 2 AS t FROM (VALUES (1.1::real), (2.2::real)) v(x)",
    "SELECT sum(1) AS a, sum(2::bigint) AS b, sum(1.5::real) AS c, sum(2.5::float8) AS d, avg(1.5::real) AS e, "
    "sum(1.5) AS f",
    "SELECT sum(x) AS a, sum(x * 2) AS b, sum(x) FILTER (WHERE x > 1) AS c, sum(DISTINCT x) AS d "
    "FROM (VALUES (1::smallint), (2::smallint), (2::smallint)) v(x)",
    "SELECT x, sum(x) OVER (ORDER BY x) AS w FROM (VALUES (1), (2147483647)) v(x) ORDER BY x",
    "SELECT g, sum(sum(x)) OVER () AS s FROM (VALUES (1, 1.5::real), (2, 2.25::real)) v(g, x) GROUP BY g ORDER BY g",
]


@pytest.mark.parametrize("query", SUMS)
def test_sum_types_as_postgresql(pg: psycopg.Connection, query: str) -> None:
    assert _here(query) == _there(pg, query), query


SIGNS = [
    "SELECT sign(1) AS a, sign(1.5) AS b, sign(-2::real) AS c, sign(2::float8) AS d, sign(-3::bigint) AS e, "
    "sign(0::smallint) AS f, sign(-2.5::numeric) AS g, sign('2') AS h, sign(NULL) AS i, sign(-0.0::float8) AS j, "
    "sign('NaN'::float8) AS k",
    "SELECT sign(x) AS a, sign(y) AS b, sign(z) AS c, sign(x - 5) AS d, sign(y - 2) AS e, sign(z * 2) AS f, "
    "sign(avg(x)) AS g FROM (VALUES (3, 1.5::numeric, -2::real)) v(x, y, z) GROUP BY x, y, z",
    "SELECT sign(max(customer)) AS a, sign(max(amount)) AS b, sign(max(id)) AS c FROM orders",
]


@pytest.mark.parametrize("query", SIGNS)
def test_sign_types_as_postgresql(pg: psycopg.Connection, query: str) -> None:
    assert _here(query) == _there(pg, query), query
