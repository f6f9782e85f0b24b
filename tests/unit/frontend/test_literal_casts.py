"""Casts to ``varchar(n)``/``char(n)``, to an unconstrained ``numeric``, and of string literals to
booleans and integers, in batch queries (`frontend.catalog.literal_casts`) against PostgreSQL (the oracle)."""

from __future__ import annotations

import psycopg
import pytest
from catalog_session import make_session

from risingspark.errors import RisingSparkError

VALUES = ["'abc'::varchar(2)", "'a'::char(3)", "'abcdef'::character varying(4)", "12345::varchar(3)",
          "'on'::boolean", "'OFF'::boolean", "' yes '::boolean", "'n'::boolean", "'tr'::boolean", "'0'::boolean",
          "' 12 '::int", "'-7'::smallint", "'+9000000000'::bigint", "'abc'::varchar",
          # an unconstrained numeric keeps its digits (DuckDB's default DECIMAL(18,3) rounded them)
          "3.14159::numeric", "2.718281828::decimal", "-0.0001234::numeric * 2", "1.5::numeric::text",
          "100::numeric::varchar", "12.340::numeric(10,3)::text", "1e13::numeric", "-2.5e-3::numeric",
          "12345678912.3::float8::numeric", "1e15::float8::numeric", "(0.1::float8 + 0.2::float8)::numeric",
          "1e13::numeric::text", "(0.1::float8 + 0.2::float8)::numeric::text",
          # a double's or real's range: its edges (a subnormal, zero, the largest real) still read
          "'1e-320'::float8", "'0e-400'::float8", "'-0.0e-999'::float8", "'3.4e38'::real::float8", "'Infinity'::float8",
          "1e-320::float8", "1e308::float8"]
ERRORS = ["'1.5'::int", "'1e3'::int", "'0x1F'::int", "'o'::boolean", "'maybe'::boolean", "'40000'::smallint",
          "'9999999999'::int", "''::int",
          # past a double's or real's range, or so small it would be zero (DuckDB: infinity, zero)
          "'1e400'::float8", "'-1e400'::float8", "' 1e400 '::float8", "'1e-400'::float8", "float8 '1e400'",
          "'1e39'::real", "'1e-50'::real", "'1e400'::float(10)", "1e400::float8", "1e-400::float8", "-1e39::real",
          "'1e400' + 1::float8"]


def test_casts_answer_as_postgresql(oracle_dsn: str):
    session = make_session()
    query = "SELECT " + ", ".join(f"{v} AS c{i}" for i, v in enumerate(VALUES))
    got = list(session.run_batch(session.parse_sql(query)).to_pylist()[0].values())
    with psycopg.connect(oracle_dsn, autocommit=True) as pg:
        assert list(zip(VALUES, got, strict=True)) == list(zip(VALUES, pg.execute(query).fetchone(), strict=True))


@pytest.mark.parametrize("cast", ERRORS)
def test_bad_literals_fail_as_in_postgresql(oracle_dsn: str, cast: str):
    session = make_session()
    with psycopg.connect(oracle_dsn, autocommit=True) as pg, pytest.raises(psycopg.Error) as want:
        pg.execute(f"SELECT {cast}")
    with pytest.raises(RisingSparkError) as got:
        session.run_batch(session.parse_sql(f"SELECT {cast}"))
    assert (got.value.sqlstate, got.value.message) == (want.value.sqlstate, want.value.diag.message_primary)


QUOTIENTS = [
    # a numeric quotient rounds half away from zero, a double half to even
    "SELECT (n / 2.0)::int AS a, (-n / 2)::int AS b, (n / 4 + 0.25)::bigint AS c, (d / 2)::int AS e, "
    "(n * d / 2)::int AS f, (i / 2)::int AS g FROM (VALUES (1::numeric, 1::float8, 1), (-3, 5, -3), (5, -7, 5)) "
    "AS v(n, d, i) ORDER BY n",
    "SELECT avg(n)::int AS a, avg(d)::int AS b, avg(i)::smallint AS c, (avg(n) / 2)::int AS e, "
    "avg(DISTINCT i)::int AS f FROM (VALUES (2::numeric, 2::float8, 2), (3, 3, 3), (3, 3, 3)) AS v(n, d, i)",
]


@pytest.mark.parametrize("query", QUOTIENTS)
def test_quotients_cast_to_integers_round_as_in_postgresql(oracle_dsn: str, query: str):
    session = make_session()
    got = [tuple(r.values()) for r in session.run_batch(session.parse_sql(query)).to_pylist()]
    with psycopg.connect(oracle_dsn, autocommit=True) as pg:
        assert got == pg.execute(query).fetchall()
