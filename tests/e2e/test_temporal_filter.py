"""Temporal filters (``WHERE ts > now() - INTERVAL ...``) in materialized views, as RisingWave: MVs
created over existing rows under each backfill strategy (and MVs on them), rows leaving (and, with
an upper bound, entering) as time passes without any input, live changes; compared with PostgreSQL.

An MV read at a committed epoch E equals the query with now() = E. E is not visible to a client,
but after a FLUSH started at ``lo`` and a read ending at ``hi``, lo <= E <= hi: the MV must hold
every row PostgreSQL returns for the narrowest bounds over [lo, hi] and none beyond the widest."""

from __future__ import annotations

import datetime as dt
import time

import psycopg
import pytest

from conftest import PlaygroundProcess, unique_name
from support.oracle import copy_table, rows_of, use_strategy

pytestmark = pytest.mark.e2e

WAIT_S = 120  # bound of every wait for time to pass (the rows' times are at most ~30 s ahead)


def utc_now() -> dt.datetime:
    return dt.datetime.now(dt.UTC).replace(tzinfo=None)


def pg_rows(pg: psycopg.Connection, query: str, lower: dt.datetime, upper: dt.datetime) -> set[tuple]:
    """PostgreSQL's answer with now() replaced by `lower` in lower bounds and `upper` in upper ones."""
    return set(rows_of(pg, query.replace("{lower}", f"TIMESTAMP '{lower.isoformat(sep=' ')}'")
                       .replace("{upper}", f"TIMESTAMP '{upper.isoformat(sep=' ')}'")))


def insert(conn: psycopg.Connection, t: str, rows: list[tuple]) -> None:
    values = ", ".join(["(%s, %s, %s)"] * len(rows))
    conn.execute(f"INSERT INTO {t} VALUES {values}", [v for r in rows for v in r])


def check(conn: psycopg.Connection, pg: psycopg.Connection, queries: dict[str, str]) -> dict[str, set[tuple]]:
    """Each MV lies between PostgreSQL's answers at the bounds of [lo, hi] (see the module)."""
    started = utc_now()
    lo = started - dt.timedelta(microseconds=started.microsecond % 1000)  # now() has millisecond precision
    conn.execute("FLUSH")
    got = {mv: set(rows_of(conn, f"SELECT * FROM {mv}")) for mv in queries}
    hi = utc_now()
    for mv, query in queries.items():
        narrowest = pg_rows(pg, query, hi, lo)  # lower bounds at their latest, upper ones at their earliest
        widest = pg_rows(pg, query, lo, hi)
        assert narrowest <= got[mv], f"{mv}: missing {sorted(narrowest - got[mv])[:5]}"
        assert got[mv] <= widest, f"{mv}: unexpected {sorted(got[mv] - widest)[:5]}"
    return got


def test_temporal_filters_match_postgres_as_time_passes(playground: PlaygroundProcess, oracle_dsn: str) -> None:
    t = unique_name("tf")
    within = "SELECT id, k, ts FROM {t} WHERE ts > {{lower}} - INTERVAL '3 seconds'"
    # one MV per backfill strategy, each writing the filter another way
    mvs = {
        "SNAPSHOT_BACKFILL": ("snap", "SELECT id, k, ts FROM {t} WHERE ts > now() - INTERVAL '3 seconds'", within),
        "ARRANGEMENT_BACKFILL": ("arr", "SELECT id, k, ts FROM {t} WHERE now() - INTERVAL '3 seconds' < ts AND k < 5",
                                 within + " AND k < 5"),
        "NO_SHUFFLE_BACKFILL": ("noshuf", "SELECT id, k, ts FROM {t} WHERE ts + INTERVAL '3 seconds' > "
                                          "current_timestamp", within),
    }
    with playground.connect() as conn, psycopg.connect(oracle_dsn, autocommit=True) as pg:
        conn.execute(f"CREATE TABLE {t} (id INT PRIMARY KEY, k INT, ts TIMESTAMP)")
        start = utc_now()
        rows = [(i, i % 3, start + dt.timedelta(seconds=3 * i - 6)) for i in range(12)]  # 6 s ago .. 27 s ahead
        rows += [(100, 0, None), (101, 1, start - dt.timedelta(days=1)), (102, 2, start + dt.timedelta(hours=1))]
        insert(conn, t, rows)
        conn.execute("FLUSH")
        conn.execute("SET BACKGROUND_DDL = true")
        for strategy, (suffix, q, _) in mvs.items():
            use_strategy(conn, strategy)
            conn.execute(f"CREATE MATERIALIZED VIEW {t}_{suffix} AS {q.format(t=t)}")
        conn.execute("WAIT")
        # MVs on an MV with a temporal filter: an aggregate (retractions as rows leave) and an upper
        # bound (rows enter as time passes)
        use_strategy(conn, "ARRANGEMENT_BACKFILL")
        conn.execute(f"CREATE MATERIALIZED VIEW {t}_counts AS SELECT k, count(*) AS n FROM {t}_snap GROUP BY k")
        conn.execute(f"CREATE MATERIALIZED VIEW {t}_window AS SELECT id, ts FROM {t}_arr "
                     f"WHERE ts <= now() + INTERVAL '2 seconds'")
        conn.execute("WAIT")
        conn.execute("SET BACKGROUND_DDL = false")
        copy_table(conn, pg, t)
        queries = {f"{t}_{suffix}": want.format(t=t) for suffix, _, want in mvs.values()}
        queries[f"{t}_window"] = (f"SELECT id, ts FROM {t} WHERE ts > {{lower}} - INTERVAL '3 seconds' AND k < 5 "
                                  f"AND ts <= {{upper}} + INTERVAL '2 seconds'")

        def check_all() -> dict[str, set[tuple]]:
            got = check(conn, pg, queries)
            # the aggregate over the filtered MV agrees with it at the same epoch (one statement reads both)
            differ = conn.execute(f"SELECT a.k, a.n, b.n FROM (SELECT k, count(*) AS n FROM {t}_snap GROUP BY k) a "
                                  f"FULL JOIN {t}_counts b ON a.k = b.k WHERE a.n IS DISTINCT FROM b.n").fetchall()
            assert differ == []
            return got

        started = time.monotonic()
        first = check_all()
        lag = time.monotonic() - started  # a FLUSH and the reads: how slow this machine is right now
        assert (102, 2, rows[-1][2]) in first[f"{t}_snap"] and not any(r[0] in (100, 101) for r in first[f"{t}_snap"])

        # live changes: new rows (far enough ahead to be seen before they leave, one long past), a
        # row moved back in time (it leaves), one moved ahead, a delete
        ahead = utc_now() + dt.timedelta(seconds=3 * lag + 2)
        insert(conn, t, [(200 + i, i % 3, ahead + dt.timedelta(seconds=i)) for i in range(6)]
               + [(210, 1, utc_now() - dt.timedelta(minutes=1))])
        conn.execute(f"UPDATE {t} SET ts = ts - INTERVAL '1 day' WHERE id = 11")
        conn.execute(f"UPDATE {t} SET ts = ts + INTERVAL '1 hour' WHERE id = 5")
        conn.execute(f"DELETE FROM {t} WHERE id = 10")
        conn.execute("FLUSH")
        copy_table(conn, pg, t)
        check_all()

        # without any input, the rows leave as their time passes, until only the far-future ones stay
        deadline = time.monotonic() + WAIT_S
        seen_counts = []
        while True:
            got = check_all()
            seen_counts.append(len(got[f"{t}_snap"]))
            if {r[0] for r in got[f"{t}_snap"]} == {5, 102} or time.monotonic() > deadline:
                break
            time.sleep(1)
        assert {r[0] for r in got[f"{t}_snap"]} == {5, 102}, f"rows did not leave in {WAIT_S} s: {seen_counts}"
        assert seen_counts[0] > 2 and seen_counts == sorted(seen_counts, reverse=True)
        assert {r[0] for r in got[f"{t}_window"]} == set()  # the far-future rows are beyond its upper bound


def test_unsupported_uses_of_now_fail_at_create(playground: PlaygroundProcess) -> None:
    t = unique_name("tf_err")
    with playground.connect() as conn:
        conn.execute(f"CREATE TABLE {t} (id INT PRIMARY KEY, v INT, ts TIMESTAMP)")
        for q in [f"SELECT id, now() AS seen FROM {t}",
                  f"SELECT * FROM {t} WHERE ts > now() - INTERVAL '1 hour' OR v = 1",
                  f"SELECT * FROM {t} WHERE ts = now()",
                  f"SELECT * FROM {t} WHERE v > now()"]:
            with pytest.raises(psycopg.errors.FeatureNotSupported, match="temporal filter"):
                conn.execute(f"CREATE MATERIALIZED VIEW {t}_bad AS {q}")
