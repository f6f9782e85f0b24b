"""PostgreSQL's ``format()`` in batch queries (`frontend.catalog.format_function`), against
PostgreSQL (the oracle)."""

from __future__ import annotations

import psycopg
import pytest
from catalog_session import make_session

from risingspark.errors import FeatureNotSupported, InvalidParameterValue, NullValueNotAllowed

CALLS = ["format('%s-%s', 10, 'Hello')", "format('%s-%s', 'a', NULL)", "format('Hello %s, %%%s%%', 'World', 5)",
         "format('%2$s %1$s %s', 'a', 'b', 'c')", "format('|%5s|%-5s|%2s|', 'ab', 'cd', 'xyz')",
         "format('%L %L %L', 'it''s', NULL, 42)", "format('%I.%I', 'my_table', 'Odd \"Name')",
         "format('no specifiers')", "format(NULL, 1)", "format('%s', 'x', 'unused')", "format('%%')",
         "format('%I %I %I', 'foo$bar', 'select', 'user_1')", "format('%L', E'a\\\\b')",
         "format('%s|%s|%s|%s|%L', true, 1.5::float8, 0::float8, 2::real, false)", "concat(1, true, NULL, 2.0::float8, 'x')"]


def test_format_answers_as_postgresql(oracle_dsn: str):
    session = make_session()
    query = "SELECT " + ", ".join(f"{c} AS c{i}" for i, c in enumerate(CALLS))
    got = list(session.run_batch(session.parse_sql(query)).to_pylist()[0].values())
    with psycopg.connect(oracle_dsn) as pg:
        want = list(pg.execute(query).fetchone())
    assert list(zip(CALLS, got, strict=True)) == list(zip(CALLS, want, strict=True))


@pytest.mark.parametrize("call, error", [("format('%s %s', 1)", InvalidParameterValue),
                                         ("format('%d', 1)", InvalidParameterValue),
                                         ("format('%', 1)", InvalidParameterValue),
                                         ("format('%*s', 3, 'a')", FeatureNotSupported),
                                         ("format('%I', NULL)", NullValueNotAllowed)])
def test_bad_templates_fail_as_in_postgresql(call: str, error: type):
    session = make_session()
    with pytest.raises(error):
        session.run_batch(session.parse_sql(f"SELECT {call}"))
