"""RisingWave clauses recognized in the statement text (`frontend.rw_clauses`): a table's kind, and
changelog CTEs, only where the grammar puts them."""

from __future__ import annotations

import pytest
from sqlglot import exp

from frontend.parser import SqlStmt, parse_statement
from frontend.rw_clauses import TableClauses, rewrite_changelog_ctes, split_table_clauses
from risingspark.errors import FeatureNotSupported, SyntaxError_


@pytest.mark.parametrize(("tail", "clauses"), [
    ("APPEND ONLY", TableClauses(True, None)),
    ("ON CONFLICT OVERWRITE", TableClauses(False, "OVERWRITE")),
    ("on conflict do update full", TableClauses(False, "OVERWRITE")),
    ("ON CONFLICT IGNORE", TableClauses(False, "IGNORE")),
    ("ON CONFLICT DO NOTHING", TableClauses(False, "IGNORE")),
    ("ON  CONFLICT\nDO UPDATE IF NOT NULL", TableClauses(False, "DO UPDATE IF NOT NULL")),
    ("APPEND ONLY ON CONFLICT DO NOTHING", TableClauses(True, "IGNORE")),
    ("ON CONFLICT OVERWRITE WITH VERSION COLUMN (v)", TableClauses(False, "OVERWRITE", ("v",))),
])
def test_table_clauses(tail: str, clauses: TableClauses) -> None:
    stmt = parse_statement(f'CREATE TABLE t (k INT PRIMARY KEY, "append only" VARCHAR) {tail}')
    assert isinstance(stmt, SqlStmt) and isinstance(stmt.ast, exp.Create) and stmt.table == clauses
    assert "CONFLICT" not in stmt.ast.sql().upper() and stmt.text.endswith(tail)


def test_words_in_quotes_and_columns_are_no_clauses() -> None:
    assert split_table_clauses("CREATE TABLE t (\"append only\" INT, c VARCHAR DEFAULT 'on conflict')")[1] is None
    stmt = parse_statement("CREATE TABLE t (a INT)")
    assert isinstance(stmt, SqlStmt) and stmt.table is None


def test_an_unknown_conflict_action_is_a_syntax_error() -> None:
    with pytest.raises(SyntaxError_):
        parse_statement("CREATE TABLE t (k INT PRIMARY KEY) ON CONFLICT DO UPDATE SET k = 1")


def test_changelog_ctes_are_rewritten_only_in_with_lists() -> None:
    text, found = rewrite_changelog_ctes("WITH a AS (SELECT 1 AS changelog FROM t), b AS CHANGELOG FROM s.t, "
                                         "c(x) AS NOT MATERIALIZED (SELECT 2) SELECT * FROM b")
    assert found and "b AS (SELECT * FROM __rw_changelog(s.t))" in text and "1 AS changelog FROM t" in text
    assert rewrite_changelog_ctes("SELECT f(x), d AS changelog FROM t, u") == \
        ("SELECT f(x), d AS changelog FROM t, u", False)


def test_changelog_outside_a_materialized_view_is_not_supported() -> None:
    with pytest.raises(FeatureNotSupported, match="CHANGELOG"):
        parse_statement("WITH c AS changelog FROM t SELECT * FROM c")
    stmt = parse_statement("CREATE MATERIALIZED VIEW m AS WITH c AS changelog FROM t SELECT * FROM c")
    assert isinstance(stmt, SqlStmt) and "__rw_changelog" in stmt.ast.sql().lower()
