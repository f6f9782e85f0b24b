"""Backfill progress users can watch: `rw_catalog.rw_ddl_progress` and `SHOW JOBS` from a second
session while a foreground CREATE MATERIALIZED VIEW backfills, and through psql."""

from __future__ import annotations

import re
import subprocess
import threading
import time

import pytest

from conftest import PlaygroundProcess, unique_name
from support.oracle import STRATEGIES, use_strategy

pytestmark = pytest.mark.e2e

PROGRESS = re.compile(r"^(\d+\.\d{2})% \((\d+)/(\d+)\)$")


@pytest.mark.parametrize("strategy", list(STRATEGIES))
def test_progress_is_visible_and_grows(playground: PlaygroundProcess, strategy: str) -> None:
    t = unique_name("prog")
    with playground.connect() as conn:
        conn.execute(f"CREATE TABLE {t} (id BIGINT PRIMARY KEY, g INT)")
        conn.execute(f"INSERT INTO {t} SELECT i, i % 10 FROM generate_series(1, 100000) AS g(i)")
        conn.execute("FLUSH")
    mv = f"{t}_mv"
    done = threading.Event()
    failure: list[BaseException] = []

    def create() -> None:
        try:
            with playground.connect() as c:
                use_strategy(c, strategy)
                c.execute("SET backfill_rate_limit = 8000")
                c.execute(f"CREATE MATERIALIZED VIEW {mv} AS SELECT id, g FROM {t} WHERE g <> 3")
        except BaseException as e:
            failure.append(e)
        finally:
            done.set()

    creator = threading.Thread(target=create)
    creator.start()
    seen: list[tuple[float, int, int]] = []
    with playground.connect() as watcher:
        while not done.is_set():
            rows = watcher.execute("SELECT ddl_id, ddl_statement, create_type, progress, initialized_at, "
                                   "is_serverless_backfill, backfill_type FROM rw_catalog.rw_ddl_progress").fetchall()
            mine = [r for r in rows if mv in r[1]]
            if mine:
                ddl_id, statement, create_type, progress, _, serverless, backfill_type = mine[0]
                assert create_type == "FOREGROUND" and serverless is False
                assert backfill_type == strategy
                assert statement.startswith("CREATE MATERIALIZED VIEW")
                m = PROGRESS.match(progress)
                assert m, progress
                seen.append((float(m.group(1)), int(m.group(2)), int(m.group(3))))
                jobs = {j[0]: j for j in watcher.execute("SHOW JOBS").fetchall()}
                if ddl_id in jobs:  # (it may have finished between the two queries)
                    assert jobs[ddl_id][1] == statement and jobs[ddl_id][2] == "FOREGROUND"
                    assert PROGRESS.match(jobs[ddl_id][3])
            time.sleep(0.3)
    creator.join()
    assert not failure, failure
    assert len(seen) >= 3, seen
    consumed = [s[1] for s in seen]
    assert consumed == sorted(consumed), "progress never goes back"
    assert consumed[-1] > consumed[0]
    assert all(0 <= pct < 100 for pct, _, _ in seen)
    assert seen[-1][2] == 100000
    with playground.connect() as conn:
        assert conn.execute(f"SELECT count(*), sum(g) FROM {mv}").fetchone() == (90000, 420000)
        assert not [r for r in conn.execute("SHOW JOBS").fetchall() if mv in r[1]]


def psql(playground: PlaygroundProcess, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["psql", "-h", "127.0.0.1", "-p", str(playground.port), "-d", "dev", "-U", "root",
                           "-X", *args], capture_output=True, text=True, timeout=120)


def test_psql_session(playground: PlaygroundProcess) -> None:
    t = unique_name("psql")
    script = f"""
CREATE TABLE {t} (id INT PRIMARY KEY, name VARCHAR, score NUMERIC(5,1));
INSERT INTO {t} VALUES (1, 'ann', 9.5), (2, 'bob', 7), (3, 'cy', NULL);
FLUSH;
CREATE MATERIALIZED VIEW {t}_good AS SELECT id, name FROM {t} WHERE score > 8;
SELECT * FROM {t}_good;
SELECT name, score FROM {t} ORDER BY id;
"""
    out = psql(playground, "-c", script.replace("\n", " "))
    # -c with several statements prints only the last result, as against Postgres
    assert out.returncode == 0, out.stderr
    assert " ann  |   9.5" in out.stdout and " cy   |" in out.stdout
    out = psql(playground, "-A", "-t", "-c", f"SELECT * FROM {t}_good")
    assert out.stdout.strip() == "1|ann"
    out = psql(playground, "-c", "SELECT * FROM missing_relation")
    assert out.returncode == 1
    assert 'ERROR:  relation "missing_relation" does not exist' in out.stderr
    out = psql(playground, "-A", "-t", "-c", "SHOW JOBS")
    assert out.returncode == 0 and t not in out.stdout


@pytest.mark.parametrize("strategy, total", [("SNAPSHOT_BACKFILL", 1000), ("ARRANGEMENT_BACKFILL", 1001)])
def test_rate_limit_zero_pauses_the_backfill(playground: PlaygroundProcess, strategy: str, total: int) -> None:
    """Paused, progress stays at 0 (the snapshot total is fixed at its epoch; arrangement backfill
    counts the upstream as it grows); raised again, the backfill completes."""
    t = unique_name("paused")
    with playground.connect() as conn:
        use_strategy(conn, strategy)
        conn.execute(f"CREATE TABLE {t} (id INT PRIMARY KEY, v INT)")
        conn.execute(f"INSERT INTO {t} SELECT i, i FROM generate_series(1, 1000) AS g(i)")
        conn.execute("FLUSH")
        conn.execute("SET background_ddl = true")
        conn.execute("SET backfill_rate_limit = 0")
        conn.execute(f"CREATE MATERIALIZED VIEW {t}_mv AS SELECT id, v FROM {t}")
        conn.execute(f"INSERT INTO {t} VALUES (5000, 1)")  # upstream changes still flow while paused
        conn.execute("FLUSH")

        def progress() -> list[tuple[str, str]]:
            return [r for r in conn.execute("SELECT ddl_statement, progress FROM rw_ddl_progress").fetchall()
                    if f"{t}_mv" in r[0]]

        # (the progress moves at the rounds after the insert's: on a loaded machine, a few seconds)
        deadline = time.monotonic() + 60
        while (rows := progress()) and rows[0][1] != f"0.00% (0/{total})" and time.monotonic() < deadline:
            time.sleep(0.5)
        time.sleep(2)  # a few more rounds: paused, it stays at 0
        rows = progress()
        assert rows and rows[0][1] == f"0.00% (0/{total})", rows
        conn.execute(f"ALTER MATERIALIZED VIEW {t}_mv SET BACKFILL_RATE_LIMIT = DEFAULT")
        conn.execute(f"WAIT MATERIALIZED VIEW {t}_mv")
        conn.execute(f"INSERT INTO {t} VALUES (5001, 1)")
        conn.execute("FLUSH")
        assert conn.execute(f"SELECT count(*) FROM {t}_mv").fetchone() == (1002,)
