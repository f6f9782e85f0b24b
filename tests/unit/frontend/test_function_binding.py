"""Binding of a bare NULL beside a typed operand (and of a NULL or a quoted literal cast to a type,
which keeps it), ``trunc``, ``round``'s and ``trunc``'s constant places, ``sqrt``, ``initcap``,
``starts_with``, ``octet_length``, the text signatures of the string functions, the numeric ones of
``round``, ``abs``, ``ceil`` and ``floor``, the ``||`` operator of text and of arrays, and jsonb's
``||``, ``-``, ``#-``, ``?|``, ``?&``, ``=`` and ``<>`` in materialized views: PostgreSQL's result types and errors, and the Spark SQL they render (the values
are compared with PostgreSQL's by tests/e2e/test_mv_functions.py)."""

from __future__ import annotations

from typing import cast

import pytest
import sqlglot
from sqlglot import exp

from frontend.binder import CatalogReader, bind_stream_select
from frontend.expr import BoundExpr
from frontend.parser import DIALECT
from meta.catalog import CatalogSnapshot
from risingspark.catalog import DatabaseCatalog, JobStatus, RelationCatalog, RelationKind, SchemaCatalog
from risingspark.errors import (
    AmbiguousFunction,
    DatatypeMismatch,
    DivisionByZero,
    FeatureNotSupported,
    InvalidTextRepresentation,
    NumericValueOutOfRange,
    RisingSparkError,
    UndefinedFunction,
)
from risingspark.storage.desc import StateTableDesc
from risingspark.types import DataType, Field

COLUMNS = [("id", "int"), ("k", "int"), ("sk", "smallint"), ("bk", "bigint"), ("n", "numeric"),
           ("nc", "numeric(10,2)"), ("d", "double precision"), ("r", "real"), ("s", "varchar"), ("b", "boolean"),
           ("ts", "timestamp"), ("dt", "date"), ("j", "jsonb"), ("st", "struct<a int, b varchar>"),
           ("arr", "integer[]")]


def bind(expr: str, dialect: str = DIALECT) -> BoundExpr:
    fields = tuple(Field(n, DataType.parse(t)) for n, t in COLUMNS)
    rel = RelationCatalog(10, 1, 2, "t", RelationKind.TABLE, fields, (0,), (0,), "CREATE TABLE t", JobStatus.CREATED,
                          state_tables=(StateTableDesc(10, fields, (0,), (0,)),))
    snap = CatalogSnapshot(1, {1: DatabaseCatalog(1, "dev")}, {2: SchemaCatalog(2, 1, "public")}, {10: rel})
    query = cast(exp.Expression, sqlglot.parse_one(f"SELECT {expr} AS x FROM t", read=dialect))
    return bind_stream_select(CatalogReader(snap, "dev", ["public"]), query).items[0].expr  # type: ignore[union-attr]


@pytest.mark.parametrize("column", [c for c, _ in COLUMNS])
@pytest.mark.parametrize("test", ["IS DISTINCT FROM", "IS NOT DISTINCT FROM"])
def test_a_bare_null_takes_the_other_sides_type(column: str, test: str) -> None:
    for expr in (f"{column} {test} NULL", f"NULL {test} {column}"):
        e = bind(expr)
        assert e.type.display() == "boolean"
        null = f"CAST(NULL AS {DataType.parse(dict(COLUMNS)[column]).to_spark()})"
        assert null in e.to_spark(), expr


@pytest.mark.parametrize(("expr", "spark"), [
    ("k IS NOT DISTINCT FROM NULL", "(`k` <=> CAST(NULL AS INT))"),
    ("NULL IS DISTINCT FROM d", "(NOT (CAST(NULL AS DOUBLE) <=> `d`))"),
    ("NULL IS DISTINCT FROM NULL", "(NOT (CAST(NULL AS STRING) <=> CAST(NULL AS STRING)))"),
    ("k = NULL", "(`k` = CAST(NULL AS INT))"),
    ("n + NULL", "try_add(`n`, CAST(NULL AS DECIMAL(38,10)))"),
])
def test_null_operands_render(expr: str, spark: str) -> None:
    assert bind(expr).to_spark() == spark


def test_a_typed_operand_still_needs_a_common_type() -> None:
    with pytest.raises(UndefinedFunction, match="integer = character varying"):
        bind("k = s")
    with pytest.raises(FeatureNotSupported, match="jsonb"):
        bind("j < '{}'")  # (the order of jsonb values stays unsupported)


@pytest.mark.parametrize(("expr", "pg_type"), [
    ("trunc(n)", "numeric"), ("trunc(nc)", "numeric"), ("trunc(d)", "double precision"),
    ("trunc(r)", "double precision"), ("trunc(k)", "double precision"), ("trunc(bk)", "double precision"),
    ("trunc(n, 2)", "numeric"), ("trunc(nc, -1)", "numeric"), ("trunc(k, 1)", "numeric"), ("trunc(n, sk)", None),
    ("trunc(2.5)", "numeric"), ("trunc('2.57', '1')", "numeric"), ("trunc(n, NULL)", "numeric"),
    ("sqrt(n)", "numeric"), ("sqrt(nc)", "numeric"), ("sqrt(d)", "double precision"), ("sqrt(r)", "double precision"),
    ("sqrt(k)", "double precision"), ("sqrt('4')", "double precision"), ("sqrt(NULL)", "double precision"),
    ("initcap(s)", "character varying"), ("initcap('ab')", "character varying"), ("initcap(NULL)", "character varying"),
    ("starts_with(s, 'a')", "boolean"), ("starts_with('abc', s)", "boolean"),
    ("octet_length(s)", "integer"), ("octet_length('straße')", "integer"),
])
def test_result_types_are_postgresqls(expr: str, pg_type: str | None) -> None:
    if pg_type is None:  # a column as trunc's places: Spark needs a constant
        with pytest.raises(FeatureNotSupported, match="constant n"):
            bind(expr)
        return
    assert bind(expr).type.display() == pg_type


@pytest.mark.parametrize(("expr", "error", "words"), [
    ("trunc(d, 2)", UndefinedFunction, "function trunc(double precision, integer) does not exist"),
    ("trunc(n, bk)", UndefinedFunction, "function trunc(numeric, bigint) does not exist"),
    ("trunc(n, 1.5)", UndefinedFunction, "function trunc(numeric, numeric) does not exist"),
    ("trunc(s)", UndefinedFunction, "function trunc(character varying) does not exist"),
    ("trunc('1.5')", AmbiguousFunction, "function trunc(unknown) is not unique"),
    ("trunc(NULL)", AmbiguousFunction, "function trunc(unknown) is not unique"),
    ("trunc(n, 'x')", InvalidTextRepresentation, 'invalid input syntax for type integer: "x"'),
    ("trunc(n, k)", FeatureNotSupported, "constant n"),
    ("truncate(d)", UndefinedFunction, "function truncate(double precision) does not exist"),
    ("sqrt(s)", UndefinedFunction, "function sqrt(character varying) does not exist"),
    ("sqrt(ts)", UndefinedFunction, "function sqrt(timestamp without time zone) does not exist"),
    ("initcap(k)", UndefinedFunction, "function initcap(integer) does not exist"),
    ("initcap(s, 'x')", UndefinedFunction, "function initcap(character varying, unknown) does not exist"),
    ("starts_with(s, k)", UndefinedFunction, "function starts_with(character varying, integer) does not exist"),
    ("startswith(s, 'a')", UndefinedFunction, "function startswith(character varying, unknown) does not exist"),
    ("octet_length(k)", UndefinedFunction, "function octet_length(integer) does not exist"),
    ("octet_length(s, s)", UndefinedFunction, "octet_length(character varying, character varying) does not exist"),
])
def test_errors_are_postgresqls(expr: str, error: type[RisingSparkError], words: str) -> None:
    with pytest.raises(error) as e:
        bind(expr)
    assert words in e.value.message


def test_spark_rendering() -> None:
    # toward zero at a constant place; a double keeps its sign and its infinities
    assert bind("trunc(n, -1)").to_spark() == "(IF(`n` < 0, ceil(`n`, -1), floor(`n`, -1)))"
    assert bind("trunc(n, 99)").to_spark() == "(IF(`n` < 0, ceil(`n`, 38), floor(`n`, 38)))"
    assert bind("trunc(d)").to_spark() == \
        "(IF(abs(`d`) < 4503599627370496D, IF(abs(`d`) < 1D, `d` * 0D, `d` - `d` % 1D), `d`))"
    # NULL where PostgreSQL fails: sqrt of a negative number
    assert bind("sqrt(d)").to_spark() == "(IF(`d` < 0, NULL, sqrt(`d`)))"
    assert bind("sqrt(n)").to_spark() == "(IF(`n` < 0, NULL, CAST(sqrt(CAST(`n` AS DOUBLE)) AS DECIMAL(38,10))))"
    assert bind("starts_with(s, 'a')").to_spark() == "(startswith(`s`, 'a'))"
    assert bind("octet_length(s)").to_spark() == "(octet_length(`s`))"
    initcap = bind("initcap(s)").to_spark()
    assert initcap.startswith("(array_join(zip_with(regexp_extract_all(`s`, '(?s).', 0), ")  # (NULL for NULL)
    assert "p RLIKE '[\\\\p{IsAlphabetic}\\\\p{Nd}]'" in initcap


@pytest.mark.parametrize("expr", ["initcap(s)", "starts_with(s, 'a')", "trunc(n, 2)", "trunc(d)", "sqrt(n)",
                                  "octet_length(s)", "k IS NOT DISTINCT FROM NULL"])
def test_a_views_stored_query_binds_the_same(expr: str) -> None:
    """A view's query is stored as sqlglot's PostgreSQL text and read back with that dialect."""
    stored = sqlglot.parse_one(f"SELECT {expr} FROM t", read=DIALECT).expressions[0].sql(dialect="postgres")
    assert bind(stored, "postgres") == bind(expr)


def test_round_to_a_column_of_places_fails_at_create() -> None:
    # Spark's scale must be a constant: with a column, every epoch round failed its analysis (and the
    # cluster recovered over and over); a constant, cast or not, binds
    with pytest.raises(FeatureNotSupported, match="constant n"):
        bind("round(n, k)")
    assert bind("round(n, 2)").to_spark() == "round(`n`, CAST(2 AS INT))"
    assert bind("round(k, 2::smallint)").type.display() == bind("round(n, 1 + 1)").type.display() == "numeric"


@pytest.mark.parametrize(("expr", "words"), [
    ("k = NULL::text", "operator does not exist: integer = character varying"),
    ("k = CAST(NULL AS text)", "operator does not exist: integer = character varying"),
    ("k IS DISTINCT FROM NULL::varchar", "operator does not exist: integer = character varying"),
    ("NULL::text IS NOT DISTINCT FROM n", "operator does not exist: character varying = numeric"),
    ("k IN (1, NULL::text)", "operator does not exist: integer = character varying"),
    ("d < NULL::varchar(3)", "operator does not exist: double precision < character varying"),
    ("ts = NULL::text", "operator does not exist: timestamp without time zone = character varying"),
])
def test_a_null_cast_to_text_keeps_its_type(expr: str, words: str) -> None:
    # (PostgreSQL: 42883, operator does not exist: integer = text; text is varchar here)
    with pytest.raises(UndefinedFunction) as e:
        bind(expr)
    assert e.value.message == words


@pytest.mark.parametrize(("expr", "pg_type"), [
    ("NULL::text", "character varying"), ("CAST(NULL AS varchar)", "character varying"),
    ("COALESCE(s, NULL::text)", "character varying"), ("COALESCE(NULL::text, 'a')", "character varying"),
    ("CASE WHEN b THEN s ELSE NULL::text END", "character varying"),
    ("CASE WHEN b THEN 'a' ELSE NULL::varchar END", "character varying"),
    ("CASE WHEN b THEN NULL ELSE NULL::text END", "character varying"),
    ("s = NULL::text", "boolean"), ("s IS DISTINCT FROM NULL::varchar", "boolean"), ("NULL::text IS NULL", "boolean"),
    ("lower(NULL::text)", "character varying"), ("k = NULL::int", "boolean"), ("k = NULL", "boolean"),
])
def test_a_null_cast_to_text_binds_where_postgresql_takes_text(expr: str, pg_type: str) -> None:
    assert bind(expr).type.display() == pg_type


@pytest.mark.parametrize("expr", ["CASE WHEN b THEN k ELSE NULL::text END", "COALESCE(k, NULL::text)"])
def test_a_null_cast_to_text_does_not_meet_a_number(expr: str) -> None:
    with pytest.raises(DatatypeMismatch, match="integer and character varying cannot be matched"):
        bind(expr)


@pytest.mark.parametrize("places", ["2", "2::smallint", "1 + 1", "(1 + 1)::smallint", "'2'", "' 2 '", "'2'::int",
                                    "5 / 2", "-(-2)", "7 % 5", "2.4::int", "1.5::int + 0", "2.5e0::int",
                                    "(5000000000 / 2500000000)::int"])
def test_round_and_trunc_take_the_same_constant_places(places: str) -> None:
    # (a constant folded to its value: trunc writes it into its rendering, Spark's round needs a constant)
    assert bind(f"trunc(n, {places})").to_spark() == "(IF(`n` < 0, ceil(`n`, 2), floor(`n`, 2)))"
    assert bind(f"round(n, {places})").to_spark() == "round(`n`, CAST(2 AS INT))"


@pytest.mark.parametrize("places", ["NULL", "NULL::int", "1 + NULL"])
def test_null_places_give_null(places: str) -> None:
    for name in ("round", "trunc"):
        e = bind(f"{name}(n, {places})")
        assert (e.type.display(), e.to_spark()) == ("numeric", "CAST(NULL AS DECIMAL(38,10))")


@pytest.mark.parametrize("name", ["round", "trunc"])
@pytest.mark.parametrize(("places", "error", "words"), [
    ("k", FeatureNotSupported, "(x, n) in a materialized view needs a constant n"),
    ("k + 1", FeatureNotSupported, "(x, n) in a materialized view needs a constant n"),
    ("sk * 2::smallint", FeatureNotSupported, "(x, n) in a materialized view needs a constant n"),
    ("abs(-2)", FeatureNotSupported, "(x, n) in a materialized view needs a constant n"),
    ("2::bigint", UndefinedFunction, "(numeric, bigint) does not exist"),
    ("1.5", UndefinedFunction, "(numeric, numeric) does not exist"),
    ("2e0", UndefinedFunction, "(numeric, double precision) does not exist"),
    ("s", UndefinedFunction, "(numeric, character varying) does not exist"),
    ("'x'", InvalidTextRepresentation, 'invalid input syntax for type integer: "x"'),
    ("'2.5'::int", InvalidTextRepresentation, 'invalid input syntax for type integer: "2.5"'),
    ("2147483647 + 1", NumericValueOutOfRange, "integer out of range"),
    ("32767::smallint + 1::smallint", NumericValueOutOfRange, "smallint out of range"),
    ("1 / 0", DivisionByZero, "division by zero"),
    ("1 % 0", DivisionByZero, "division by zero"),
])
def test_places_errors_are_postgresqls(name: str, places: str, error: type[RisingSparkError], words: str) -> None:
    with pytest.raises(error) as e:
        bind(f"{name}(n, {places})")
    assert words in e.value.message


@pytest.mark.parametrize(("expr", "words"), [
    ("lower(5)", "lower(integer)"), ("upper(k)", "upper(integer)"), ("lower(n)", "lower(numeric)"),
    ("upper(b)", "upper(boolean)"), ("lower(ts)", "lower(timestamp without time zone)"),
    ("lower(NULL::int)", "lower(integer)"), ("length(123)", "length(integer)"),
    ("char_length(k)", "char_length(integer)"), ("character_length(d)", "character_length(double precision)"),
    ("length(s, s)", "length(character varying, character varying)"),
    ("trim(k)", "pg_catalog.btrim(integer)"), ("trim(both 'x' from k)", "pg_catalog.btrim(integer, unknown)"),
    ("trim(leading k from s)", "pg_catalog.ltrim(character varying, integer)"),
    ("btrim(s, k)", "btrim(character varying, integer)"), ("ltrim(k)", "ltrim(integer)"),
    ("substring(k from 2)", "substring(integer, integer)"), ("substr(k, 2)", "substr(integer, integer)"),
    ("substr(s, 2::bigint)", "substr(character varying, bigint)"),
    ("substring(s, 1, 1.5)", "substring(character varying, integer, numeric)"),
    ("replace(k, '5', 'x')", "replace(integer, unknown, unknown)"), ("left(k, 2)", "left(integer, integer)"),
    ("right(s, bk)", "right(character varying, bigint)"), ("lpad(k, 3)", "lpad(integer, integer)"),
    ("rpad(s, 3, 0)", "rpad(character varying, integer, integer)"), ("repeat(k, 2)", "repeat(integer, integer)"),
    ("repeat(s, 2::bigint)", "repeat(character varying, bigint)"), ("reverse(k)", "reverse(integer)"),
    ("md5(k)", "md5(integer)"), ("strpos(k, '3')", "strpos(integer, unknown)"),
    ("position('3' in k)", "pg_catalog.position(integer, unknown)"),
    ("split_part(k, '3', 1)", "split_part(integer, unknown, integer)"),
    ("split_part(s, ',', bk)", "split_part(character varying, unknown, bigint)"),
    ("regexp_match(k, '3')", "regexp_match(integer, unknown)"),
])
def test_string_functions_take_text_as_postgresql(expr: str, words: str) -> None:
    with pytest.raises(UndefinedFunction) as e:
        bind(expr)
    assert e.value.message == f"function {words} does not exist"
    assert e.value.hint is not None and e.value.hint.startswith("No function matches the given name and argument")


@pytest.mark.parametrize(("expr", "pg_type"), [
    ("lower('AbC')", "character varying"), ("upper(NULL)", "character varying"), ("length('abc')", "integer"),
    ("length(NULL)", "integer"), ("char_length(s)", "integer"), ("upper(k::varchar)", "character varying"),
    ("length(k::text)", "integer"), ("left(s, sk)", "character varying"), ("left(s, NULL)", "character varying"),
    ("substr(s, '2')", "character varying"), ("substring(s from 2 for k)", "character varying"),
    ("lpad(s, 3, NULL)", "character varying"), ("trim(both NULL from s)", "character varying"),
    ("btrim(s, 'x')", "character varying"), ("repeat('ab', 2::smallint)", "character varying"),
    ("split_part(s, ',', -1)", "character varying"), ("strpos(s, NULL)", "integer"),
    ("concat(k, b, n)", "character varying"),  # (concat takes any value)
])
def test_string_functions_take_what_postgresql_takes(expr: str, pg_type: str) -> None:
    assert bind(expr).type.display() == pg_type


@pytest.mark.parametrize(("expr", "pg_type"), [
    ("arr || arr", "integer[]"), ("arr || 1", "integer[]"), ("1 || arr", "integer[]"), ("sk || arr", "integer[]"),
    ("arr || bk", "bigint[]"), ("arr || 1.5", "numeric[]"), ("arr || nc", "numeric[]"), ("arr || r", "real[]"),
    ("arr || d", "double precision[]"), ("arr || NULL::int", "integer[]"), ("arr || NULL", "integer[]"),
    ("NULL || arr", "integer[]"), ("arr || arr || 3", "integer[]"),
    ("regexp_match(s, '(a)') || s", "character varying[]"), ("s || regexp_match(s, '(a)')", "character varying[]"),
    ("regexp_match(s, '(a)') || regexp_match(s, '(b)')", "character varying[]"),
])
def test_concat_operator_of_arrays_is_postgresqls(expr: str, pg_type: str) -> None:
    # (PostgreSQL: array_cat, array_append, array_prepend; elements meet in their common type)
    assert bind(expr).type.display() == pg_type


def test_concat_operator_of_arrays_renders() -> None:
    # a NULL array is none (array_cat of two NULL arrays is NULL); Spark's concat would be NULL
    assert bind("arr || arr").to_spark() == "(coalesce(concat(`arr`, `arr`), `arr`, `arr`))"
    assert bind("arr || 1").to_spark() == "(concat(coalesce(`arr`, array()), array(CAST(1 AS INT))))"
    assert bind("1 || arr").to_spark() == "(concat(array(CAST(1 AS INT)), coalesce(`arr`, array())))"
    assert bind("arr || bk").to_spark() == "(concat(coalesce(TRY_CAST(`arr` AS ARRAY<BIGINT>), array()), array(`bk`)))"
    assert bind("arr || NULL") == bind("NULL || arr") == bind("arr")  # (array_cat skips a NULL array)


@pytest.mark.parametrize(("expr", "error", "words"), [
    ("k || k", UndefinedFunction, "operator does not exist: integer || integer"),
    ("k || 5", UndefinedFunction, "operator does not exist: integer || integer"),
    ("b || b", UndefinedFunction, "operator does not exist: boolean || boolean"),
    ("ts || dt", UndefinedFunction, "operator does not exist: timestamp without time zone || date"),
    ("j || k", UndefinedFunction, "operator does not exist: jsonb || integer"),
    ("arr || s", UndefinedFunction, "operator does not exist: integer[] || character varying"),
    ("s || arr", UndefinedFunction, "operator does not exist: character varying || integer[]"),
    ("arr || b", UndefinedFunction, "operator does not exist: integer[] || boolean"),
    ("arr || regexp_match(s, '(a)')", UndefinedFunction,
     "operator does not exist: integer[] || character varying[]"),
    ("arr || '{1}'", FeatureNotSupported, "an array written as text ('{1}')"),
    ("j - bk", UndefinedFunction, "operator does not exist: jsonb - bigint"),
    ("j - d", UndefinedFunction, "operator does not exist: jsonb - double precision"),
    ("j ?| k", UndefinedFunction, "operator does not exist: jsonb ?| integer"),
    ("j ?| 'x'", InvalidTextRepresentation, 'malformed array literal: "x"'),
])
def test_concat_operator_errors_are_postgresqls(expr: str, error: type[RisingSparkError], words: str) -> None:
    with pytest.raises(error) as e:
        bind(expr)
    assert e.value.message.startswith(words)


@pytest.mark.parametrize(("expr", "spark", "pg_type"), [
    # (PostgreSQL's jsonb_concat, jsonb_delete and jsonb_delete_path, jsonb_exists_any/_all: the UDFs of
    # risingspark.jsonb; an unknown literal is a jsonb beside ||, a text beside -, a text[] beside ?| and #-)
    ("j || j", "(rs_jsonb_concat(`j`, `j`))", "jsonb"),
    ("j || '{\"b\": 1, \"a\":2}'", "(rs_jsonb_concat(`j`, '{\"a\": 2, \"b\": 1}'))", "jsonb"),
    ("NULL || j", "(rs_jsonb_concat(CAST(NULL AS STRING), `j`))", "jsonb"),
    ("j - 'a'", "(rs_jsonb_delete_key(`j`, 'a'))", "jsonb"),
    ("j - s", "(rs_jsonb_delete_key(`j`, `s`))", "jsonb"),
    ("j - k", "(rs_jsonb_delete_index(`j`, `k`))", "jsonb"),
    ("j - sk", "(rs_jsonb_delete_index(`j`, TRY_CAST(`sk` AS INT)))", "jsonb"),
    ("j #- '{a,0}'", "(rs_jsonb_delete_path(`j`, '{a,0}'))", "jsonb"),
    ("j ?| '{a,\"b c\",NULL}'",
     "(rs_jsonb_exists_any(`j`, (CAST(array('a', 'b c', CAST(NULL AS STRING)) AS ARRAY<STRING>))))", "boolean"),
    ("j ?& '{}'", "(rs_jsonb_exists_all(`j`, (CAST(array() AS ARRAY<STRING>))))", "boolean"),
    # (jsonb equality: 1.0 = 1, keys in any order; the literal is a canonical jsonb)
    ("j = '{\"b\":1, \"a\":1.0}'", "(rs_jsonb_equal(`j`, '{\"a\": 1.0, \"b\": 1}'))", "boolean"),
    ("j <> j", "((NOT (rs_jsonb_equal(`j`, `j`))))", "boolean"),
])
def test_jsonb_operators_that_make_values_bind_to_their_udfs(expr: str, spark: str, pg_type: str) -> None:
    e = bind(expr)
    assert (e.type.display(), e.to_spark()) == (pg_type, spark)


@pytest.mark.parametrize(("expr", "spark"), [
    ("'a' || 1", "concat('a', TRY_CAST(CAST(1 AS INT) AS STRING))"),  # (anynonarray || text: 'a1')
    ("s || k", "concat(`s`, TRY_CAST(`k` AS STRING))"), ("k || s", "concat(TRY_CAST(`k` AS STRING), `s`)"),
    ("k || NULL", "concat(TRY_CAST(`k` AS STRING), CAST(NULL AS STRING))"),
    ("NULL || NULL", "concat(CAST(NULL AS STRING), CAST(NULL AS STRING))"),
    ("s || b", "concat(`s`, TRY_CAST(`b` AS STRING))"),  # (a boolean's cast to text: 'true')
    ("'a' || 'b'", "concat('a', 'b')"),
])
def test_concat_operator_of_text_takes_any_other_value(expr: str, spark: str) -> None:
    e = bind(expr)
    assert (e.type.display(), e.to_spark()) == ("character varying", spark)


@pytest.mark.parametrize(("expr", "words"), [
    ("round(d, 2)", "round(double precision, integer)"), ("round(r, 2)", "round(real, integer)"),
    ("round(d, k)", "round(double precision, integer)"), ("round(d, NULL)", "round(double precision, unknown)"),
    ("round(d, 2::smallint)", "round(double precision, smallint)"), ("round(s, 2)", "round(character varying, integer)"),
    ("round(s)", "round(character varying)"), ("round(b)", "round(boolean)"),
    ("abs(s)", "abs(character varying)"), ("abs(b)", "abs(boolean)"), ("abs(ts)", "abs(timestamp without time zone)"),
    ("ceil(s)", "ceil(character varying)"), ("ceiling(s)", "ceiling(character varying)"),
    ("floor(s)", "floor(character varying)"), ("floor(b)", "floor(boolean)"),
    ("ceil(d, 1)", "ceil(double precision, integer)"),
])
def test_numeric_functions_take_numbers_as_postgresql(expr: str, words: str) -> None:
    with pytest.raises(UndefinedFunction) as e:
        bind(expr)
    assert e.value.message == f"function {words} does not exist"


@pytest.mark.parametrize(("expr", "pg_type"), [
    ("abs('5')", "double precision"), ("abs(NULL)", "double precision"), ("abs(sk)", "smallint"),
    ("abs(bk)", "bigint"), ("abs(r)", "real"), ("abs(n)", "numeric"),
    ("ceil('5')", "double precision"), ("floor(NULL)", "double precision"), ("ceil(k)", "double precision"),
    ("ceiling(r)", "double precision"), ("floor(d)", "double precision"), ("floor(n)", "numeric"),
    ("round('2.5')", "double precision"), ("round(NULL)", "double precision"), ("round(k)", "double precision"),
    ("round(r)", "double precision"), ("round(n)", "numeric"), ("round(k, 1)", "numeric"),
    ("round(bk, 1)", "numeric"), ("round('1.55', 1)", "numeric"), ("round(NULL, 1)", "numeric"),
])
def test_numeric_functions_types_are_postgresqls(expr: str, pg_type: str) -> None:
    assert bind(expr).type.display() == pg_type


def test_ceil_floor_and_abs_render_postgresqls_values() -> None:
    # a double's ceil or floor stays a double (Spark's is a bigint), with PostgreSQL's signed zero
    assert bind("ceil(d)").to_spark() == \
        "(IF(abs(`d`) < 4503599627370496D, IF(ceil(`d`) = 0, `d` * 0D, CAST(ceil(`d`) AS DOUBLE)), `d`))"
    assert bind("floor(k)").to_spark() == ("(IF(abs(TRY_CAST(`k` AS DOUBLE)) < 4503599627370496D, IF(floor(TRY_CAST("
                                           "`k` AS DOUBLE)) = 0, TRY_CAST(`k` AS DOUBLE) * 0D, CAST(floor(TRY_CAST(`k` "
                                           "AS DOUBLE)) AS DOUBLE)), TRY_CAST(`k` AS DOUBLE)))")
    assert bind("floor(n)").to_spark() == "floor(`n`)"
    # the smallest integer has no absolute value in its type: NULL (an error in PostgreSQL)
    assert bind("abs(sk)").to_spark() == "(IF(`sk` = CAST(-32768 AS SMALLINT), NULL, abs(`sk`)))"
    assert bind("abs(d)").to_spark() == "abs(`d`)"
    assert bind("round(k)").to_spark() == "rint(TRY_CAST(`k` AS DOUBLE))"


@pytest.mark.parametrize(("expr", "error", "words"), [
    ("k = 'abc'::text", UndefinedFunction, "operator does not exist: integer = character varying"),
    ("k = CAST('1' AS varchar)", UndefinedFunction, "operator does not exist: integer = character varying"),
    ("'1'::text < n", UndefinedFunction, "operator does not exist: character varying < numeric"),
    ("k IN (1, '1'::text)", UndefinedFunction, "operator does not exist: integer = character varying"),
    ("ts > '2024-01-01'::text", UndefinedFunction,
     "operator does not exist: timestamp without time zone > character varying"),
    ("COALESCE(k, '1'::text)", DatatypeMismatch, "types integer and character varying cannot be matched"),
    ("abs('5'::text)", UndefinedFunction, "function abs(character varying) does not exist"),
])
def test_a_literal_cast_to_text_is_typed_text(expr: str, error: type[RisingSparkError], words: str) -> None:
    with pytest.raises(error) as e:
        bind(expr)
    assert e.value.message == words


def test_a_literal_cast_to_text_is_a_constant_still() -> None:
    # where text is taken, and where a constant is needed: a pattern, places, an interval's text
    assert bind("s = 'abc'::text").type.display() == "boolean"
    assert bind("'abc'::varchar || k").type.display() == "character varying"
    assert bind("regexp_match(s, '(a)b'::text)").to_spark() == bind("regexp_match(s, '(a)b')").to_spark()
    assert bind("round(n, '2'::text::int)").to_spark() == "round(`n`, CAST(2 AS INT))"
    assert bind("ts + '1 day'::text::interval") == bind("ts + '1 day'::interval")


@pytest.mark.parametrize(("expr", "same_as", "group"), [
    ("substring(s, 'a(b)')", "regexp_match(s, 'a(b)')", 1), ("substring(s FROM '[0-9]+')", "regexp_match(s, '[0-9]+')", 0),
    ("substring(s, 'x'::text)", "regexp_match(s, 'x')", 0),
])
def test_substring_of_a_pattern_is_the_first_element_of_its_match(expr: str, same_as: str, group: int) -> None:
    # (PostgreSQL resolves a quoted literal there to text: substring(text, text), a POSIX regular
    # expression; the part matched, or the first group's, NULL without a match: regexp_match's first
    # element, that one group extracted)
    e, match = bind(expr), bind(same_as)
    assert e.type.display() == "character varying"
    s, pattern = (a.to_spark() for a in match.args)  # type: ignore[attr-defined]
    assert match.to_spark() == f"(IF({s} RLIKE {pattern}, array(regexp_extract({s}, {pattern}, {group})), NULL))"
    assert e.to_spark() == f"(IF({s} RLIKE {pattern}, regexp_extract({s}, {pattern}, {group}), NULL))"


@pytest.mark.parametrize(("expr", "spark_start"), [
    ("substring(s, 2)", "CAST(2 AS INT)"), ("substring(s, '2', 3)", "TRY_CAST('2' AS INT)"),
    ("substr(s, '2')", "TRY_CAST('2' AS INT)"), ("substring(s, k)", "`k`"), ("substring(s FROM 2 FOR k)", "CAST(2 AS INT)"),
])
def test_substring_of_positions_stays_positions(expr: str, spark_start: str) -> None:
    # (an integer beside it, or substr, which has no pattern form)
    assert f"greatest({spark_start}, 1)" in bind(expr).to_spark()


@pytest.mark.parametrize("expr", ["substring(s, '2', '3')", "substring(s, 'a', '#')", "substring(s, s)",
                                  "substring(s, 'a', s)"])
def test_substring_of_a_sql_pattern_or_a_column_pattern_is_not_supported(expr: str) -> None:
    with pytest.raises(FeatureNotSupported, match="substring"):
        bind(expr)


@pytest.mark.parametrize(("expr", "name"), [
    ("regexp_replace(s, 'a', 'b')", "regexp_replace"), ("to_timestamp(s, 'YYYY')", "to_timestamp"),
    ("format('%s', s)", "format"), ("sha256(s)", "sha256"), ("array_length(arr, 1)", "array_length"),
    ("chr(65)", "chr"),
])
def test_postgresqls_functions_a_view_does_not_run_are_not_supported(expr: str, name: str) -> None:
    # (PostgreSQL has them: 0A000 naming the function as written, not 42883 with sqlglot's name)
    with pytest.raises(FeatureNotSupported) as e:
        bind(expr)
    assert e.value.message == f"function {name}() in a materialized view is not supported yet"


def test_a_function_postgresql_lacks_does_not_exist() -> None:
    with pytest.raises(UndefinedFunction) as e:
        bind("no_such_fn(s, 'a', NULL)")
    assert e.value.message == "function no_such_fn(character varying, unknown, unknown) does not exist"


@pytest.mark.parametrize(("expr", "udf"), [("d::text", "rs_float8_text(`d`)"), ("r::varchar", "rs_float4_text(`r`)"),
                                           ("s || d", "rs_float8_text(`d`)"), ("concat(s, r)", "rs_float4_text(`r`)")])
def test_a_double_or_a_real_as_text_is_laid_out_as_postgresql(expr: str, udf: str) -> None:
    # (Spark's text of a double is Java's: `2.0`, `1.0E20`; the values: tests/e2e/test_mv_functions.py)
    assert udf in bind(expr).to_spark()


@pytest.mark.parametrize(("expr", "error", "words"), [
    ("k + 'x'", InvalidTextRepresentation, 'invalid input syntax for type integer: "x"'),
    ("k = ''", InvalidTextRepresentation, 'invalid input syntax for type integer: ""'),
    ("k IN (1, '2.5')", InvalidTextRepresentation, 'invalid input syntax for type integer: "2.5"'),
    ("k + '99999999999'", NumericValueOutOfRange, 'value "99999999999" is out of range for type integer'),
    ("abs('x')", InvalidTextRepresentation, 'invalid input syntax for type double precision: "x"'),
    ("n + 'x'", InvalidTextRepresentation, 'invalid input syntax for type numeric: "x"'),
    ("r + 'x'", InvalidTextRepresentation, 'invalid input syntax for type real: "x"'),
    ("d + '1e400'", NumericValueOutOfRange, '"1e400" is out of range for type double precision'),
    ("d + '1e-400'", NumericValueOutOfRange, '"1e-400" is out of range for type double precision'),
    ("r + '1e39'", NumericValueOutOfRange, '"1e39" is out of range for type real'),
])
def test_a_quoted_literal_that_is_no_number_fails_create(expr: str, error: type[RisingSparkError], words: str) -> None:
    # (PostgreSQL reads it while binding the query; Spark's cast would have made every value NULL)
    with pytest.raises(error) as e:
        bind(expr)
    assert e.value.message == words


@pytest.mark.parametrize("expr", ["k + ' 3 '", "k = '-7'", "n + '1.5e3'", "d + ' inf '", "d + '-Infinity'", "d + '-NaN'",
                                  "r + '1e-40'", "bk + '9223372036854775807'", "abs('-5')", "d + '.5'",
                                  "sk IN (1, '40000')", "k IN (1.5, '2.5')", "k IN ('1.5', 1.5)", "'12'::int"])
def test_a_quoted_literal_that_is_a_number_binds(expr: str) -> None:
    # (an IN list has one type over its operand and every item, as PostgreSQL's: `sk IN (1, '40000')`
    # compares integers)
    bind(expr)


@pytest.mark.parametrize(("expr", "error", "words"), [
    ("'x'::int", InvalidTextRepresentation, 'invalid input syntax for type integer: "x"'),
    ("'1.5'::int", InvalidTextRepresentation, 'invalid input syntax for type integer: "1.5"'),
    ("'40000'::smallint", NumericValueOutOfRange, 'value "40000" is out of range for type smallint'),
    ("k + '١٢'", InvalidTextRepresentation, 'invalid input syntax for type integer: "١٢"'),  # (ASCII digits only)
    ("k IN (1, 'x')", InvalidTextRepresentation, 'invalid input syntax for type integer: "x"'),
    ("n + 'NaN'", FeatureNotSupported, "numeric 'NaN' in a materialized view is not supported"),
    ("n + '-inf'", FeatureNotSupported, "numeric '-inf' in a materialized view is not supported"),
])
def test_a_literal_cast_or_taken_as_a_number_is_read_as_postgresql_reads_it(expr: str, error: type[RisingSparkError],
                                                                              words: str) -> None:
    with pytest.raises(error) as e:
        bind(expr)
    assert e.value.message == words


def test_concat_ws_joins_with_its_separator() -> None:
    # (sqlglot's ConcatWs is a Concat: the separator was taken for a first value, joined by '')
    assert bind("concat_ws(',', s, b)").to_spark() == \
        "(concat_ws(',', `s`, (CASE WHEN `b` THEN 't' WHEN NOT `b` THEN 'f' END)))"
    for expr, words in (("concat_ws(5, s)", "concat_ws(integer, character varying)"), ("concat_ws(',')", "concat_ws(unknown)")):
        with pytest.raises(UndefinedFunction) as e:
            bind(expr)
        assert e.value.message == f"function {words} does not exist"
