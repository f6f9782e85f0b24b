"""TUMBLE and HOP time windows in materialized views, as RisingWave: windowed aggregations created
over existing data under each backfill strategy, then late rows, updates that move a row to another
window, and deletes; MVs equal PostgreSQL's answer computed with ``date_bin``."""

from __future__ import annotations

import datetime as dt

import psycopg
import pytest

from conftest import PlaygroundProcess, unique_name
from support.oracle import assert_same, copy_table, use_strategy

pytestmark = pytest.mark.e2e

EPOCH = "TIMESTAMP '1970-01-01'"
CASES = {
    # name: (RisingSpark query, the same in PostgreSQL)
    "tumble": (
        "SELECT window_start, window_end, k, count(*) AS n, sum(v) AS total "
        "FROM TUMBLE({t}, ts, INTERVAL '15 minutes') GROUP BY window_start, window_end, k",
        f"SELECT date_bin('15 minutes', ts, {EPOCH}) AS window_start, "
        f"date_bin('15 minutes', ts, {EPOCH}) + INTERVAL '15 minutes' AS window_end, k, count(*) AS n, "
        "sum(v) AS total FROM {t} GROUP BY 1, 2, k"),
    "tumble_rows": (
        "SELECT id, v, window_start FROM TUMBLE({t}, ts, INTERVAL '1' HOUR) WHERE v > 50",
        f"SELECT id, v, date_bin('1 hour', ts, {EPOCH}) AS window_start FROM {{t}} WHERE v > 50"),
    "hop": (
        "SELECT h.window_start, h.window_end, count(*) AS n, max(v) AS hi "
        "FROM HOP({t}, ts, INTERVAL '10 minutes', INTERVAL '30 minutes') AS h GROUP BY h.window_start, h.window_end",
        f"SELECT date_bin('10 minutes', ts, {EPOCH}) - i * INTERVAL '10 minutes' AS window_start, "
        f"date_bin('10 minutes', ts, {EPOCH}) - i * INTERVAL '10 minutes' + INTERVAL '30 minutes' AS window_end, "
        "count(*) AS n, max(v) AS hi FROM {t}, generate_series(0, 2) AS i WHERE ts IS NOT NULL GROUP BY 1, 2"),
    "date_functions": (
        "SELECT id, date_trunc('hour', ts) AS h, date_trunc('week', ts) AS w, extract(minute FROM ts) AS m, "
        "extract(dow FROM ts) AS d, extract(epoch FROM ts) AS e, extract(second FROM ts) AS s FROM {t}",
        "SELECT id, date_trunc('hour', ts) AS h, date_trunc('week', ts) AS w, extract(minute FROM ts) AS m, "
        "extract(dow FROM ts) AS d, extract(epoch FROM ts) AS e, extract(second FROM ts) AS s FROM {t}"),
}


@pytest.mark.parametrize("strategy", ["SNAPSHOT_BACKFILL", "ARRANGEMENT_BACKFILL", "NO_SHUFFLE_BACKFILL"])
def test_time_windows_match_postgres(playground: PlaygroundProcess, oracle_dsn: str, strategy: str) -> None:
    t = unique_name("windows")
    start = dt.datetime(2026, 11, 23, 8, 0, 0)
    with playground.connect() as conn, psycopg.connect(oracle_dsn, autocommit=True) as pg:
        use_strategy(conn, strategy)
        conn.execute(f"CREATE TABLE {t} (id INT PRIMARY KEY, k INT, v INT, ts TIMESTAMP)")
        rows = [(i, i % 3, (i * 41) % 100, None if i % 29 == 0 else start + dt.timedelta(seconds=i * 97))
                for i in range(1, 301)]
        conn.cursor().executemany(f"INSERT INTO {t} VALUES (%s, %s, %s, %s)", rows)
        conn.execute("FLUSH")
        for name, (q, _) in CASES.items():
            conn.execute(f"CREATE MATERIALIZED VIEW {t}_{name} AS {q.format(t=t)}")
        copy_table(conn, pg, t)
        for name, (_, want) in CASES.items():
            assert assert_same(conn, pg, f"{t}_{name}", want.format(t=t)) > 0

        # a late row, a row moved to another window, a NULL time, deletes
        conn.execute(f"INSERT INTO {t} VALUES (1001, 1, 77, TIMESTAMP '2026-11-23 07:59:59'), (1002, 2, 5, NULL)")
        conn.execute(f"UPDATE {t} SET ts = ts + INTERVAL '1 hour' WHERE id % 7 = 0")
        conn.execute(f"UPDATE {t} SET ts = TIMESTAMP '2026-11-23 09:00:00' WHERE id = 29")
        conn.execute(f"DELETE FROM {t} WHERE id % 5 = 0")
        conn.execute("FLUSH")
        copy_table(conn, pg, t)
        for name, (_, want) in CASES.items():
            assert assert_same(conn, pg, f"{t}_{name}", want.format(t=t)) > 0


def test_time_window_errors(playground: PlaygroundProcess) -> None:
    t = unique_name("windows_err")
    with playground.connect() as conn:
        conn.execute(f"CREATE TABLE {t} (id INT PRIMARY KEY, v INT, ts TIMESTAMP)")
        for q, error, message in [
            (f"SELECT * FROM TUMBLE({t}, ts, INTERVAL '1 month')", psycopg.errors.FeatureNotSupported, "month"),
            (f"SELECT * FROM TUMBLE({t}, v, INTERVAL '1 hour')", psycopg.errors.DatatypeMismatch, "timestamp"),
            (f"SELECT * FROM HOP({t}, ts, INTERVAL '7 minutes', INTERVAL '30 minutes')",
             psycopg.errors.InvalidParameterValue, "multiple"),
        ]:
            with pytest.raises(error, match=message):
                conn.execute(f"CREATE MATERIALIZED VIEW {t}_bad AS {q}")
