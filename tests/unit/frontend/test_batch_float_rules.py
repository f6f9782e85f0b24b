"""Doubles and reals in batch queries against PostgreSQL (the oracle): ``round`` of a double half to
even and ``round(double, n)`` 42883 (`frontend.catalog.float_round`), a real with an integer or
numeric operand computed as a double (`frontend.catalog.real_operands`), booleans in ``concat`` and
``format``, and a double's text made in the query (`frontend.catalog.float_text`) or sent as a
column's value (`frontend.pgwire.datarows`)."""

from __future__ import annotations

import math
import struct

import numpy as np
import psycopg
import pyarrow as pa
import pytest
from catalog_session import DB, PUBLIC, make_session

from frontend.handlers.views import QUERY
from frontend.pgwire.api import ColumnDesc
from frontend.pgwire.codec import FLOAT4, FLOAT8
from frontend.pgwire.datarows import encode_rows
from risingspark.catalog import RelationCatalog, RelationKind
from risingspark.errors import RisingSparkError
from risingspark.types import FLOAT4 as REAL
from risingspark.types import FLOAT8 as DOUBLE
from risingspark.types import INT4, NUMERIC, Field

# a view holding a real, a double, an integer and a numeric: its columns' types are in the catalog
READINGS_QUERY = ("SELECT 3.14159::real AS r, 0.5::float8 AS d, 7 AS i, 2.5::numeric AS n UNION ALL "
                  "SELECT -2.5::real, -2.5::float8, -3, -0.1")
READINGS = RelationCatalog(1030, DB, PUBLIC, "readings", RelationKind.VIEW,
                           (Field("r", REAL), Field("d", DOUBLE), Field("i", INT4), Field("n", NUMERIC)), (), (),
                           f"CREATE VIEW readings AS {READINGS_QUERY}", extra={QUERY: READINGS_QUERY})
VALUES = "(VALUES (2.5::float8, 3.14159::real, 2.5::numeric), (-0.5, -2.5, -2.5), (0.5, 0.5, 0.5)) AS v(d, r, n)"
_OIDS = {pa.float64(): FLOAT8, pa.float32(): FLOAT4, pa.bool_(): 16, pa.int32(): 23, pa.int64(): 20, pa.string(): 25}


def _comparable(v: object, oid: int) -> object:
    """A value with a float's sign of zero kept (``-0`` is not ``0`` here), a real as a 32-bit value
    (psycopg reads a real from its shortest text)."""
    if isinstance(v, float) and oid == FLOAT4:
        v = float(np.float32(v))
    if isinstance(v, float):
        return "NaN" if math.isnan(v) else (v, math.copysign(1.0, v))
    return v


def _types_and_rows(oids: list[int], rows: list[tuple]) -> tuple[list[int], list[tuple]]:
    return oids, [tuple(_comparable(v, oid) for v, oid in zip(row, oids, strict=True)) for row in rows]


@pytest.fixture(scope="module")
def pg(oracle_dsn: str):
    with psycopg.connect(oracle_dsn, autocommit=True) as conn:
        conn.execute(f"CREATE OR REPLACE TEMP VIEW readings AS {READINGS_QUERY}")
        yield conn


def _same_as_postgresql(pg: psycopg.Connection, query: str) -> None:
    session = make_session([READINGS])
    table = session.run_batch(session.parse_sql(query), typed=True)
    oids = [1700 if pa.types.is_decimal(f.type) else _OIDS.get(f.type, 0) for f in table.schema]
    got = _types_and_rows(oids, [tuple(row.values()) for row in table.to_pylist()])
    cur = pg.execute(query)
    assert got == _types_and_rows([d.type_code for d in cur.description], cur.fetchall()), query


ROUNDS = [
    "SELECT round(2.5::float8) AS a, round(-0.5::float8) AS b, round(3.5::float8) AS c, round(-2.5::float8) AS e, "
    "round(2.5) AS f, round(-2.5) AS g, round(0.5::real) AS h, round('2.5') AS i",
    "SELECT round(r) AS r, round(d) AS d, round(n) AS n FROM readings ORDER BY 1",
    "SELECT round(d) AS k, count(*) AS c FROM readings GROUP BY round(d) ORDER BY 1",
]


@pytest.mark.parametrize("query", ROUNDS)
def test_round_of_a_double_is_half_to_even(pg: psycopg.Connection, query: str):
    _same_as_postgresql(pg, query)


NUMERIC_ROUNDS = [
    # what DuckDB computes as a double and PostgreSQL as a numeric rounds as a numeric (half away from
    # zero, with digits): the rule leaves an operand whose type is not plain in the text alone (the
    # values are compared: the result types of these are DuckDB's, a gap of their own)
    "SELECT round(avg(x)) AS a, round(avg(x), 2) AS b FROM (VALUES (2), (3)) AS v(x)",
    "SELECT round(100.0 * x / y, 1) AS a, round(x * 100.0 / sum(x) OVER (), 1) AS b, round(x / 2.0) AS c "
    "FROM (VALUES (1, 3), (2, 3), (5, 8)) AS v(x, y) ORDER BY 1",
]


@pytest.mark.parametrize("query", NUMERIC_ROUNDS)
def test_round_of_what_postgresql_computes_as_a_numeric(pg: psycopg.Connection, query: str):
    session = make_session([READINGS])
    got = [tuple(float(v) for v in row.values()) for row in session.run_batch(session.parse_sql(query)).to_pylist()]
    assert got == [tuple(float(v) for v in row) for row in pg.execute(query).fetchall()], query


@pytest.mark.parametrize("call", ["round(2.5::float8, 1)", "round(2.5::real, 0)", "round(d, 1) FROM readings",
                                  "round(r, 2) FROM readings"])
def test_round_of_a_double_to_digits_does_not_exist(pg: psycopg.Connection, call: str):
    with pytest.raises(psycopg.Error) as want:
        pg.execute(f"SELECT {call}")
    session = make_session([READINGS])
    with pytest.raises(RisingSparkError) as got:
        session.run_batch(session.parse_sql(f"SELECT {call}"))
    assert (got.value.sqlstate, got.value.message) == (want.value.sqlstate, want.value.diag.message_primary)


REALS = [
    # compared with a numeric literal as a double (false: the real is not 3.14159), unless the literal is a real
    f"SELECT r = 3.14159 AS a, 3.14159 <> r AS b, r > 3.14159 AS c, r BETWEEN 3.14159 AND 4 AS e, "
    f"r IS DISTINCT FROM 3.14159 AS f, r = 2.5 AS g, r < -2.4 AS h, n = 2.5 AS i, d = 0.5 AS j FROM {VALUES}",
    "SELECT 3.14159::real = 3.14159 AS a, 3.14159::real > 3.14159 AS b",
    # arithmetic with an integer or a numeric: a double
    "SELECT 3.14159::real * 2 AS a, 3.14159::real / 3 AS b, 3.14159::real - 1.1 AS c, 2::bigint + 3.14159::real AS e, "
    "3.14159::real + 3.14159::real AS f, (3.14159::real + 1::real) * 2 AS g",
    "SELECT r * 2 AS a, r / 3 AS b, r - 1.1 AS c, r + i AS e, r * n AS f, r + r AS g, r = 3.14159 AS h, r > i AS j, "
    "r * d AS k FROM readings ORDER BY 1",
    "SELECT t.r / 3 AS a, count(*) AS c FROM readings AS t WHERE t.r < 3.14159 GROUP BY t.r / 3",
]


@pytest.mark.parametrize("query", REALS)
def test_a_real_with_an_integer_or_numeric_is_a_double(pg: psycopg.Connection, query: str):
    _same_as_postgresql(pg, query)


BOOLEANS = ("SELECT concat(1, true) AS a, concat(false, NULL::boolean, 'x') AS b, concat_ws(',', true, false, NULL, 1) "
            "AS c, format('%s|%L|%I', true, false, true) AS e, concat(b) AS f FROM (VALUES (true), (false)) AS v(b)")


def test_booleans_in_concat_and_format_are_t_and_f(pg: psycopg.Connection):
    _same_as_postgresql(pg, BOOLEANS)


FLOATS = ["0.0::float8", "-0.0::float8", "1e20::float8", "1.5e-7::float8", "'NaN'::float8", "'Infinity'::float8",
          "'-Infinity'::float8", "1e15::float8", "123456789012345.6::float8", "100::float8", "0.0001::float8",
          "1e-5::float8", "0.1::real", "1e6::real", "145185.875::real", "(-1234567.5)::real", "'-0'::real"]


def test_doubles_as_text_in_the_query(pg: psycopg.Connection):
    query = "SELECT " + ", ".join(f"({v})::text AS a{i}, concat({v}) AS b{i}, format('%s', {v}) AS c{i}, "
                                  f"({v}) || '' AS e{i}" for i, v in enumerate(FLOATS))
    session = make_session()
    got = list(session.run_batch(session.parse_sql(query), typed=True).to_pylist()[0].values())
    assert got == list(pg.execute(query).fetchone())
    through_values = (f"SELECT x::text AS a, concat(x) AS b, x::varchar(4)::text AS c FROM (VALUES ({FLOATS[7]}, "
                      f"{FLOATS[14]})) AS v(x, y) UNION ALL SELECT y::text, concat(y), y::varchar(4)::text "
                      f"FROM (VALUES ({FLOATS[7]}, {FLOATS[14]})) AS v(x, y) ORDER BY 1")
    _same_as_postgresql(pg, through_values)
    of_columns = ("SELECT (d * 4)::text AS a, r::text AS b, 'x' || d * 4 AS c, concat(r * 0 + 1e15) AS e, "
                  "(r + 1e6::real)::text AS f FROM readings ORDER BY 1")
    _same_as_postgresql(pg, of_columns)


def _cells(message: bytes) -> list[str]:
    """The text cells of one DataRow message (``D``, length, column count, then length and bytes each)."""
    count, at, cells = struct.unpack_from("!h", message, 5)[0], 7, []
    for _ in range(count):
        n = struct.unpack_from("!i", message, at)[0]
        cells.append(message[at + 4:at + 4 + n].decode())
        at += 4 + n
    return cells


def test_doubles_sent_as_columns_are_postgresqls_text(pg: psycopg.Connection):
    query = "SELECT " + ", ".join(f"{v} AS c{i}" for i, v in enumerate(FLOATS))
    session = make_session()
    result = session.run_batch(session.parse_sql(query), typed=True)
    columns = [ColumnDesc(f.name, _OIDS[f.type]) for f in result.schema]
    got = _cells(encode_rows(columns, [0] * len(columns), result))
    cur = pg.execute(query)
    assert cur.pgresult is not None
    assert got == [(cur.pgresult.get_value(0, i) or b"").decode() for i in range(len(FLOATS))]
