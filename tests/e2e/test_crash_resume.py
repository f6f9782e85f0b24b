"""Crash during backfill: kill -9 the playground at ~50% of a backfill, start it again: the job
resumes from its persisted positions (progress does not go back to 0), completes, and the MV is
correct. Every INSERT that returned before the kill is still there. A Ctrl-C and restart keeps
everything too."""

from __future__ import annotations

import re
import signal
import threading
import time

import psycopg
import pytest

from conftest import PlaygroundProcess
from support.oracle import STRATEGIES, assert_same, copy_table, use_strategy

pytestmark = pytest.mark.e2e

ROWS = 240_000
PROGRESS = re.compile(r"^(\d+\.\d{2})% \((\d+)/(\d+)\)$")


def _progress(conn: psycopg.Connection, name: str) -> tuple[float, int] | None:
    for statement, progress in conn.execute("SELECT ddl_statement, progress FROM rw_ddl_progress").fetchall():
        if name in statement:
            m = PROGRESS.match(progress)
            assert m, progress
            return float(m.group(1)), int(m.group(2))
    return None


WRITER_BASE = 10_000_000


def _write_until_killed(dsn: str, stop: threading.Event, acknowledged: list[int]) -> None:
    """Insert and update rows until the server goes away; record the inserts that returned."""
    i = WRITER_BASE
    try:
        # (two sessions: an UPDATE waits for its own session's earlier writes to be visible)
        with psycopg.connect(dsn, autocommit=True) as ins, psycopg.connect(dsn, autocommit=True) as upd:
            while not stop.is_set():
                ins.execute(f"INSERT INTO events VALUES ({i}, 'w' || ({i} % 5), {i % 1000})")
                acknowledged.append(i)
                upd.execute(f"UPDATE events SET v = v + 1 WHERE id = {i - WRITER_BASE + 1}")
                i += 1
                time.sleep(0.05)
    except psycopg.Error:
        pass  # the kill: statements in flight were not acknowledged


@pytest.mark.parametrize("strategy", list(STRATEGIES))
def test_kill_during_backfill_resumes(tmp_path, oracle_dsn: str, strategy: str) -> None:
    pg = PlaygroundProcess(tmp_path / "crash").start()
    try:
        with pg.connect() as conn:
            use_strategy(conn, strategy)
            conn.execute("CREATE TABLE events (id BIGINT PRIMARY KEY, kind VARCHAR, v INT)")
            conn.execute(f"INSERT INTO events SELECT i, 'k' || (i % 37), i % 1000 "
                         f"FROM generate_series(1, {ROWS}) AS g(i)")
            conn.execute("FLUSH")
            conn.execute("SET background_ddl = true")
            conn.execute("SET backfill_rate_limit = 10000")
            if strategy == "NO_SHUFFLE_BACKFILL":  # (needs the upstream's distribution: no GROUP BY)
                conn.execute("CREATE MATERIALIZED VIEW kinds AS SELECT id, kind, v FROM events WHERE v < 900")
            else:
                conn.execute("CREATE MATERIALIZED VIEW kinds AS SELECT kind, count(*) AS n, sum(v) AS total "
                             "FROM events WHERE v < 900 GROUP BY kind")
            plan = conn.execute("SELECT backfill_type FROM rw_ddl_progress").fetchall()
            assert plan == [(strategy,)], plan
            # Writers keep changing the upstream until the kill; what they were told is done must last.
            acknowledged: list[int] = []
            stop = threading.Event()
            writer = threading.Thread(target=_write_until_killed, args=(pg.dsn, stop, acknowledged), daemon=True)
            writer.start()
            deadline = time.monotonic() + 120
            seen = None
            while time.monotonic() < deadline:
                seen = _progress(conn, "kinds")
                assert seen is not None, "the job finished before the crash point"
                if seen[0] >= 45:
                    break
                time.sleep(0.2)
            assert seen is not None and seen[0] >= 45, seen
            # A write that returns before the kill must survive it.
            conn.execute("INSERT INTO events VALUES (999999999, 'late', 1)")
        pg.kill()
        stop.set()
        writer.join(30)
        assert len(acknowledged) > 5, "the writer ran during the backfill"

        pg.start()
        with pg.connect() as conn:
            after = _progress(conn, "kinds")
            assert after is not None, "the job must still be creating after the restart"
            assert after[1] >= seen[1], f"progress went back: {seen} -> {after}"
            conn.execute("WAIT")
            assert _progress(conn, "kinds") is None
            conn.execute("FLUSH")
            assert conn.execute("SELECT v FROM events WHERE id = 999999999").fetchone() == (1,)
            present = {r[0] for r in conn.execute(f"SELECT id FROM events WHERE id >= {WRITER_BASE}").fetchall()}
            assert set(acknowledged) <= present, f"lost acknowledged inserts: {set(acknowledged) - present}"
            with psycopg.connect(oracle_dsn, autocommit=True) as oracle:
                copy_table(conn, oracle, "events")
                if strategy == "NO_SHUFFLE_BACKFILL":
                    assert assert_same(conn, oracle, "kinds", "SELECT id, kind, v FROM events WHERE v < 900") > 0
                    return
                assert assert_same(conn, oracle, "kinds", "SELECT kind, count(*) AS n, sum(v) AS total FROM events "
                                                          "WHERE v < 900 GROUP BY kind") >= 38
        log = pg.log_path.read_text()
        assert "recovery: re-adding" in log
        if strategy != "SNAPSHOT_BACKFILL":
            return

        # Ctrl-C stops cleanly, and a restart keeps every table, MV and row.
        with pg.connect() as conn:
            before = conn.execute("SELECT count(*), sum(v) FROM events").fetchone()
            mv_before = conn.execute("SELECT * FROM kinds ORDER BY kind").fetchall()
        assert pg.stop(signal.SIGINT) == 0
        pg.start()
        with pg.connect() as conn:
            assert conn.execute("SELECT count(*), sum(v) FROM events").fetchone() == before
            assert conn.execute("SELECT * FROM kinds ORDER BY kind").fetchall() == mv_before
            conn.execute("INSERT INTO events VALUES (1000000000, 'late', 2)")
            conn.execute("FLUSH")
            assert conn.execute("SELECT n, total FROM kinds WHERE kind = 'late'").fetchone() == (2, 3)
    finally:
        pg.stop()
