"""``lag``/``lead`` with a default in batch queries (`frontend.catalog.lag_default`) against PostgreSQL
(the oracle): a default with a fraction is not rounded to an integer value's type."""

from __future__ import annotations

import psycopg
import pytest
from catalog_session import make_session

ROWS = "(VALUES (1, 10, 1.25), (2, NULL, 2.5), (3, 30, NULL)) AS r(id, v, n)"
QUERIES = [f"SELECT id, lag(v::int, 1, 0.5) OVER (ORDER BY id) FROM {ROWS} ORDER BY id",
           f"SELECT id, lead(v::int, 1, -2.75) OVER (ORDER BY id) FROM {ROWS} ORDER BY id",
           f"SELECT id, lead(v::bigint, 2, 1e1) OVER (ORDER BY id) FROM {ROWS} ORDER BY id",
           f"SELECT id, lag(n::numeric(4,2), 1, 0.125) OVER (ORDER BY id) FROM {ROWS} ORDER BY id",
           f"SELECT id, lag(v::int, 1, 0.5::float8) OVER (ORDER BY id) FROM {ROWS} ORDER BY id",
           f"SELECT id, lag(v::int, 1, 7) OVER (ORDER BY id) FROM {ROWS} ORDER BY id"]


@pytest.mark.parametrize("query", QUERIES)
def test_values_are_postgresqls(oracle_dsn: str, query: str) -> None:
    session = make_session()
    got = [tuple(r.values()) for r in session.run_batch(session.parse_sql(query), typed=True).to_pylist()]
    with psycopg.connect(oracle_dsn, autocommit=True) as pg:
        want = [tuple(r) for r in pg.execute(query).fetchall()]
    assert got == want
