"""User-defined functions as clients list them: ``SHOW FUNCTIONS [FROM schema] [LIKE pattern]``
(RisingWave's columns), and `pg_proc` with ``pg_get_function_result/arguments`` for psql's ``\\df``
(its query as psql 15 sends it, from `shared/reference/clients`). Also ``SHOW TABLES ... LIKE``,
which listed every table before (the pattern was read as a word and ignored)."""

from __future__ import annotations

import asyncio
from dataclasses import replace

import pytest
from catalog_session import HIDDEN, OTHER, PUBLIC, make_session

from risingspark.errors import FeatureNotSupported
from risingspark.functions import FunctionCatalog
from risingspark.types import INT4, VARCHAR, DataType

DB = 1000
COUNT_CHAR = FunctionCatalog(1020, DB, PUBLIC, "count_char", ("s", "c"), (VARCHAR, VARCHAR), INT4, "javascript",
                             "return s.split(c).length - 1;", 1)
GCD = FunctionCatalog(1021, DB, PUBLIC, "gcd", ("$1", "$2"), (INT4, INT4), INT4, "javascript", "return 1;", 1)
SCALE = FunctionCatalog(1022, DB, OTHER, "scale", ("x",), (DataType.parse("double precision"),),
                        DataType.parse("double precision"), "javascript", "return x * 2;", 1)
ELSEWHERE = FunctionCatalog(1023, 2000, 2001, "foreign_fn", (), (), INT4, "javascript", "return 1;", 1)

DF = """SELECT n.nspname as "Schema",
  p.proname as "Name",
  pg_catalog.pg_get_function_result(p.oid) as "Result data type",
  pg_catalog.pg_get_function_arguments(p.oid) as "Argument data types",
 CASE p.prokind
  WHEN 'a' THEN 'agg'
  WHEN 'w' THEN 'window'
  WHEN 'p' THEN 'proc'
  ELSE 'func'
 END as "Type"
FROM pg_catalog.pg_proc p
     LEFT JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
WHERE pg_catalog.pg_function_is_visible(p.oid)
      AND n.nspname <> 'pg_catalog'
      AND n.nspname <> 'information_schema'
ORDER BY 1, 2, 4"""


@pytest.fixture()
def session():
    s = make_session()
    meta = s.frontend.meta
    meta.snapshot = replace(meta.snapshot, functions={f.id: f for f in (COUNT_CHAR, GCD, SCALE, ELSEWHERE)})
    return s


def rows(session, sql: str) -> list[tuple]:
    result = asyncio.run(session.execute(sql, [], []))
    if result.rows is None:
        return []
    data = result.rows if isinstance(result.rows, list) else [tuple(r.values()) for r in result.rows.to_pylist()]
    return [tuple(r) for r in data]


def test_show_functions(session) -> None:
    assert rows(session, "SHOW FUNCTIONS") == [
        ("count_char", "character varying, character varying", "integer", "javascript", None),
        ("gcd", "integer, integer", "integer", "javascript", None)]
    assert rows(session, "SHOW FUNCTIONS FROM other") == [
        ("scale", "double precision", "double precision", "javascript", None)]
    assert rows(session, "SHOW FUNCTIONS LIKE 'count%'") == [
        ("count_char", "character varying, character varying", "integer", "javascript", None)]
    assert rows(session, "SHOW FUNCTIONS LIKE 'g_d'") == [("gcd", "integer, integer", "integer", "javascript", None)]
    assert rows(session, "SHOW FUNCTIONS LIKE 'g\\_d'") == []


def test_psql_df_lists_the_databases_functions(session) -> None:
    # as on PostgreSQL, \\df lists the functions visible on the search path
    assert rows(session, DF) == [
        ("public", "count_char", "integer", "s character varying, c character varying", "func"),
        ("public", "gcd", "integer", "integer, integer", "func")]
    rows(session, "SET search_path = other, public")
    assert rows(session, DF)[0] == ("other", "scale", "double precision", "x double precision", "func")
    assert len(rows(session, DF)) == 3
    assert rows(session, "SELECT proname, prolang, l.lanname, pronargs, prorettype, proargtypes, proargnames, prosrc "
                         "FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang WHERE proname = 'count_char'") == [
        ("count_char", 13600, "javascript", 2, 23, [1043, 1043], ["s", "c"], "return s.split(c).length - 1;")]
    assert rows(session, "SELECT proargnames FROM pg_proc WHERE proname = 'gcd'") == [(None,)]
    assert rows(session, "SELECT pg_get_function_arguments(1010), pg_get_function_result(1023)") == [(None, None)]


def test_show_tables_like(session) -> None:
    assert rows(session, "SHOW TABLES") == [("events",), ("orders",)]
    assert rows(session, "SHOW TABLES LIKE 'ord%'") == [("orders",)]
    assert rows(session, "SHOW TABLES LIKE 'x%'") == []
    assert rows(session, f"SHOW TABLES FROM other LIKE '{HIDDEN.name}'") == [("orders",)]
    assert rows(session, "SHOW MATERIALIZED VIEWS LIKE 'sum%'") == [("summary",)]
    with pytest.raises(FeatureNotSupported, match="SHOW JOBS LIKE"):
        rows(session, "SHOW JOBS LIKE 'x'")
