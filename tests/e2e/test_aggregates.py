"""Aggregations beyond GROUP BY columns: HAVING, expressions over aggregates and group keys, and
global aggregates (one row, also over an empty input) — equal to PostgreSQL under changes."""

from __future__ import annotations

import psycopg
import pytest

from conftest import PlaygroundProcess, unique_name
from support.oracle import assert_same, copy_table, use_strategy

pytestmark = pytest.mark.e2e

QUERIES = {
    "having": "SELECT g, count(*) AS n, sum(v) AS s FROM {t} GROUP BY g HAVING count(*) > 3 AND sum(v) < 5000",
    "exprs": "SELECT g + 1 AS g1, sum(v) * 2 AS s2, sum(v) / count(*) AS mean, count(v) - count(*) AS nulls "
             "FROM {t} GROUP BY g + 1",
    "global": "SELECT count(*) AS n, sum(v) AS s, avg(v) AS a, count(v) AS c FROM {t}",
    "global_filtered": "SELECT count(*) AS n, sum(v) AS s FROM {t} WHERE v > 1000000",
    "global_having": "SELECT sum(v) AS s FROM {t} HAVING count(*) > 10",
    # Spark's optimizer proves the filter false: the scan under it must run all the same (its backfill
    # writes progress; the snapshot read counts its rows), or the backfill never finishes
    "global_false": "SELECT count(*) AS n, sum(v) AS s, array_agg(v ORDER BY id) AS a FROM {t} WHERE false",
    "global_null_filter": "SELECT count(*) AS n FROM {t} WHERE NULL",
}


@pytest.mark.parametrize("strategy", ["SNAPSHOT_BACKFILL", "ARRANGEMENT_BACKFILL"])
def test_aggregate_shapes_match_postgres(playground: PlaygroundProcess, oracle_dsn: str, strategy: str) -> None:
    t = unique_name("aggs")
    with playground.connect() as conn, psycopg.connect(oracle_dsn, autocommit=True) as pg:
        use_strategy(conn, strategy)
        conn.execute(f"CREATE TABLE {t} (id INT PRIMARY KEY, g INT, v INT)")
        empty = f"{t}_empty"
        conn.execute(f"CREATE TABLE {empty} (id INT PRIMARY KEY, g INT, v INT)")
        conn.execute(f"INSERT INTO {t} SELECT i, i % 17, CASE WHEN i % 9 = 0 THEN NULL ELSE i % 400 END "
                     f"FROM generate_series(1, 3000) AS s(i)")
        conn.execute("FLUSH")
        for name, q in QUERIES.items():
            conn.execute(f"CREATE MATERIALIZED VIEW {t}_{name} AS {q.format(t=t)}")
            conn.execute(f"CREATE MATERIALIZED VIEW {empty}_{name} AS {q.format(t=empty)}")
        # changes that move groups across the HAVING line, delete a group and empty the table
        conn.execute(f"UPDATE {t} SET v = v + 100 WHERE g = 3")
        conn.execute(f"DELETE FROM {t} WHERE g = 5")
        conn.execute(f"INSERT INTO {t} VALUES (100001, 99, 1), (100002, 99, NULL)")
        conn.execute("FLUSH")
        copy_table(conn, pg, t)
        copy_table(conn, pg, empty)
        for name, q in QUERIES.items():
            assert_same(conn, pg, f"{t}_{name}", q.format(t=t))
            assert_same(conn, pg, f"{empty}_{name}", q.format(t=empty))
        assert conn.execute(f"SELECT * FROM {empty}_global").fetchall() == [(0, None, None, 0)]
        # the global aggregate follows its input down to nothing and back
        conn.execute(f"DELETE FROM {t}")
        conn.execute("FLUSH")
        assert conn.execute(f"SELECT n, s FROM {t}_global").fetchall() == [(0, None)]
        conn.execute(f"INSERT INTO {t} VALUES (1, 1, 7)")
        conn.execute("FLUSH")
        assert conn.execute(f"SELECT n, s FROM {t}_global").fetchall() == [(1, 7)]
