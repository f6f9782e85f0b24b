"""TopN in materialized views: ``ORDER BY ... LIMIT [OFFSET]`` over a table and over an aggregate,
and group TopN by ``ROW_NUMBER() OVER (PARTITION BY ... ORDER BY ...) <= n`` (with and without the
row number as a column). Created over existing data (so they backfill) under each backfill
strategy, then inserts, updates and deletes that move rows in and out of the top; MVs (and an MV on
a TopN MV) equal PostgreSQL."""

from __future__ import annotations

import psycopg
import pytest

from conftest import PlaygroundProcess, unique_name
from support.oracle import assert_same, copy_table, use_strategy

pytestmark = pytest.mark.e2e

QUERIES = {
    "top": "SELECT id, g, x FROM {t} ORDER BY x DESC NULLS LAST, id LIMIT 7",
    "top_offset": "SELECT id, x, s FROM {t} WHERE g <> 3 ORDER BY x NULLS FIRST, id LIMIT 5 OFFSET 3",
    "agg_top": "SELECT g, sum(x) AS total, count(*) AS n FROM {t} GROUP BY g ORDER BY total DESC NULLS LAST, g LIMIT 3",
    "group_top": "SELECT id, g, x FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY g ORDER BY x DESC NULLS LAST, id) "
                 "AS rn FROM {t}) s WHERE rn <= 2",
    "group_top_rn": "SELECT g, id, rn FROM (SELECT g, id, ROW_NUMBER() OVER (PARTITION BY g ORDER BY x, id) AS rn "
                    "FROM {t}) s WHERE rn < 4",
}
ON_MV = "SELECT count(*) AS n, max(x) AS hi, min(id) AS lo FROM {mv}"


@pytest.mark.parametrize("strategy", ["SNAPSHOT_BACKFILL", "ARRANGEMENT_BACKFILL", "NO_SHUFFLE_BACKFILL"])
def test_top_n_matches_postgres(playground: PlaygroundProcess, oracle_dsn: str, strategy: str) -> None:
    t = unique_name("topn")
    with playground.connect() as conn, psycopg.connect(oracle_dsn, autocommit=True) as pg:
        use_strategy(conn, strategy)
        conn.execute(f"CREATE TABLE {t} (id INT PRIMARY KEY, g INT, x INT, s VARCHAR)")
        rows = [(i, i % 6 if i % 23 else None, None if i % 17 == 0 else (i * 37) % 400, f"s{i % 5}")
                for i in range(1, 801)]
        conn.cursor().executemany(f"INSERT INTO {t} VALUES (%s, %s, %s, %s)", rows)
        conn.execute("FLUSH")
        for name, q in QUERIES.items():
            conn.execute(f"CREATE MATERIALIZED VIEW {t}_{name} AS {q.format(t=t)}")
        conn.execute(f"CREATE MATERIALIZED VIEW {t}_on_mv AS {ON_MV.format(mv=f'{t}_top')}")
        plan = "\n".join(r[0] for r in conn.execute(
            f"EXPLAIN CREATE MATERIALIZED VIEW {t}_x AS {QUERIES['group_top'].format(t=t)}").fetchall())
        assert "StreamGroupTopN { order: [_rw_order_0 DESC NULLS LAST, _rw_order_1 ASC], limit: 2" in plan

        copy_table(conn, pg, t)
        for name, q in QUERIES.items():
            assert assert_same(conn, pg, f"{t}_{name}", q.format(t=t)) > 0

        # the current leaders leave (deleted, or updated to the bottom), new leaders arrive, rows
        # change group, and a whole group goes away
        top = [r[0] for r in pg.execute(f'SELECT id FROM "{t}" ORDER BY x DESC NULLS LAST, id LIMIT 4').fetchall()]
        conn.execute(f"DELETE FROM {t} WHERE id IN ({top[0]}, {top[1]})")
        conn.execute(f"UPDATE {t} SET x = 0 WHERE id IN ({top[2]}, {top[3]})")
        conn.execute(f"INSERT INTO {t} VALUES (9001, 1, 1000, 'new'), (9002, 2, 999, 'new'), (9003, NULL, 5000, NULL)")
        conn.execute(f"UPDATE {t} SET g = 5 WHERE id % 50 = 1")
        conn.execute(f"DELETE FROM {t} WHERE g = 4")
        conn.execute(f"UPDATE {t} SET x = NULL WHERE id % 31 = 0")
        conn.execute("FLUSH")
        copy_table(conn, pg, t)
        for name, q in QUERIES.items():
            assert assert_same(conn, pg, f"{t}_{name}", q.format(t=t)) > 0
        pg.execute(f'DROP TABLE IF EXISTS "{t}_top_pg"')
        pg.execute(f'CREATE TABLE "{t}_top_pg" AS {QUERIES["top"].format(t=t)}')
        assert_same(conn, pg, f"{t}_on_mv", ON_MV.format(mv=f'"{t}_top_pg"'))


def test_unsupported_window_functions_fail_at_create(playground: PlaygroundProcess) -> None:
    t = unique_name("topn_err")
    with playground.connect() as conn:
        conn.execute(f"CREATE TABLE {t} (id INT PRIMARY KEY, g INT, x INT)")
        for q, message in [
            (f"SELECT id, percent_rank() OVER (PARTITION BY g ORDER BY x) AS r FROM {t}", "window function percent_rank()"),
            (f"SELECT id, ROW_NUMBER() OVER (PARTITION BY g) AS r FROM {t}", "ROW_NUMBER() without ORDER BY"),
            (f"SELECT id FROM {t} OFFSET 3", "OFFSET without LIMIT"),
        ]:
            with pytest.raises(psycopg.errors.FeatureNotSupported, match=message.replace("(", r"\(").replace(")", r"\)")):
                conn.execute(f"CREATE MATERIALIZED VIEW {t}_bad AS {q}")
        assert conn.execute("SELECT count(*) FROM rw_catalog.rw_materialized_views WHERE name = %s",
                            (f"{t}_bad",)).fetchone() == (0,)
