"""Binding of date, timestamp and interval expressions, extract / date_part / to_char and string
functions in materialized views: PostgreSQL's result types, the Spark SQL they render, and 0A000
for what is not supported (the values themselves are compared with PostgreSQL by
tests/e2e/test_datetime_functions.py)."""

from __future__ import annotations

import pytest
import sqlglot

from frontend.binder import CatalogReader, bind_stream_select
from frontend.expr import BoundExpr, Literal
from frontend.parser import DIALECT
from frontend.planner.stream import plan_mv
from meta.catalog import CatalogSnapshot
from risingspark.catalog import (
    BackfillType,
    DatabaseCatalog,
    JobStatus,
    RelationCatalog,
    RelationKind,
    SchemaCatalog,
)
from risingspark.errors import FeatureNotSupported, RisingSparkError, UndefinedFunction
from risingspark.interval import Interval
from risingspark.storage.desc import StateTableDesc
from risingspark.types import DataType, Field

COLUMNS = [("id", "int"), ("d", "date"), ("ts", "timestamp"), ("tz", "timestamptz"), ("n", "int"), ("b", "bigint"),
           ("s", "varchar"), ("f", "double precision")]


def catalog() -> CatalogReader:
    fields = tuple(Field(n, DataType.parse(t)) for n, t in COLUMNS)
    rel = RelationCatalog(10, 1, 2, "t", RelationKind.TABLE, fields, (0,), (0,), "CREATE TABLE t", JobStatus.CREATED,
                          state_tables=(StateTableDesc(10, fields, (0,), (0,)),))
    snap = CatalogSnapshot(1, {1: DatabaseCatalog(1, "dev")}, {2: SchemaCatalog(2, 1, "public")}, {10: rel})
    return CatalogReader(snap, "dev", ["public"])


def bind(expr: str) -> BoundExpr:
    query = sqlglot.parse_one(f"SELECT {expr} AS x FROM t", read=DIALECT)
    bound = bind_stream_select(catalog(), query)
    return bound.items[0].expr  # type: ignore[union-attr]


def plan(sql: str) -> None:
    bound = bind_stream_select(catalog(), sqlglot.parse_one(sql, read=DIALECT))
    plan_mv(bound, 100, None, BackfillType.ARRANGEMENT_BACKFILL)


@pytest.mark.parametrize(("expr", "pg_type"), [
    ("d - interval '71' day", "timestamp without time zone"),
    ("date '1994-01-01' + interval '1' year", "timestamp without time zone"),
    ("d + interval '3' month", "timestamp without time zone"),
    ("interval '1 day' + d", "timestamp without time zone"),
    ("ts + INTERVAL '1' HOUR", "timestamp without time zone"),
    ("tz - INTERVAL '10' SECOND", "timestamp with time zone"),
    ("interval '1 day 2 hours'", "interval"),
    ("d + n", "date"), ("n + d", "date"), ("d - 7", "date"), ("d - date '2020-01-01'", "integer"),
    ("ts - ts", "interval"), ("d - ts", "interval"), ("tz - d", "interval"),
    ("(ts - ts) + interval '1 mon'", "interval"), ("-(ts - ts)", "interval"),
    ("d <= date '1998-12-01' - interval '71' day", "boolean"),
    ("ts - ts > interval '1 hour'", "boolean"), ("ts - ts < '1 day'", "boolean"),
    ("extract(year from d)", "numeric"), ("extract(epoch from ts)", "numeric"),
    ("extract(second from ts - ts)", "numeric"), ("date_part('hour', ts)", "double precision"),
    ("date_part('hour', d)", "double precision"),
    ("to_char(ts, 'YYYY-MM-DD')", "character varying"), ("to_char(d, 'HH:mm')", "character varying"),
    ("split_part(s, '/', 4)", "character varying"), ("(regexp_match(s, '(&|^)c=([^&]*)'))[2]", "character varying"),
    ("regexp_match(s, 'a+')", "character varying[]"), ("strpos(s, 'a')", "integer"),
    ("position('a' in s)", "integer"), ("substring(s from 1 for 2)", "character varying"),
])
def test_result_types_are_postgres(expr: str, pg_type: str) -> None:
    assert bind(expr).type.display() == pg_type


def test_constant_intervals_are_parsed_at_bind_time() -> None:
    e = bind("interval '1 day 2 hours'")
    assert isinstance(e, Literal) and e.value == Interval(0, 1, 7_200_000_000)
    assert e.display() == "'1 day 02:00:00':Interval"
    assert "named_struct('months', CAST(0 AS INT), 'days', CAST(1 AS INT), 'usecs', CAST(7200000000 AS BIGINT))" \
        in e.to_spark()


def test_spark_rendering() -> None:
    # months, days, then hours and seconds, added by Spark's calendar-interval addition (NULL on overflow)
    assert bind("ts - interval '1 mon 2 days 03:00:04.5'").to_spark() == \
        "(try_add(`ts`, make_interval(0, -1, 0, -2, -3, 0, CAST(-4.500000 AS DECIMAL(18, 6)))))"
    assert bind("d - date '2020-01-01'").to_spark() == "(datediff(`d`, TRY_CAST('2020-01-01' AS DATE)))"
    diff = bind("ts - d").to_spark()
    assert "unix_micros(CAST(`ts` AS TIMESTAMP))" in diff and "DIV 86400000000" in diff
    # intervals compare by span: a month is 30 days
    assert "* 2592000000000" in bind("ts - ts = interval '30 days'").to_spark()
    assert bind("to_char(ts, 'HH24:MI')").to_spark() == (
        "(IF(`ts` IS NULL, NULL, concat(format_string('%02d', hour(`ts`)), ':', format_string('%02d', minute(`ts`)))))")
    assert bind("date_part('hour', ts)").to_spark() == "CAST(hour(CAST(`ts` AS TIMESTAMP)) AS DOUBLE)"
    assert bind("split_part(s, '/', 4)").to_spark() == "(IF(CAST(4 AS INT) = 0, NULL, split_part(`s`, '/', CAST(4 AS INT))))"
    assert "regexp_extract(`s`, '(&|^)c=([^&]*)', 2)" in bind("(regexp_match(s, '(&|^)c=([^&]*)'))[2]").to_spark()
    assert "IF(2 BETWEEN 1 AND size(" in bind("(regexp_match(s, '(&|^)c=([^&]*)'))[2]").to_spark()
    assert bind("concat(s, NULL)").to_spark().startswith("(concat_ws('', `s`")


@pytest.mark.parametrize(("expr", "error", "words"), [
    ("(ts - ts) * 2", FeatureNotSupported, "interval arithmetic"),
    ("d * 2", UndefinedFunction, "operator does not exist: date * integer"),
    ("d + d", UndefinedFunction, "operator does not exist: date + date"),
    ("ts + ts", UndefinedFunction, "operator does not exist"),
    ("d + b", UndefinedFunction, "date + bigint"),
    ("extract(hour from d)", FeatureNotSupported, 'unit "hour" not supported for type date'),
    ("extract(timezone from tz)", FeatureNotSupported, "timezone"),
    ("to_char(ts, 'HH24 TZ')", FeatureNotSupported, '"TZ"'),
    ("to_char(ts, s)", FeatureNotSupported, "constant template"),
    ("(ts - ts)::varchar", FeatureNotSupported, "interval to character varying"),
    ("(ts - ts) || 'x'", FeatureNotSupported, "interval"),
    ("regexp_match(s, '(a)|(b)')", FeatureNotSupported, "group 1"),
    ("regexp_match(s, 'x(y)?')", FeatureNotSupported, "group 1"),
    ("regexp_match(s, 'a', 'i')", FeatureNotSupported, "flags"),
    ("(regexp_match(s, 'a'))[n]", FeatureNotSupported, "integer constants"),
    ("interval '1' day to second", FeatureNotSupported, "qualifier"),
    ("(ts - ts) IN (interval '1 day')", FeatureNotSupported, "IN over intervals"),
])
def test_unsupported_or_undefined(expr: str, error: type[RisingSparkError], words: str) -> None:
    with pytest.raises(error) as e:
        bind(expr)
    assert words in e.value.message


@pytest.mark.parametrize("sql", [
    "SELECT ts - ts AS x, count(*) AS n FROM t GROUP BY ts - ts",
    "SELECT DISTINCT ts - ts AS x FROM t",
    "SELECT id, ts - ts AS x FROM t ORDER BY x LIMIT 3",
    "SELECT max(ts - ts) AS x FROM t",
])
def test_interval_keys_and_aggregates_are_0a000(sql: str) -> None:
    """A stored interval is (months, days, usecs): equal intervals need not be equal structs."""
    with pytest.raises(FeatureNotSupported, match="interval"):
        plan(sql)


def test_interval_value_columns_plan() -> None:
    plan("SELECT id, ts - ts AS x, extract(epoch from ts - d) AS e FROM t WHERE ts - ts > interval '1 hour'")
    plan("SELECT n, count(ts - ts) AS k FROM t GROUP BY n")


def test_numeric_nan_is_refused_with_0a000() -> None:
    from frontend.values import special_numeric_error

    for text in ("NaN", "nan", " Infinity", "-infinity", "+inf"):
        err = special_numeric_error(text)
        assert err is not None and err.sqlstate == "0A000" and "NaN or Infinity" in err.message
    assert special_numeric_error("1e5") is None and special_numeric_error("nano") is None


@pytest.mark.parametrize("dialect", [DIALECT, "postgres"])
def test_negated_predicates_keep_their_negation(dialect: str) -> None:
    """``x NOT LIKE p`` parses as a Like marked negate, and (in the postgres dialect, which a view's
    stored query is read with) ``x IS NOT NULL`` as an Is marked negate: both must bind negated."""
    def bound(expr: str) -> str:
        query = sqlglot.parse_one(f"SELECT {expr} AS x FROM t", read=dialect)
        return bind_stream_select(catalog(), query).items[0].expr.to_spark()  # type: ignore[union-attr]

    assert bound("s NOT LIKE 'a%'") == "(NOT `s` LIKE 'a%')"
    assert bound("s LIKE 'a%'") == "(`s` LIKE 'a%')"
    assert "NOT" in bound("s NOT ILIKE 'a%'")
    assert bound("s IS NOT NULL") == "(`s` IS NOT NULL)"
    assert bound("NOT (s IS NOT NULL)") == "(NOT (`s` IS NOT NULL))"
    assert bound("s IS NULL") == "(`s` IS NULL)"
