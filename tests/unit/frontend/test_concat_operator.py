"""``||`` in batch queries (`frontend.catalog.concat_operator`) against PostgreSQL (the oracle): text
joined with any value, arrays with arrays, values and NULLs as PostgreSQL's ``array_cat``,
``array_append`` and ``array_prepend``, and 42883 for two values of types with no ``||``."""

from __future__ import annotations

import psycopg
import pytest
from catalog_session import make_session

from risingspark.errors import RisingSparkError

VALUES = ["'a' || 1", "1 || 'a'", "1 || '2'", "'1' || 2", "NULL || 1", "1 || NULL", "'a' || 1 || 2", "'x' || 'y'",
          "ARRAY[1, 2] || NULL", "NULL || ARRAY[1]", "ARRAY[1] || 2", "0 || ARRAY[1]", "ARRAY[1] || ARRAY[2]",
          "ARRAY[1] || NULL::int", "NULL::int || ARRAY[1]", "ARRAY[1] || NULL::int[]", "NULL::int[] || ARRAY[1]",
          "NULL::int[] || NULL::int[]", "NULL::int[] || NULL::int", "NULL::int || NULL::int[]", "NULL::int[] || NULL",
          "NULL || NULL::int[]", "ARRAY[1] || 2 || 3", "0 || (ARRAY[1] || 2)", "ARRAY['a'] || 'b'::text"]
ERRORS = ["1 || 2", "1::int || 2::bigint", "1.5 || 2", "true || 1", "1 || NULL::int", "1 || 2 || 'a'"]


def test_values_are_postgresqls(oracle_dsn: str) -> None:
    session = make_session()
    query = "SELECT " + ", ".join(f"{v} AS c{i}" for i, v in enumerate(VALUES))
    got = list(session.run_batch(session.parse_sql(query), typed=True).to_pylist()[0].values())
    with psycopg.connect(oracle_dsn, autocommit=True) as pg:
        want = list(pg.execute(query).fetchone())
    assert list(zip(VALUES, got, strict=True)) == list(zip(VALUES, want, strict=True))


@pytest.mark.parametrize("expression", [*ERRORS, "customer || id FROM orders"])
def test_values_of_types_without_the_operator_fail_as_in_postgresql(oracle_dsn: str, expression: str) -> None:
    with psycopg.connect(oracle_dsn, autocommit=True) as pg:
        pg.execute("CREATE TEMP TABLE orders (id BIGINT, customer INT)")  # (the catalog session's, in part)
        with pytest.raises(psycopg.Error) as want:
            pg.execute(f"SELECT {expression}")
    session = make_session()
    with pytest.raises(RisingSparkError) as got:
        session.run_batch(session.parse_sql(f"SELECT {expression}"))
    assert (got.value.sqlstate, got.value.message) == (want.value.sqlstate, want.value.diag.message_primary)
