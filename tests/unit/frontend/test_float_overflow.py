"""Overflow and underflow of real and double arithmetic in batch queries (`frontend.catalog.float_overflow`)
against PostgreSQL (the oracle): 22003 where finite operands give an infinite result, or non-zero
ones a zero product or quotient; infinities, NaN and division by zero as PostgreSQL's."""

from __future__ import annotations

import math
from collections.abc import Iterator

import psycopg
import pytest
from catalog_session import DB, PUBLIC, batch_rows, fail_both, make_session, oracle_with_view

from frontend.handlers.views import QUERY
from risingspark.catalog import RelationCatalog, RelationKind
from risingspark.errors import RisingSparkError
from risingspark.types import FLOAT4 as REAL
from risingspark.types import FLOAT8 as DOUBLE
from risingspark.types import Field

# a view of big and tiny doubles and reals: its columns' types are in the catalog
EXTREMES_QUERY = ("SELECT 1e308::float8 AS d, 1e-308::float8 AS t, 3e38::real AS r, 1e-38::real AS s UNION ALL "
                  "SELECT 1, 1, 1, 1")
EXTREMES = RelationCatalog(1031, DB, PUBLIC, "extremes", RelationKind.VIEW,
                           (Field("d", DOUBLE), Field("t", DOUBLE), Field("r", REAL), Field("s", REAL)), (), (),
                           f"CREATE VIEW extremes AS {EXTREMES_QUERY}", extra={QUERY: EXTREMES_QUERY})

ERRORS = ["SELECT 1e308::float8 * 10", "SELECT 1e308::float8 + 1e308::float8", "SELECT -1e308::float8 - 1e308::float8",
          "SELECT 1e-308::float8 * 1e-308::float8", "SELECT 1e-308::float8 / 1e308::float8",
          "SELECT 1e308::float8 / 1e-308::float8", "SELECT 5e-324::float8 / 2", "SELECT 1e308::float8 * 10::numeric",
          "SELECT 3e38::real + 3e38::real", "SELECT 1e38::real * 10::real", "SELECT 1e-38::real * 1e-38::real",
          "SELECT 1e-38::real / 1e38::real", "SELECT 1::float8 / 0", "SELECT (1e308::float8 * 10) / 0",
          "SELECT 1 / (1e-200::float8 * 1e-200::float8)", "SELECT (1e200::float8 * 1e200::float8) * 0",
          "SELECT d * 10 FROM extremes", "SELECT d + d FROM extremes", "SELECT t * t FROM extremes",
          "SELECT t / d FROM extremes", "SELECT r * r FROM extremes", "SELECT s * s FROM extremes",
          "SELECT sum(d * 2) FROM extremes", "SELECT d * 2 / 4 FROM extremes", "SELECT sum(d * 10) FROM extremes GROUP BY r",
          # operands typed by a subquery's, a CTE's or a VALUES list's projections
          "SELECT x * 1e308::float8 FROM (SELECT 10::float8 AS x) s",
          "WITH c AS (SELECT 1e308::float8 AS x) SELECT x * 10 FROM c", "SELECT x * x FROM (VALUES (1e200::float8)) v(x)",
          "SELECT column1 * 1e300 FROM (VALUES (1e200::float8), (NULL)) v", "SELECT s.y + s.y FROM (SELECT d AS y FROM extremes) s",
          "WITH c(y) AS (SELECT t FROM extremes), e AS (SELECT y * 1e-100 AS z FROM c) SELECT z * z FROM e",
          "SELECT x * 10 FROM (VALUES (1e300::float8), (1e308), (1::real)) v(x)",
          # ^ and power() of doubles (dpow)
          "SELECT 2::float8 ^ 2000", "SELECT 2::float8 ^ -2000", "SELECT power(2::float8, 2000)",
          "SELECT power(2::float8, -2000)", "SELECT 2 ^ 2000", "SELECT d ^ 2 FROM extremes", "SELECT r ^ 10 FROM extremes",
          "SELECT 1e-300::float8 ^ 2", "SELECT x ^ 2000 FROM (VALUES (2::real)) v(x)", "SELECT 0::float8 ^ -1"]
VALUES = ["SELECT 'Infinity'::float8 * 2, 'Infinity'::float8 * 0, '-Infinity'::float8 + 'Infinity', "
          "1::float8 / 'Infinity', 0::float8 * 1e-308::float8, 'NaN'::float8 * 1e308, 1e38::real * 10, "
          "1e308::float8 / 10 * 10",
          "SELECT d * 0.5, t * 1, r + 1, s / 2::real FROM extremes ORDER BY 1",
          "SELECT x * 2, x ^ 2 FROM (SELECT 1.5::real AS x) s",
          "SELECT 0.5::float8 ^ 'Infinity'::float8, 2::float8 ^ '-Infinity'::float8, 'Infinity'::float8 ^ -1, "
          "0::float8 ^ 2, 2 ^ 3, 'NaN'::float8 ^ 0, 1::float8 ^ 'NaN', '-Infinity'::float8 ^ 3"]

# left unchecked, answered as before: arithmetic in a window's PARTITION BY or ORDER BY (DuckDB refuses
# a volatile expression there) and, in a grouped SELECT, outside an aggregate (it must match a GROUP BY
# expression)
UNCHECKED = ["SELECT rank() OVER (ORDER BY d * 0.5) FROM extremes ORDER BY 1",
             "SELECT sum(d) OVER (PARTITION BY r * 1 ORDER BY d) FROM extremes ORDER BY 1",
             "SELECT sum(d * 0.5) OVER (ORDER BY d * 0.5) FROM extremes ORDER BY 1",
             "SELECT rank() OVER (ORDER BY sum(t * 2)) FROM extremes GROUP BY r ORDER BY 1",
             "SELECT (d * 0.5) + 1 FROM extremes GROUP BY d * 0.5 ORDER BY 1",
             "SELECT (d * 0.5) * 2, sum(t * 2) FROM extremes GROUP BY d * 0.5 ORDER BY 1",
             "SELECT count(*) FROM extremes GROUP BY d * 0.5 HAVING d * 0.5 * 2 > 1"]

@pytest.fixture(scope="module")
def pg(oracle_dsn: str) -> Iterator[psycopg.Connection]:
    with oracle_with_view(oracle_dsn, "extremes", EXTREMES_QUERY) as conn:
        yield conn


@pytest.mark.parametrize("query", ERRORS)
def test_overflow_fails_as_in_postgresql(pg: psycopg.Connection, query: str) -> None:
    with pytest.raises(psycopg.Error) as want:
        pg.execute(query)
    session = make_session([EXTREMES])
    with pytest.raises(RisingSparkError) as got:
        session.run_batch(session.parse_sql(query))
    assert (got.value.sqlstate, got.value.message) == (want.value.sqlstate, want.value.diag.message_primary)


def _same(x: object, y: object) -> bool:
    if isinstance(x, float) and isinstance(y, float) and math.isnan(x):
        return math.isnan(y)
    return isinstance(x, float) and isinstance(y, float) and math.isclose(x, y, rel_tol=1e-7)  # (a real: psycopg
    # reads its shortest text)


@pytest.mark.parametrize("query", VALUES)
def test_infinite_operands_and_finite_results_answer_as_in_postgresql(pg: psycopg.Connection, query: str) -> None:
    session = make_session([EXTREMES])
    got = batch_rows(session, query)  # (columns by position: names may repeat)
    want = pg.execute(query).fetchall()
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert all(_same(a, float(b)) for a, b in zip(g, w, strict=True)), (g, w)


def test_integer_arithmetic_is_not_checked(oracle_dsn: str) -> None:
    got, want = fail_both(oracle_dsn, "SELECT 2147483647 + 1")
    assert (got.sqlstate, got.message) == (want.sqlstate, want.diag.message_primary)


@pytest.mark.parametrize("query", UNCHECKED)
def test_window_specs_and_group_keys_answer_as_in_postgresql(pg: psycopg.Connection, query: str) -> None:
    got = batch_rows(make_session([EXTREMES]), query)
    want = pg.execute(query).fetchall()
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert all(_same(float(a), float(b)) for a, b in zip(g, w, strict=True)), (g, w)


def test_columns_of_nested_subqueries_are_typed_once_each():
    # each level's x is typed from the level under it, referenced twice: typed again for every
    # reference, the work doubles with every level (2^18 typings here)
    import sqlglot

    from frontend.catalog.operand_types import OperandTypes

    query = "SELECT 1e10::float8 AS x"
    for _ in range(18):
        query = f"SELECT x * x AS x FROM ({query}) s"
    tree = sqlglot.parse_one(query, read="risingwave")
    calls = [0]

    class Counting(OperandTypes):
        def kind(self, e):
            calls[0] += 1
            return super().kind(e)

    assert Counting(tree, None).kind(tree.expressions[0].unalias()) == "double"
    assert calls[0] <= 10 * 18, calls[0]
