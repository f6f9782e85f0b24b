"""``FETCH FIRST n ROWS WITH TIES`` in batch queries (`frontend.catalog.with_ties`) against PostgreSQL
(the oracle): the rows tied with the last one fetched come too, after an OFFSET as well, with ORDER
BY keys that are expressions, output positions and output names, ascending and descending, and
NULLs among them."""

from __future__ import annotations

import psycopg
import pytest
from catalog_session import fail_both, make_session

from risingspark.errors import FeatureNotSupported

ROWS = "(VALUES (1, 1, 'a'), (2, 1, 'b'), (3, 1, 'a'), (4, 2, 'c'), (5, NULL, 'd'), (6, NULL, 'e'), (7, 3, 'f')) " \
       "AS r(id, g, s)"
QUERIES = [f"SELECT id, g FROM {ROWS} ORDER BY g FETCH FIRST 1 ROW WITH TIES",
           f"SELECT id, g FROM {ROWS} ORDER BY g DESC FETCH FIRST 1 ROW WITH TIES",
           f"SELECT id, g FROM {ROWS} ORDER BY g FETCH FIRST 2 ROWS WITH TIES",
           f"SELECT id, g FROM {ROWS} ORDER BY g OFFSET 1 ROWS FETCH FIRST 1 ROW WITH TIES",
           f"SELECT id, g FROM {ROWS} ORDER BY g OFFSET 3 ROWS FETCH NEXT 1 ROWS WITH TIES",
           f"SELECT id, g AS k FROM {ROWS} ORDER BY k NULLS FIRST FETCH FIRST 1 ROW WITH TIES",
           f"SELECT id, g FROM {ROWS} ORDER BY 2, s FETCH FIRST 1 ROW WITH TIES",
           f"SELECT g, count(*) FROM {ROWS} GROUP BY g ORDER BY count(*) DESC FETCH FIRST 1 ROW WITH TIES",
           f"SELECT id, g FROM {ROWS} WHERE g > 1 ORDER BY g FETCH FIRST 5 ROWS WITH TIES",
           f"SELECT id, g FROM {ROWS} ORDER BY g FETCH FIRST 2 ROWS ONLY"]


def _rows(rows: list) -> list:
    return sorted(tuple(r) for r in rows)  # (order among tied rows is not defined)


@pytest.mark.parametrize("query", QUERIES)
def test_rows_are_postgresqls(oracle_dsn: str, query: str) -> None:
    session = make_session()
    got = session.run_batch(session.parse_sql(query), typed=True).to_pylist()
    with psycopg.connect(oracle_dsn, autocommit=True) as pg:
        want = pg.execute(query).fetchall()
    assert _rows([tuple(r.values()) for r in got]) == _rows(want)


def test_without_order_by_is_postgresqls_error(oracle_dsn: str) -> None:
    got, want = fail_both(oracle_dsn, f"SELECT id FROM {ROWS} FETCH FIRST 1 ROW WITH TIES")
    assert (got.sqlstate, str(got)) == (want.sqlstate, str(want).splitlines()[0])


def test_over_distinct_is_not_supported() -> None:
    session = make_session()
    with pytest.raises(FeatureNotSupported, match="WITH TIES"):
        session.run_batch(session.parse_sql(f"SELECT DISTINCT g FROM {ROWS} ORDER BY g FETCH FIRST 1 ROW WITH TIES"))
