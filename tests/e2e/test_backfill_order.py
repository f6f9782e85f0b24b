"""Backfill order control (``WITH (backfill_order = NONE | AUTO | FIXED(...))``): a 3-way join MV of
a fact table and two dimension tables, backfilled slowly (a rate limit) while rows change on every
side. With an order, the fact table's scan waits — `rw_fragment_backfill_progress` says "waiting
for" the dimensions, and it reads nothing until both have finished; with none, every scan reads at
once. Every mode ends equal to PostgreSQL; a kill -9 mid-way resumes in the stage it was in."""

from __future__ import annotations

import itertools
import random
import re
import threading
import time

import httpx
import psycopg
import pytest

from conftest import PlaygroundProcess, unique_name
from support.oracle import assert_same, copy_table, use_strategy

pytestmark = pytest.mark.e2e

QUERY = ("SELECT f.id, f.amount, a.name, b.label FROM {f} f LEFT JOIN {a} a ON f.a_id = a.id "
         "LEFT JOIN {b} b ON f.b_id = b.id")
_NEW_IDS = itertools.count(10_000)
PROGRESS = re.compile(r"^(\d+\.\d{2})% \((\d+)/(\d+)\)( waiting for (.+))?$")


def _setup(conn: psycopg.Connection, f: str, a: str, b: str) -> None:
    conn.execute(f"CREATE TABLE {f} (id INT PRIMARY KEY, a_id INT, b_id INT, amount INT)")
    conn.execute(f"CREATE TABLE {a} (id INT PRIMARY KEY, name VARCHAR)")
    conn.execute(f"CREATE TABLE {b} (id INT PRIMARY KEY, label VARCHAR)")
    conn.execute(f"INSERT INTO {f} SELECT i, i % 600, i % 300, i % 97 FROM generate_series(1, 3000) AS s(i)")
    conn.execute(f"INSERT INTO {a} SELECT i, 'a' || i FROM generate_series(0, 1499) AS s(i)")
    conn.execute(f"INSERT INTO {b} SELECT i, 'b' || i FROM generate_series(0, 999) AS s(i)")
    conn.execute("FLUSH")


def _snapshot(conn: psycopg.Connection, mv: str) -> dict[str, tuple[int, int, str | None]]:
    """Per upstream: (consumed, total, what it waits for)."""
    out = {}
    for upstream, progress in conn.execute(
            "SELECT upstream_table_name, progress FROM rw_catalog.rw_fragment_backfill_progress "
            "WHERE job_name = %s", (mv,)).fetchall():
        m = PROGRESS.match(progress)
        assert m, progress
        out[upstream] = (int(m.group(2)), int(m.group(3)), m.group(5))
    return out


def _watch(pg: PlaygroundProcess, mv: str, stop: threading.Event, seen: list[dict], dashboard: list[dict],
           jobs: list[str]) -> None:
    """Samples `rw_fragment_backfill_progress`, SHOW JOBS and the dashboard's jobs (upstream ->
    waiting_for)."""
    with psycopg.connect(pg.dsn, autocommit=True) as conn, httpx.Client(timeout=10) as http:
        while not stop.is_set():
            if snap := _snapshot(conn, mv):
                seen.append(snap)
            jobs += [row[-1] for row in conn.execute("SHOW JOBS").fetchall() if mv in row[1]]
            for job in http.get(f"http://127.0.0.1:{pg.meta_port}/api/jobs").json():
                if job["name"] == mv and job["backfill"]:
                    dashboard.append({b["upstream"]: b["waiting_for"] for b in job["backfill"]})
            time.sleep(0.1)


def _dml(conn: psycopg.Connection, rng: random.Random, f: str, a: str, b: str) -> None:
    for _ in range(15):
        r = rng.random()
        if r < 0.3:
            conn.execute(f"INSERT INTO {f} VALUES ({next(_NEW_IDS)}, {rng.randrange(700)}, "
                         f"{rng.randrange(300)}, {rng.randrange(100)})")
        elif r < 0.5:
            conn.execute(f"UPDATE {f} SET a_id = {rng.randrange(700)} WHERE id = {rng.randrange(1, 3000)}")
        elif r < 0.6:
            conn.execute(f"DELETE FROM {f} WHERE id = {rng.randrange(1, 3000)}")
        elif r < 0.8:
            conn.execute(f"UPDATE {a} SET name = 'x{rng.randrange(99)}' WHERE id = {rng.randrange(1500)}")
        elif r < 0.9:
            conn.execute(f"DELETE FROM {b} WHERE id = {rng.randrange(1000)}")
        else:
            conn.execute(f"INSERT INTO {a} VALUES ({next(_NEW_IDS)}, 'new')")


def _error(conn: psycopg.Connection, option: str, mv: str, f: str, a: str, b: str) -> psycopg.Error:
    try:
        conn.execute(f"CREATE MATERIALIZED VIEW {mv} WITH (backfill_order = {option}) AS {QUERY.format(f=f, a=a, b=b)}")
    except psycopg.Error as e:
        return e
    raise AssertionError(f"backfill_order = {option} was accepted")


@pytest.mark.parametrize(("mode", "strategy"), [("FIXED", "ARRANGEMENT_BACKFILL"), ("AUTO", "NO_SHUFFLE_BACKFILL"),
                                                ("NONE", "ARRANGEMENT_BACKFILL")])
def test_backfill_order_against_postgres(playground: PlaygroundProcess, oracle_dsn: str, mode: str,
                                         strategy: str) -> None:
    rng = random.Random(mode)
    f, a, b = unique_name("fact"), unique_name("dim_a"), unique_name("dim_b")
    mv = f"{f}_mv"
    option = {"FIXED": f"FIXED({a} -> {f}, {b} -> {f})", "AUTO": "AUTO", "NONE": "NONE"}[mode]
    with playground.connect() as conn, psycopg.connect(oracle_dsn, autocommit=True) as pg:
        use_strategy(conn, strategy)
        _setup(conn, f, a, b)
        explained = [r[0] for r in conn.execute(f"EXPLAIN CREATE MATERIALIZED VIEW {mv} WITH (backfill_order = "
                                                f"{option}) AS {QUERY.format(f=f, a=a, b=b)}").fetchall()]
        want = "Backfill order: none (every upstream at once)" if mode == "NONE" else \
            f"Backfill order: {a} -> {f}, {b} -> {f}"
        assert explained[-1] == want
        if mode == "FIXED":  # errors as RisingWave's, and nothing is created
            cycle = _error(conn, f"FIXED({a} -> {f}, {f} -> {a})", mv, f, a, b)
            assert (cycle.sqlstate, "Backfill order strategy has a cycle" in str(cycle)) == ("22023", True), cycle
            assert _error(conn, f"FIXED(nowhere -> {f})", mv, f, a, b).sqlstate == "42P01"
            assert not conn.execute("SELECT 1 FROM rw_catalog.rw_relations WHERE name = %s", (mv,)).fetchall()
        conn.execute("SET background_ddl = true")
        conn.execute("SET backfill_rate_limit = 100")  # a few rows per vnode per round: many rounds
        conn.execute(f"CREATE MATERIALIZED VIEW {mv} WITH (backfill_order = {option}) AS "
                     f"{QUERY.format(f=f, a=a, b=b)}")
        conn.execute("SET background_ddl = false")
        stop, seen, dashboard, jobs = threading.Event(), [], [], []
        watcher = threading.Thread(target=_watch, args=(playground, mv, stop, seen, dashboard, jobs))
        watcher.start()
        try:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:  # until the fact table's scan has read something
                _dml(conn, rng, f, a, b)
                if seen and seen[-1].get(f, (0,))[0] > 0:
                    break
                time.sleep(0.3)
            _dml(conn, rng, f, a, b)
            conn.execute(f"ALTER MATERIALIZED VIEW {mv} SET BACKFILL_RATE_LIMIT = DEFAULT")
            conn.execute(f"WAIT MATERIALIZED VIEW {mv}")
        finally:
            stop.set()
            watcher.join()
        assert seen, "the backfill was never seen in rw_fragment_backfill_progress"
        fact_early = [s for s in seen if s[f][0] > 0 and (s[a][0] < s[a][1] or s[b][0] < s[b][1])]
        assert dashboard and all(set(d) == {f, a, b} for d in dashboard)  # a line per upstream
        if mode == "NONE":
            assert all(s[f][2] is None for s in seen)
            assert all(not w for d in dashboard for w in d.values())
            assert not [p for p in jobs if "waiting" in p]
            assert fact_early, "without an order the fact table's scan reads alongside the dimensions'"
        else:
            assert any(s[f][2] == f"{a}, {b}" or s[f][2] in (a, b) for s in seen), seen[:3]
            # the fact table read nothing while a dimension was still being read
            assert all(s[f][0] == 0 for s in seen if s[f][2] is not None)
            assert not fact_early, fact_early[:3]
            assert any(s[a][0] > 0 for s in seen if s[f][0] == 0), "the dimensions were read first"
            assert any(d[f] for d in dashboard) and all(not d[a] and not d[b] for d in dashboard)
            assert any(re.search(rf", {f} waiting for ({a}|{b})", p) for p in jobs), jobs[:3]
        for t in (f, a, b):
            copy_table(conn, pg, t)
        assert_same(conn, pg, mv, QUERY.format(f=f, a=a, b=b))


def test_kill_during_an_ordered_backfill_resumes_its_stage(tmp_path, oracle_dsn: str) -> None:
    pg_proc = PlaygroundProcess(tmp_path / "order-crash").start()
    f, a, b = unique_name("fact"), unique_name("dim_a"), unique_name("dim_b")
    mv = f"{f}_mv"
    try:
        with pg_proc.connect() as conn:
            use_strategy(conn, "ARRANGEMENT_BACKFILL")
            _setup(conn, f, a, b)
            conn.execute("SET background_ddl = true")
            conn.execute("SET backfill_rate_limit = 100")
            conn.execute(f"CREATE MATERIALIZED VIEW {mv} WITH (backfill_order = FIXED({a} -> {f}, {b} -> {f})) "
                         f"AS {QUERY.format(f=f, a=a, b=b)}")
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:  # the dimensions under way, the fact table waiting
                snap = _snapshot(conn, mv)
                if snap and snap[a][0] > 0 and snap[f][2] is not None:
                    break
                time.sleep(0.2)
            # Paused in the first stage (so the check below cannot race the last rounds of it), then
            # one more barrier: what the views show is what the meta store holds.
            conn.execute(f"ALTER MATERIALIZED VIEW {mv} SET BACKFILL_RATE_LIMIT = 0")
            conn.execute("FLUSH")
            conn.execute("FLUSH")
            before = _snapshot(conn, mv)
        assert 0 < before[a][0] < before[a][1] and before[f][0] == 0 and before[f][2] is not None, before
        pg_proc.kill()
        pg_proc.start()
        with pg_proc.connect() as conn, psycopg.connect(oracle_dsn, autocommit=True) as pg:
            after = _snapshot(conn, mv)
            assert after == before  # the same positions, the fact table still waiting
            conn.execute(f"INSERT INTO {f} VALUES (5000, 1, 1, 5)")
            conn.execute(f"UPDATE {a} SET name = 'renamed' WHERE id = 1")
            conn.execute(f"ALTER MATERIALIZED VIEW {mv} SET BACKFILL_RATE_LIMIT = DEFAULT")
            conn.execute(f"WAIT MATERIALIZED VIEW {mv}")
            for t in (f, a, b):
                copy_table(conn, pg, t)
            assert_same(conn, pg, mv, QUERY.format(f=f, a=a, b=b))
    finally:
        pg_proc.stop()
