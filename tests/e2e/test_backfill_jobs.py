"""Around backfill: background DDL, SHOW JOBS, WAIT, CANCEL JOBS, DROP of a creating MV, the
concurrency limit queueing jobs, SHOW PARAMETERS and rw_fragment_backfill_progress."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest
from psycopg import errors

from conftest import PlaygroundProcess, unique_name

pytestmark = pytest.mark.e2e


def _jobs(conn) -> dict[str, tuple]:
    return {r[1].split(" AS ")[0].split()[-1]: r for r in conn.execute("SHOW JOBS").fetchall()}


def _table_id(playground: PlaygroundProcess, name: str) -> int:
    rels = httpx.get(f"http://127.0.0.1:{playground.meta_port}/api/relations").json()
    return next(r["id"] for r in rels if r["name"] == name)


def _sst_files(playground: PlaygroundProcess, table_id: int) -> list[Path]:
    return list((playground.data_dir / "objects" / "hummock" / str(table_id)).glob("*.parquet"))


def test_background_jobs_queue_and_wait(playground: PlaygroundProcess) -> None:
    t = unique_name("bg")
    with playground.connect() as conn:
        conn.execute(f"CREATE TABLE {t} (id INT PRIMARY KEY, g INT)")
        conn.execute(f"INSERT INTO {t} SELECT i, i % 7 FROM generate_series(1, 60000) AS s(i)")
        conn.execute("FLUSH")
        conn.execute("SET background_ddl = true")
        conn.execute("SET backfill_rate_limit = 5000")
        started = time.monotonic()
        conn.execute(f"CREATE MATERIALIZED VIEW {t}_a AS SELECT g, count(*) AS n FROM {t} GROUP BY g")
        conn.execute(f"CREATE MATERIALIZED VIEW {t}_b AS SELECT id FROM {t} WHERE g = 1")
        assert time.monotonic() - started < 5, "background CREATE returns at once"
        jobs = _jobs(conn)
        assert set(jobs) >= {f"{t}_a", f"{t}_b"}
        assert jobs[f"{t}_a"][2] == "BACKGROUND"
        # one creating job at a time by default: the second waits and says so
        assert jobs[f"{t}_b"][3].startswith("Queued"), jobs
        frag = conn.execute("SELECT job_name, upstream_table_name, progress, rows_per_second, eta "
                            "FROM rw_catalog.rw_fragment_backfill_progress").fetchall()
        assert any(r[0] == f"{t}_a" and r[1] == t for r in frag), frag
        with pytest.raises(errors.UndefinedTable):
            conn.execute(f"SELECT * FROM {t}_nope")
        conn.execute(f"ALTER MATERIALIZED VIEW {t}_a SET BACKFILL_RATE_LIMIT = DEFAULT")
        conn.execute(f"ALTER MATERIALIZED VIEW {t}_b SET BACKFILL_RATE_LIMIT TO DEFAULT")
        conn.execute(f"WAIT MATERIALIZED VIEW {t}_a")
        conn.execute("WAIT")
        assert not {f"{t}_a", f"{t}_b"} & set(_jobs(conn))
        assert conn.execute(f"SELECT sum(n) FROM {t}_a").fetchone() == (60000,)
        assert conn.execute(f"SELECT count(*) FROM {t}_b").fetchone() == (8572,)


def test_cancel_and_drop_creating_jobs(playground: PlaygroundProcess) -> None:
    t = unique_name("cancel")
    with playground.connect() as conn:
        conn.execute(f"CREATE TABLE {t} (id INT PRIMARY KEY, g INT)")
        conn.execute(f"INSERT INTO {t} SELECT i, i % 5 FROM generate_series(1, 50000) AS s(i)")
        conn.execute("FLUSH")
        conn.execute("SET background_ddl = true")
        conn.execute("SET streaming_use_snapshot_backfill = false")  # arrangement: writes rows as it goes
        conn.execute("SET backfill_rate_limit = 2000")
        conn.execute(f"CREATE MATERIALIZED VIEW {t}_x AS SELECT id, g FROM {t}")
        conn.execute(f"CREATE MATERIALIZED VIEW {t}_y AS SELECT id FROM {t} WHERE g = 2")
        x_id, y_id = _table_id(playground, f"{t}_x"), _table_id(playground, f"{t}_y")
        deadline = time.monotonic() + 30
        while not _sst_files(playground, x_id) and time.monotonic() < deadline:
            time.sleep(0.3)
        assert _sst_files(playground, x_id), "the job wrote some of its table before the cancel"
        cancelled = conn.execute(f"CANCEL JOBS {x_id}, 999999").fetchall()
        assert cancelled == [(x_id,)]
        assert f"{t}_x" not in _jobs(conn)
        with pytest.raises(errors.UndefinedTable):
            conn.execute(f"SELECT * FROM {t}_x")
        # the queued job started when the slot freed; dropping it while it creates cancels it too
        deadline = time.monotonic() + 30
        while _jobs(conn).get(f"{t}_y", ("", "", "", "Queued"))[3].startswith("Queued") \
                and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not _jobs(conn)[f"{t}_y"][3].startswith("Queued")
        conn.execute(f"DROP MATERIALIZED VIEW {t}_y")
        assert not {f"{t}_x", f"{t}_y"} & set(_jobs(conn))
        # their files go once no reader pins them (vacuum runs every few barriers)
        deadline = time.monotonic() + 60
        while (_sst_files(playground, x_id) or _sst_files(playground, y_id)) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert not _sst_files(playground, x_id) and not _sst_files(playground, y_id)
        # the name is free again, and the table still works
        conn.execute("SET backfill_rate_limit = -1")
        conn.execute("SET background_ddl = false")
        conn.execute(f"CREATE MATERIALIZED VIEW {t}_x AS SELECT g, count(*) AS n FROM {t} GROUP BY g")
        assert conn.execute(f"SELECT sum(n) FROM {t}_x").fetchone() == (50000,)


def test_system_parameters(playground: PlaygroundProcess) -> None:
    with playground.connect() as conn:
        cur = conn.execute("SHOW PARAMETERS")
        assert [d.name for d in cur.description] == ["Name", "Value", "Description", "Mutable"]
        params = {r[0]: r for r in cur.fetchall()}
        assert params["barrier_interval_ms"][1] == "1000" and params["barrier_interval_ms"][3] is True
        assert params["max_concurrent_creating_streaming_jobs"][1] == "1"
        conn.execute("ALTER SYSTEM SET barrier_interval_ms = 500")
        try:
            assert dict((r[0], r[1]) for r in conn.execute("SHOW PARAMETERS").fetchall())["barrier_interval_ms"] \
                == "500"
        finally:
            conn.execute("ALTER SYSTEM SET barrier_interval_ms = 1000")
        with pytest.raises(errors.UndefinedObject):
            conn.execute("ALTER SYSTEM SET no_such_parameter = 1")


def test_arrangement_backfill_survives_a_parallelism_change(playground: PlaygroundProcess, oracle_dsn: str) -> None:
    """Per-vnode progress lets a backfill continue on a different number of actors."""
    import psycopg

    from support.oracle import assert_same, copy_table

    t = unique_name("rescale")
    with playground.connect() as conn:
        conn.execute(f"CREATE TABLE {t} (id INT PRIMARY KEY, g INT, v INT)")
        conn.execute(f"INSERT INTO {t} SELECT i, i % 13, i % 100 FROM generate_series(1, 80000) AS s(i)")
        conn.execute("FLUSH")
        conn.execute("SET background_ddl = true")
        conn.execute("SET streaming_use_snapshot_backfill = false")
        conn.execute("SET streaming_parallelism = 1")
        conn.execute("SET backfill_rate_limit = 8000")
        conn.execute(f"CREATE MATERIALIZED VIEW {t}_m AS SELECT g, count(*) AS n, sum(v) AS s FROM {t} GROUP BY g")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            progress = _jobs(conn)[f"{t}_m"][3]
            if not progress.startswith("0.00%"):
                break
            time.sleep(0.2)
        conn.execute(f"ALTER MATERIALIZED VIEW {t}_m SET PARALLELISM = 2")
        conn.execute(f"UPDATE {t} SET v = v + 1 WHERE id % 7 = 0")
        conn.execute(f"ALTER MATERIALIZED VIEW {t}_m SET BACKFILL_RATE_LIMIT = DEFAULT")
        conn.execute(f"WAIT MATERIALIZED VIEW {t}_m")
        conn.execute("FLUSH")
        with psycopg.connect(oracle_dsn, autocommit=True) as pg:
            copy_table(conn, pg, t)
            assert assert_same(conn, pg, f"{t}_m", f"SELECT g, count(*) AS n, sum(v) AS s FROM {t} GROUP BY g") == 13


def _rate_limit(conn, job: str) -> str | None:
    rows = conn.execute("SELECT rate_limit FROM rw_catalog.rw_fragment_backfill_progress WHERE job_name = %s",
                        (job,)).fetchall()
    return rows[0][0] if rows else None


def _limit_gauge(playground: PlaygroundProcess, job: str) -> float | None:
    """The job's `risingspark_backfill_rate_limit_rows_per_second` in meta's /metrics."""
    for line in httpx.get(f"http://127.0.0.1:{playground.meta_port}/metrics").text.splitlines():
        if line.startswith("risingspark_backfill_rate_limit_rows_per_second{") and f'job="{job}"' in line:
            return float(line.rsplit(" ", 1)[1])
    return None


def _adaptive_limits_until(conn, job: str, done, timeout: float = 60) -> list[int]:
    """The distinct adaptive limits the job shows, in order, until `done(limits)` holds."""
    seen: list[int] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not done(seen):
        shown = _rate_limit(conn, job) or ""
        if shown.startswith("adaptive ("):
            n = int(shown.removeprefix("adaptive (").split()[0])
            if not seen or seen[-1] != n:
                seen.append(n)
        time.sleep(0.1)
    return seen


def test_adaptive_backfill_rate_follows_the_barrier_latency(playground: PlaygroundProcess, oracle_dsn: str) -> None:
    """An adaptive rate backs off while barriers are slower than the target, grows while they are
    faster (shown in rw_fragment_backfill_progress and /metrics), and the MV is PostgreSQL's answer."""
    import psycopg

    from support.oracle import assert_same, copy_table

    t = unique_name("adaptive")
    query = f"SELECT g, count(*) AS n, sum(v) AS s FROM {t} GROUP BY g"
    with playground.connect() as conn:
        conn.execute(f"CREATE TABLE {t} (id INT PRIMARY KEY, g INT, v INT)")
        conn.execute(f"INSERT INTO {t} SELECT i, i % 11, i % 100 FROM generate_series(1, 150000) AS s(i)")
        conn.execute("FLUSH")
        with pytest.raises(errors.InvalidParameterValue):
            conn.execute("SET backfill_rate_limit = fast")
        with pytest.raises(errors.InvalidParameterValue):
            conn.execute(f"ALTER MATERIALIZED VIEW {t} SET BACKFILL_RATE_LIMIT = fast")
        conn.execute("SET background_ddl = true")
        conn.execute("SET streaming_use_snapshot_backfill = false")  # arrangement: the limit sets each round
        conn.execute("SET backfill_rate_limit = 8000")
        conn.execute("ALTER SYSTEM SET adaptive_backfill_target_barrier_latency_ms = 1")  # every barrier is slower
        try:
            conn.execute(f"CREATE MATERIALIZED VIEW {t}_m AS {query}")
            assert _rate_limit(conn, f"{t}_m") == "8000"
            conn.execute(f"ALTER MATERIALIZED VIEW {t}_m SET BACKFILL_RATE_LIMIT = ADAPTIVE")
            down = _adaptive_limits_until(conn, f"{t}_m", lambda s: bool(s) and s[-1] == 1000)
            assert down[-1] == 1000 and down == sorted(down, reverse=True) and len(down) >= 2, down
            assert _limit_gauge(playground, f"{t}_m") == 1000
            conn.execute(f"UPDATE {t} SET v = v + 1 WHERE id % 7 = 0")  # changes while it backfills
            conn.execute("ALTER SYSTEM SET adaptive_backfill_target_barrier_latency_ms = 600000")  # now faster
            up = _adaptive_limits_until(conn, f"{t}_m", lambda s: len(s) >= 3)
            assert len(up) >= 2 and up == sorted(up) and up[-1] > 1000, up
        finally:
            conn.execute("ALTER SYSTEM SET adaptive_backfill_target_barrier_latency_ms = DEFAULT")
        conn.execute(f"WAIT MATERIALIZED VIEW {t}_m")
        deadline = time.monotonic() + 10  # (forgotten at the barrier after the one that finished it)
        while _limit_gauge(playground, f"{t}_m") is not None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _limit_gauge(playground, f"{t}_m") is None
        # the session variable, with the default (snapshot) strategy
        conn.execute("SET streaming_use_snapshot_backfill = true")
        conn.execute("SET backfill_rate_limit = adaptive")
        assert conn.execute("SHOW backfill_rate_limit").fetchone() == ("adaptive",)
        conn.execute(f"CREATE MATERIALIZED VIEW {t}_s AS {query}")
        shown = _rate_limit(conn, f"{t}_s")
        assert shown is None or shown.startswith("adaptive ("), shown  # (None once it is done)
        conn.execute(f"DELETE FROM {t} WHERE id % 5 = 0")
        conn.execute(f"WAIT MATERIALIZED VIEW {t}_s")
        conn.execute("FLUSH")
        with psycopg.connect(oracle_dsn, autocommit=True) as pg:
            copy_table(conn, pg, t)
            assert assert_same(conn, pg, f"{t}_m", query) == 11
            assert assert_same(conn, pg, f"{t}_s", query) == 11


# A function that takes 8 s a row (a call may take 10 s: `risingspark.js_udf.CALL_TIME_LIMIT_S`): a
# snapshot read of any of the rows below outlasts a FLUSH.
SLOW_JS = """CREATE FUNCTION {name}(x int) RETURNS int LANGUAGE javascript AS $$
  const end = Date.now() + 8000;
  while (Date.now() < end) {{}}
  return x;
$$"""


def test_a_rate_limited_snapshot_read_runs_off_the_barrier_path(playground: PlaygroundProcess,
                                                                 oracle_dsn: str) -> None:
    """Barriers commit while a rate-limited snapshot read runs (a later round commits the read), and
    the view is PostgreSQL's answer. With the read in the round, the FLUSH would wait for it."""
    import psycopg

    from support.oracle import assert_same, copy_table

    t = unique_name("offpath")
    with playground.connect() as conn:
        conn.execute(SLOW_JS.format(name=f"{t}_slow"))
        conn.execute(f"CREATE TABLE {t} (id INT PRIMARY KEY, v INT)")
        conn.execute(f"CREATE TABLE {t}_other (id INT PRIMARY KEY)")
        conn.execute(f"INSERT INTO {t} VALUES (1, 10), (2, 20), (3, 30), (4, 40)")
        conn.execute("FLUSH")
        conn.execute("SET background_ddl = true")
        conn.execute("SET streaming_use_snapshot_backfill = true")
        conn.execute("SET backfill_rate_limit = 1")  # its first read is due in its first round
        conn.execute(f"CREATE MATERIALIZED VIEW {t}_m AS SELECT id, {t}_slow(v) AS v FROM {t}")
        conn.execute(f"INSERT INTO {t}_other VALUES (1)")
        conn.execute("FLUSH")
        assert conn.execute(f"SELECT count(*) FROM {t}_other").fetchone() == (1,)
        progress = [p for s, p in conn.execute("SELECT ddl_statement, progress FROM rw_ddl_progress").fetchall()
                    if f"{t}_m " in s]
        assert progress and progress[0].startswith("0.00%"), progress  # the read is still running
        conn.execute(f"UPDATE {t} SET v = 21 WHERE id = 2")  # a change that waits in the change log meanwhile
        conn.execute(f"WAIT MATERIALIZED VIEW {t}_m")
        conn.execute("FLUSH")
        with psycopg.connect(oracle_dsn, autocommit=True) as pg:
            copy_table(conn, pg, t)
            assert assert_same(conn, pg, f"{t}_m", f"SELECT id, v FROM {t}") == 4
