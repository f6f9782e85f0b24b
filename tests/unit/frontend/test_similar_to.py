"""``SIMILAR TO`` as PostgreSQL matches it (`frontend.catalog.similar_to`): DuckDB, given the
rewritten query, answers as PostgreSQL does (the oracle) on patterns of every construct."""

from __future__ import annotations

import duckdb
import psycopg
import pytest
import sqlglot

from frontend.catalog.similar_to import similar_to, similar_to_regex
from risingspark.errors import FeatureNotSupported, InvalidEscapeSequence

VALUES = ["Hello", "hello world", "abc", "a.c", "abbbc", "100%", "a_b", "x\ny", "", "(ab)", "a\\b", "ab|cd", "a1",
          "ad", None]
PATTERNS = [("H%", None), ("%world%", None), ("a_c", None), ("a.c", None), ("ab*c", None), ("a(b|c)+c", None),
            ("[a-c]%", None), ("%[^a-z]%", None), ("100#%", "#"), ("a\\_b", None), ("a!_b", "!"), ("x%y", None),
            ("", None), ("(ab)", None), ("a\\\\b", None), ("ab|cd", None), ("a{1,2}b%", None), ("%", ""),
            ("a?b?c", None), ("^a%", None), ("%$", None), ("a\\d", None), ("a#d", "#"), ("[\\w]%", None), ("a#b", "#"),
            ("a\\b", None)]


def test_similar_to_matches_as_postgresql(oracle_dsn: str):
    con = duckdb.connect()
    with psycopg.connect(oracle_dsn) as pg:
        for pattern, escape in PATTERNS:
            clause = "SIMILAR TO %s" + ("" if escape is None else " ESCAPE %s")
            params = [pattern] if escape is None else [pattern, escape]
            want = [pg.execute(f"SELECT %s::text {clause}, %s::text NOT {clause}", [v, *params, v, *params]).fetchone()
                    for v in VALUES]
            sql_pattern = "'" + pattern.replace("'", "''") + "'" + ("" if escape is None else f" ESCAPE '{escape}'")
            got = []
            for v in VALUES:
                literal = "NULL" if v is None else "'" + v.replace("'", "''") + "'"
                q = sqlglot.parse_one(f"SELECT {literal} SIMILAR TO {sql_pattern}, {literal} NOT SIMILAR TO "
                                      f"{sql_pattern}", read="risingwave")
                got.append(con.execute(similar_to(q).sql(dialect="duckdb")).fetchone())
            assert got == want, (pattern, escape)


def test_what_is_refused():
    with pytest.raises(FeatureNotSupported):
        similar_to(sqlglot.parse_one("SELECT a SIMILAR TO b FROM t", read="risingwave"))
    with pytest.raises(InvalidEscapeSequence):
        similar_to_regex("a%", "ab")
    with pytest.raises(InvalidEscapeSequence):
        similar_to_regex("a\\")


def test_a_sessions_batch_query_matches_as_postgresql():
    from catalog_session import make_session

    session = make_session()
    out = session.run_batch(session.parse_sql("SELECT 'abc' SIMILAR TO 'a%' AS a, 'Hello' NOT SIMILAR TO 'H_llo' AS b"))
    assert out.to_pylist() == [{"a": True, "b": False}]  # (DuckDB alone: false, true)
