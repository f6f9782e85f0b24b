"""Batch-query errors carry PostgreSQL's SQLSTATE and wording: each statement runs on PostgreSQL
(127.0.0.1:5432, the oracle) and on DuckDB with the batch engine's settings, whose error goes through
`translate_duckdb_error`."""

from __future__ import annotations

import duckdb
import psycopg
import pytest

from frontend.batch_errors import translate_duckdb_error

PG = "host=127.0.0.1 port=5432 user=postgres dbname=postgres"
CASES = [
    "select 'abc'::int",
    "select 'abc'::bigint",
    "select ' 12x'::smallint",
    "select 'x'::numeric",
    "select 'maybe'::boolean",
    "select 'abc'::float8",
    "select '3000000000'::int",
    "select '99999999999999999999'::bigint",
    "select 2147483647::int + 1",
    "select 9223372036854775807::bigint * 2",
    "select 32767::smallint + 1::smallint",
    "select 40000::smallint",
    "select 1 / 0",
    "select 1.0 / 0",
    "select 5 % 0",
    "select 'abc'::date",
    "select 'abc'::interval",
    "select 1e9::float8::numeric(10, 2)",
    "select 1000000000::bigint::numeric(10, 2)",
    "select 1e9::numeric(11, 1)::numeric(10, 2)",
    "select '1e9'::numeric(10, 2)",
    "select 5::numeric(2, 2)",
    "select '2024-13-01'::date",
    "select (select x from (values (1), (2)) v(x))",
    "select sum(x) from (values (1)) v(x) where sum(x) > 0",
    "select * from (values (1)) v(x) limit -1",
    "select * from generate_series(1, 5, 0)",
    "select 'abc' like 'a\\' escape '\\'",
]
SQLSTATE_ONLY = [  # PostgreSQL words these with what DuckDB does not say (the column's table, the regex's fault)
    "select x from (values (1, 2)) v(x, y) group by y",
    "select regexp_replace('a', '(', 'b')",
]


@pytest.fixture(scope="module")
def pg():
    with psycopg.connect(PG, autocommit=True) as c:
        yield c


@pytest.fixture(scope="module")
def duck():
    con = duckdb.connect()
    con.execute("SET integer_division = true")  # as `frontend.batch.BatchEngine.run`
    yield con
    con.close()


def _both_errors(pg, duck, sql: str):
    """PostgreSQL's error for `sql`, and DuckDB's as `translate_duckdb_error` reports it."""
    with pytest.raises(psycopg.Error) as expected:
        pg.execute(sql)
    with pytest.raises(duckdb.Error) as raised:
        duck.sql(sql).fetchall()
    return expected.value, translate_duckdb_error(raised.value)


@pytest.mark.parametrize("sql", CASES)
def test_errors_as_postgres_reports_them(pg, duck, sql):
    expected, ours = _both_errors(pg, duck, sql)
    assert (ours.sqlstate, str(ours), ours.detail) == \
        (expected.sqlstate, expected.diag.message_primary, expected.diag.message_detail)


@pytest.mark.parametrize("sql", SQLSTATE_ONLY)
def test_errors_have_postgresqls_sqlstate(pg, duck, sql):
    expected, ours = _both_errors(pg, duck, sql)
    assert ours.sqlstate == expected.sqlstate


def test_a_postgresql_function_duckdb_lacks_is_0a000():
    """PostgreSQL has ``justify_hours``; a batch query calling it is a feature
    missing here (0A000), not an unknown function (42883), which a misspelt name still is."""
    from catalog_session import make_session

    from risingspark.errors import FeatureNotSupported, UndefinedFunction

    session = make_session()
    with pytest.raises(FeatureNotSupported, match="justify_hours"):
        session.run_batch(session.parse_sql("SELECT justify_hours(interval '27 hours')"))
    with pytest.raises(UndefinedFunction):
        session.run_batch(session.parse_sql("SELECT no_such_function_here(1)"))
