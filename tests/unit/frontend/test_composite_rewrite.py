"""The batch rewrite of composite values: a row constructor is a struct value, and comparing struct
values is refused (the batch engine's NULL semantics differ from PostgreSQL's row comparison), except
row equality (``=``, ``<>``, ``IN (list)``: expanded to the field comparisons PostgreSQL defines it by)
and a row value IN a subquery, which the engine compares field by field as PostgreSQL does."""

from __future__ import annotations

import pytest
import sqlglot

from frontend.catalog.composite import jsonb_operators
from risingspark.errors import FeatureNotSupported


def _rewrite(sql: str) -> str:
    return jsonb_operators(sqlglot.parse_one(sql, read="postgres"), None).sql(dialect="postgres")


def test_row_value_in_subquery_is_kept() -> None:
    assert "IN (SELECT" in _rewrite("select z from a where (x, y) in (select x, y from b)")


@pytest.mark.parametrize(("sql", "expanded"), [
    ("select (x, y) = (1, 2) from a", "SELECT (x = 1 AND y = 2) FROM a"),
    ("select (x, y) <> (1, 2) from a", "SELECT NOT (x = 1 AND y = 2) FROM a"),
    ("select (x, y) in ((1, 2), (2, 1)) from a", "SELECT ((x = 1 AND y = 2) OR (x = 2 AND y = 1)) FROM a"),
    ("select (x, y) not in ((1, 2)) from a", "SELECT NOT ((x = 1 AND y = 2)) FROM a"),
])
def test_row_equality_is_expanded_to_fields(sql: str, expanded: str) -> None:
    assert _rewrite(sql) == expanded


@pytest.mark.parametrize("sql", [
    "select (x, y) < (1, 2) from a",
    "select (x, y) in ((1, 2), 3) from a",
    "select z from a where ((x, y), y) in (select x, y from b)",
])
def test_struct_comparisons_are_refused(sql: str) -> None:
    with pytest.raises(FeatureNotSupported, match="comparison of struct values"):
        _rewrite(sql)
