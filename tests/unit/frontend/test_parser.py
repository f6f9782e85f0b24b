from __future__ import annotations

import pytest

from frontend.parser import (
    AlterSystemStmt,
    CancelJobsStmt,
    ExplainStmt,
    FastInsert,
    FlushStmt,
    SetStmt,
    ShowStmt,
    SqlStmt,
    TransactionStmt,
    WaitStmt,
    parse_statement,
    split_statements,
)
from risingspark.errors import InvalidParameterValue, SyntaxError_


def test_split_respects_quotes_and_comments() -> None:
    sql = "SELECT 'a;b'; -- one; two\nSELECT \"x;y\" FROM t /* ; */; SELECT $$;$$;  ;"
    assert split_statements(sql) == ["SELECT 'a;b'", 'SELECT "x;y" FROM t /* ; */', "SELECT $$;$$"]


def test_split_of_nothing_is_one_empty_statement() -> None:
    assert split_statements("  ;  -- c") == [""]


@pytest.mark.parametrize("text, expected", [
    ("SHOW JOBS", ShowStmt(("jobs",))),
    ("show materialized views", ShowStmt(("materialized", "views"))),
    ("SET streaming_parallelism = 2", SetStmt("streaming_parallelism", "2")),
    ("SET search_path TO public, 'x'", SetStmt("search_path", "public, x")),
    ("SET background_ddl TO DEFAULT", SetStmt("background_ddl", None)),
    ("SET TIME ZONE 'UTC'", SetStmt("timezone", "UTC")),
    ("FLUSH", FlushStmt()),
    ("WAIT", WaitStmt()),
    ("WAIT MATERIALIZED VIEW m", WaitStmt("m")),
    ("CANCEL JOBS 12, 13", CancelJobsStmt((12, 13))),
    ("ALTER SYSTEM SET barrier_interval_ms = 500", AlterSystemStmt("barrier_interval_ms", "500")),
    ("EXPLAIN CREATE MATERIALIZED VIEW m AS SELECT 1", ExplainStmt("CREATE MATERIALIZED VIEW m AS SELECT 1")),
    ("BEGIN", TransactionStmt("BEGIN")),
    ("START TRANSACTION", TransactionStmt("BEGIN")),
    ("END", TransactionStmt("COMMIT")),
])
def test_commands(text: str, expected: object) -> None:
    assert parse_statement(text) == expected


def test_insert_values_takes_the_fast_path() -> None:
    stmt = parse_statement("INSERT INTO public.t (a, \"B\") VALUES (1, 'x'), (2, 'y')")
    assert isinstance(stmt, FastInsert)
    assert stmt.columns == ("a", "B")
    assert stmt.values_text.startswith("VALUES (1")


def test_insert_select_is_parsed_by_sqlglot() -> None:
    assert isinstance(parse_statement("INSERT INTO t SELECT * FROM s"), SqlStmt)


def test_syntax_errors_have_sqlstate_42601() -> None:
    with pytest.raises(SyntaxError_):
        parse_statement("SELECT FROM WHERE (")
    with pytest.raises(SyntaxError_):
        parse_statement("FROBNICATE everything")


def test_rollback_to_savepoint_keeps_the_block_open() -> None:
    assert parse_statement("ROLLBACK TO SAVEPOINT s1") == TransactionStmt("ROLLBACK", in_transaction=True)
    assert parse_statement("ROLLBACK") == TransactionStmt("ROLLBACK")


def test_alter_materialized_view() -> None:
    from frontend.parser import AlterParallelismStmt, AlterRateLimitStmt

    assert parse_statement("ALTER MATERIALIZED VIEW m SET BACKFILL_RATE_LIMIT = 100") == AlterRateLimitStmt("m", 100)
    assert parse_statement("alter materialized view m set backfill_rate_limit to default") == \
        AlterRateLimitStmt("m", None)
    assert parse_statement("ALTER MATERIALIZED VIEW m SET BACKFILL_RATE_LIMIT = ADAPTIVE") == \
        AlterRateLimitStmt("m", "adaptive")
    assert parse_statement("alter materialized view m set backfill_rate_limit to 'adaptive'") == \
        AlterRateLimitStmt("m", "adaptive")
    assert parse_statement("ALTER MATERIALIZED VIEW m SET BACKFILL_RATE_LIMIT = -1") == AlterRateLimitStmt("m", None)
    for bad in ("fast", "adaptiv", "1.5", "-7"):
        with pytest.raises(InvalidParameterValue) as e:
            parse_statement(f"ALTER MATERIALIZED VIEW m SET BACKFILL_RATE_LIMIT = {bad}")
        assert e.value.sqlstate == "22023"
    assert parse_statement("ALTER MATERIALIZED VIEW m SET PARALLELISM = 4") == AlterParallelismStmt("m", 4)
    assert parse_statement("ALTER MATERIALIZED VIEW m SET PARALLELISM TO ADAPTIVE") == AlterParallelismStmt("m", 0)


def test_discard_forms_have_postgresqls_tags():
    from frontend.parser import DiscardAllStmt, IgnoredStmt, parse_statement
    from risingspark.errors import SyntaxError_

    assert parse_statement("DISCARD ALL") == DiscardAllStmt()
    assert parse_statement("discard plans") == IgnoredStmt("DISCARD PLANS")
    assert parse_statement("DISCARD TEMPORARY") == IgnoredStmt("DISCARD TEMP")
    with pytest.raises(SyntaxError_):
        parse_statement("DISCARD EVERYTHING")
    assert parse_statement("DISCARD ALL -- between clients") == DiscardAllStmt()
    assert parse_statement("DISCARD /* x */ ALL") == DiscardAllStmt()
