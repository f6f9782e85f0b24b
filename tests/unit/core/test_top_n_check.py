"""The workloads' check of an ``ORDER BY ... LIMIT`` view (support.workloads.assert_same_top_n),
on PostgreSQL alone: a table stands in for the view. Any choice among the rows tied at the limit
passes; a missing row ranked before the tie, a row from below it, or a wrong count fails."""

from __future__ import annotations

import psycopg
import pytest

from support.workloads import assert_same_top_n

# ranked by v DESC: 1 (v 9), 2 (v 8), then 3, 4, 5 tied at v 7, then 6 (v 1)
ROWS = [(1, 9), (2, 8), (3, 7), (4, 7), (5, 7), (6, 1)]
QUERY = "SELECT id, v FROM topn_base ORDER BY v DESC LIMIT 3"


@pytest.fixture
def pg(oracle_dsn: str):
    with psycopg.connect(oracle_dsn, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS topn_base")
        conn.execute("CREATE TABLE topn_base (id INT, v INT)")
        with conn.cursor() as cur:
            cur.executemany("INSERT INTO topn_base VALUES (%s, %s)", ROWS)
        yield conn
        conn.execute("DROP TABLE IF EXISTS topn_base")
        conn.execute("DROP TABLE IF EXISTS topn_mv")


def _view(pg: psycopg.Connection, ids: list[int]) -> None:
    pg.execute("DROP TABLE IF EXISTS topn_mv")
    pg.execute("CREATE TABLE topn_mv (id INT, v INT)")
    for i in ids:
        pg.execute("INSERT INTO topn_mv SELECT * FROM topn_base WHERE id = %s", (i,))


@pytest.mark.parametrize("ids", [[1, 2, 3], [1, 2, 4], [2, 1, 5]])
def test_any_row_of_the_tie_at_the_limit_passes(pg: psycopg.Connection, ids: list[int]) -> None:
    _view(pg, ids)
    assert assert_same_top_n(pg, pg, "topn_mv", QUERY) == 3


@pytest.mark.parametrize("ids", [[1, 3, 4], [1, 2, 6], [1, 2], [1, 2, 3, 4], [1, 2, 3, 3]])
def test_a_wrong_top_fails(pg: psycopg.Connection, ids: list[int]) -> None:
    _view(pg, ids)
    with pytest.raises(AssertionError, match="top 3"):
        assert_same_top_n(pg, pg, "topn_mv", QUERY)


def test_fewer_rows_than_the_limit_must_all_be_there(pg: psycopg.Connection) -> None:
    _view(pg, [1, 2, 3, 4, 5, 6])
    assert assert_same_top_n(pg, pg, "topn_mv", QUERY.replace("LIMIT 3", "LIMIT 10")) == 6
    _view(pg, [1, 2, 3, 4, 5])
    with pytest.raises(AssertionError):
        assert_same_top_n(pg, pg, "topn_mv", QUERY.replace("LIMIT 3", "LIMIT 10"))
