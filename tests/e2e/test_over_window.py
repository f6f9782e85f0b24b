"""Window functions in materialized views (StreamOverWindow) equal to PostgreSQL: ranking, lag /
lead, first / last value and aggregates over ROWS and RANGE frames, per partition, backfilled while
random changes go on and maintained after — including Nexmark q6's moving average over the top bid of
each auction. ORDER BY ends with a unique column where PostgreSQL's answer would otherwise depend on
its arbitrary order among ties."""

from __future__ import annotations

import random
import re

import psycopg
import pytest

from conftest import PlaygroundProcess, unique_name
from support.oracle import assert_same, copy_table
from support.workloads import backfills_at_once

pytestmark = pytest.mark.e2e

QUERIES = {
    "ranks": "SELECT id, g, rank() OVER (PARTITION BY g ORDER BY v) AS r, dense_rank() OVER (PARTITION BY g ORDER BY v) "
             "AS dr FROM {t}",
    "running_sum": "SELECT id, sum(v) OVER (PARTITION BY g ORDER BY v) AS s, count(*) OVER (PARTITION BY g ORDER BY v) "
                   "AS n FROM {t}",
    "moving_avg": "SELECT id, avg(x) OVER (PARTITION BY g ORDER BY ts, id ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS a, "
                  "max(x) OVER (PARTITION BY g ORDER BY ts, id ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING) AS m "
                  "FROM {t}",
    "lag_lead": "SELECT id, lag(v) OVER (PARTITION BY g ORDER BY ts, id) AS prev, lead(v, 2, -1) OVER (PARTITION BY g "
                "ORDER BY ts, id) AS next2, row_number() OVER (PARTITION BY g ORDER BY ts, id) AS rn FROM {t}",
    "first_last": "SELECT id, first_value(v) OVER (PARTITION BY g ORDER BY ts, id) AS f, last_value(v) OVER "
                  "(PARTITION BY g ORDER BY ts, id ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING) AS l FROM {t}",
    "whole_partition": "SELECT id, sum(x) OVER (PARTITION BY g) AS total, min(v) OVER (PARTITION BY g) AS lo FROM {t}",
    "no_partition": "SELECT id, rank() OVER (ORDER BY v DESC) AS r FROM {t} WHERE g = 1",
    "over_subquery": "SELECT g, avg(best) OVER (PARTITION BY g ORDER BY ts, id ROWS BETWEEN 10 PRECEDING AND CURRENT "
                     "ROW) AS a FROM (SELECT id, g, ts, x AS best, ROW_NUMBER() OVER (PARTITION BY g, v ORDER BY x DESC, "
                     "id) AS rk FROM {t}) q WHERE rk <= 1",
}


def _dml(conn: psycopg.Connection, rng: random.Random, t: str) -> None:
    for _ in range(25):
        r = rng.random()
        if r < 0.4:
            conn.execute(f"INSERT INTO {t} VALUES ({rng.randrange(1000, 9000)}, {rng.choice(['NULL', 0, 1, 2])}, "
                         f"{rng.choice(['NULL', 1, 2, 3, 4])}, {rng.randrange(-500, 500) / 10}, "
                         f"TIMESTAMP '2024-01-01' + INTERVAL '1 second' * {rng.randrange(100)})")
        elif r < 0.7:
            conn.execute(f"UPDATE {t} SET v = {rng.choice(['NULL', 1, 2, 3, 4])}, x = {rng.randrange(-500, 500) / 10} "
                         f"WHERE id = {rng.randrange(1, 80)}")
        elif r < 0.8:
            conn.execute(f"UPDATE {t} SET g = {rng.choice([0, 1, 2])} WHERE id = {rng.randrange(1, 80)}")
        else:
            conn.execute(f"DELETE FROM {t} WHERE id = {rng.randrange(1, 80)}")


def test_window_functions_match_postgres(playground: PlaygroundProcess, oracle_dsn: str) -> None:
    rng = random.Random(6)
    t = unique_name("win")
    with playground.connect() as conn, psycopg.connect(oracle_dsn, autocommit=True) as pg:
        conn.execute(f"CREATE TABLE {t} (id INT PRIMARY KEY, g INT, v INT, x NUMERIC(10, 1), ts TIMESTAMP)")
        conn.execute(f"INSERT INTO {t} SELECT i, CASE WHEN i % 11 = 0 THEN NULL ELSE i % 3 END, "
                     f"CASE WHEN i % 7 = 0 THEN NULL ELSE i % 5 END, (i * 37 % 200) / 10.0 - 5, "
                     f"TIMESTAMP '2024-01-01' + INTERVAL '1 second' * (i % 40) FROM generate_series(1, 80) AS s(i)")
        conn.execute("FLUSH")
        with backfills_at_once(conn):  # each view backfills under the writes after its CREATE
            conn.execute("SET background_ddl = true")
            for name, q in QUERIES.items():
                conn.execute(f"CREATE MATERIALIZED VIEW {t}_{name} AS {q.format(t=t)}")
                _dml(conn, rng, t)
            conn.execute("WAIT")
        for _ in range(2):
            _dml(conn, rng, t)
            conn.execute("FLUSH")
            copy_table(conn, pg, t)
            failures = []
            for name, q in QUERIES.items():
                try:
                    assert_same(conn, pg, f"{t}_{name}", q.format(t=t))
                except AssertionError as e:
                    failures.append(f"{name}: {e}")
            assert not failures, "\n".join(failures)
        conn.execute(f"DROP TABLE {t} CASCADE")


def test_window_functions_without_a_defined_order_fail(playground: PlaygroundProcess) -> None:
    t = unique_name("winbad")
    with playground.connect() as conn:
        conn.execute(f"CREATE TABLE {t} (id INT PRIMARY KEY, g INT, v INT)")
        for q, feature in [(f"SELECT id, lag(v) OVER (PARTITION BY g) AS p FROM {t}", "lag() without ORDER BY"),
                           (f"SELECT id, sum(v) OVER (ORDER BY v RANGE BETWEEN 1 PRECEDING AND CURRENT ROW) AS s "
                            f"FROM {t}", "RANGE frames with offsets"),
                           (f"SELECT id, ntile(2) OVER (ORDER BY v) AS n FROM {t}", "ntile")]:
            with pytest.raises(psycopg.errors.FeatureNotSupported, match=re.escape(feature)):
                conn.execute(f"CREATE MATERIALIZED VIEW {t}_bad AS {q}")
        conn.execute(f"DROP TABLE {t} CASCADE")
