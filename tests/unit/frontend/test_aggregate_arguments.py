"""Aggregates' arguments in batch queries (`frontend.catalog.aggregate_arguments`) against PostgreSQL
(the oracle): ``min``/``max``/``sum``/``avg`` of a boolean and ``bool_and``/``bool_or``/``every`` of a
number 42883, ``every`` as ``bool_and``, and
``string_agg`` with a NULL delimiter joining the values with none."""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest
from catalog_session import DB, PUBLIC, batch_rows, make_session, oracle_with_view

from frontend.handlers.views import QUERY
from risingspark.catalog import RelationCatalog, RelationKind
from risingspark.errors import RisingSparkError
from risingspark.types import BOOL, VARCHAR, Field

# a view of a boolean and a text: its columns' types are in the catalog
FLAGS_QUERY = "SELECT true AS b, 'a'::varchar AS s UNION ALL SELECT false, 'b'"
FLAGS = RelationCatalog(1032, DB, PUBLIC, "flags", RelationKind.VIEW, (Field("b", BOOL), Field("s", VARCHAR)), (), (),
                        f"CREATE VIEW flags AS {FLAGS_QUERY}", extra={QUERY: FLAGS_QUERY})
VALUES = "(VALUES (true, 'a'), (false, 'b')) AS v(b, s)"

ERRORS = ["SELECT min(b) FROM flags", "SELECT max(b) FROM flags", "SELECT sum(b) FROM flags", "SELECT avg(b) FROM flags",
          "SELECT max(true)", "SELECT min(b::boolean) FROM flags", "SELECT min(DISTINCT b) FROM flags",
          "SELECT s, max(b) FROM flags GROUP BY s", f"SELECT min(b) FROM {VALUES}", f"SELECT max(b) OVER () FROM {VALUES}",
          f"SELECT sum(b) FROM {VALUES}", "SELECT min(s > 'a') FROM flags", f"SELECT max(s = 'a') FROM {VALUES}",
          "SELECT min(b) FROM flags WHERE false", "SELECT string_agg(s, s) FROM flags", "SELECT bool_and(1)",
          "SELECT bool_or(1.5::numeric(3, 1))", "SELECT every(2::float8)", f"SELECT bool_and(length(s)::bigint) FROM {VALUES}",
          # a boolean column of a subquery, a CTE or VALUES over no rows (no row to ask DuckDB of)
          "SELECT min(b) FROM (SELECT true AS b WHERE false) s", f"SELECT max(b) FROM {VALUES} WHERE false",
          "WITH c AS (SELECT b FROM flags) SELECT sum(b) FROM c WHERE false"]
# (an aggregate of the view's rows in an order of their own: DuckDB's UNION ALL yields them in any order)
ANSWERS = ["SELECT string_agg(s, NULL ORDER BY s) FROM flags", "SELECT string_agg(s, NULL::text ORDER BY s DESC) FROM flags",
           f"SELECT string_agg(DISTINCT s, NULL) FROM {VALUES}", f"SELECT string_agg(s, (NULL)) FROM {VALUES}",
           "SELECT string_agg(s, ',' ORDER BY s) FROM flags", "SELECT bool_and(b), bool_or(b), every(b) FROM flags",
           f"SELECT bool_and(b), bool_or(b), every(b) FROM {VALUES}", f"SELECT every(b) OVER (ORDER BY b) FROM {VALUES}",
           f"SELECT min(s), max(s) FROM {VALUES}", "SELECT min(s), max(s), count(b) FROM flags", "SELECT bool_and('t')"]


@pytest.fixture(scope="module")
def pg(oracle_dsn: str) -> Iterator[psycopg.Connection]:
    with oracle_with_view(oracle_dsn, "flags", FLAGS_QUERY) as conn:
        yield conn


@pytest.mark.parametrize("query", ERRORS)
def test_fails_as_in_postgresql(pg: psycopg.Connection, query: str) -> None:
    session = make_session([FLAGS])
    with pytest.raises(RisingSparkError) as got:
        session.run_batch(session.parse_sql(query))
    try:
        pg.execute(query)
    except psycopg.Error as want:
        assert (got.value.sqlstate, got.value.message) == (want.sqlstate, want.diag.message_primary)
    else:  # (a query PostgreSQL answers and we do not support: 0A000)
        assert got.value.sqlstate == "0A000", got.value


@pytest.mark.parametrize("query", ANSWERS)
def test_answers_as_in_postgresql(pg: psycopg.Connection, query: str) -> None:
    session = make_session([FLAGS])
    got = batch_rows(session, query)  # (columns by position: names may repeat)
    assert got == pg.execute(query).fetchall()
