"""Serverless backfill: a job that asks for it backfills on a provisioned backfiller process of its
own, migrates to the default resource group, and is maintained there; errors when it cannot be
given; a lost backfiller or a restarted cluster resumes from the last checkpoint; cancel destroys
the backfiller; a backfiller that never becomes ready fails its job after a bounded wait. Serverless
compaction, in the same playground: an extra compactor while compaction is behind, retired after."""

from __future__ import annotations

import os
import random
import re
import signal
import subprocess
import threading
import time
from collections.abc import Iterator

import httpx
import psutil
import psycopg
import pytest
from psycopg import errors

from conftest import PlaygroundProcess, free_port, unique_name
from support.oracle import assert_same, copy_table

pytestmark = pytest.mark.e2e

ROWS = 100_000
QUERY = "SELECT g, count(*) AS n, sum(v) AS s FROM {t} WHERE v % 5 <> 0 GROUP BY g"
PROGRESS = re.compile(r"^(\d+\.\d{2})% \((\d+)/(\d+)\)$")


@pytest.fixture(scope="module")
def serverless(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PlaygroundProcess]:
    """A playground whose configuration file enables serverless backfill (one core per backfiller)
    and serverless compaction."""
    root = tmp_path_factory.mktemp("serverless")
    config = root / "risingspark.toml"
    # ... and serverless compaction: an extra compactor whenever compaction is due, retired 3 s after
    config.write_text("[serverless_backfill]\nenabled = true\ncores = 1\nreplicas = 1\nmemory = \"1g\"\n"
                      "[serverless_compaction]\nenabled = true\nmax_compactors = 1\npending_mb = 0\nidle_s = 3\n")
    pg = PlaygroundProcess(root / "data", extra_args=["--config", str(config)]).start()
    yield pg
    code = pg.stop()
    assert code == 0, f"the playground did not stop cleanly (exit {code}): {pg.log_tail()}"


def _load(conn: psycopg.Connection, t: str, rows: int = ROWS) -> None:
    conn.execute(f"CREATE TABLE {t} (id BIGINT PRIMARY KEY, g INT, v INT)")
    conn.execute(f"INSERT INTO {t} SELECT i, i % 50, i % 1000 FROM generate_series(1, {rows}) AS s(i)")
    conn.execute("FLUSH")


def _job(conn: psycopg.Connection, name: str) -> tuple[int, str] | None:
    """(job id, resource group) of a streaming job from rw_streaming_jobs."""
    row = conn.execute("SELECT job_id, resource_group FROM rw_catalog.rw_streaming_jobs WHERE name = %s",
                       (name,)).fetchone()
    return (int(row[0]), str(row[1])) if row else None


def _wait(what: str, check, timeout: float = 180.0, log: PlaygroundProcess | None = None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = check()
        if got:
            return got
        time.sleep(0.3)
    raise AssertionError(f"timed out waiting for {what}" + (f"; log: {log.log_tail()}" if log else ""))


def _backfiller(pg: PlaygroundProcess, group: str) -> dict | None:
    """The dashboard's node entry of a running backfiller."""
    nodes = httpx.get(f"http://127.0.0.1:{pg.meta_port}/api/nodes", timeout=10).json()["nodes"]
    return next((n for n in nodes if n["id"] == group and n["state"] == "running"), None)


def _progress(conn: psycopg.Connection, name: str) -> tuple[int, bool, str] | None:
    """(consumed rows, is_serverless_backfill, backfill_type) of a creating job."""
    for statement, progress, serverless, backfill_type in conn.execute(
            "SELECT ddl_statement, progress, is_serverless_backfill, backfill_type FROM rw_catalog.rw_ddl_progress"):
        if f" {name} " in statement:
            m = PROGRESS.match(progress)
            return (int(m.group(2)) if m else -1), serverless, backfill_type
    return None


def _metric(text: str, name: str, **labels: str) -> float | None:
    """The value of one series in Prometheus text, None if absent."""
    for line in text.splitlines():
        if line.startswith(name + "{") and all(f'{k}="{v}"' in line for k, v in labels.items()):
            return float(line.rsplit(" ", 1)[1])
    return None


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def _writer(dsn: str, t: str, stop: threading.Event, seed: int) -> None:
    """Random INSERT/UPDATE/DELETE on the table until stopped."""
    rnd = random.Random(seed)
    next_id = 10_000_000 + seed * 1_000_000
    with psycopg.connect(dsn, autocommit=True) as conn:
        while not stop.is_set():
            op = rnd.random()
            if op < 0.4:
                values = ", ".join(f"({next_id + i}, {rnd.randrange(60)}, {rnd.randrange(1000)})" for i in range(20))
                conn.execute(f"INSERT INTO {t} VALUES {values}")
                next_id += 20
            elif op < 0.8:
                conn.execute(f"UPDATE {t} SET v = v + 1, g = g + 1 WHERE id = %s", (rnd.randrange(1, ROWS),))
            else:
                conn.execute(f"DELETE FROM {t} WHERE id = %s", (rnd.randrange(1, ROWS),))
            time.sleep(0.02)


# ---- requests refused (on the shared playground, which does not enable serverless backfill) ----
def test_request_refused_when_not_enabled_and_with_wins(playground: PlaygroundProcess) -> None:
    t = unique_name("sl_off")
    with playground.connect() as conn:
        _load(conn, t, 1000)
        conn.execute("SET enable_serverless_backfill = true")
        with pytest.raises(errors.FeatureNotSupported, match="serverless backfill is not enabled") as e:
            conn.execute(f"CREATE MATERIALIZED VIEW {t}_a AS {QUERY.format(t=t)}")
        assert "[serverless_backfill]" in (e.value.diag.message_hint or "")
        assert _job(conn, f"{t}_a") is None, "a refused CREATE creates nothing"
        with pytest.raises(errors.FeatureNotSupported, match="serverless backfill is not enabled"):
            conn.execute(f"CREATE INDEX {t}_idx ON {t} (g)")  # an index backfills too
        with pytest.raises(errors.UndefinedTable):
            conn.execute(f"SELECT * FROM {t}_a")
        # the statement's WITH option wins over the session variable, both ways
        conn.execute(f"CREATE MATERIALIZED VIEW {t}_b WITH (cloud.serverless_backfill_enabled = false) AS "
                     f"{QUERY.format(t=t)}")
        assert conn.execute(f"SELECT sum(n) FROM {t}_b").fetchone() == (800,)
        conn.execute("SET enable_serverless_backfill = false")
        with pytest.raises(errors.FeatureNotSupported, match="not enabled"):
            conn.execute(f"CREATE MATERIALIZED VIEW {t}_c WITH (cloud.serverless_backfill_enabled = true) AS "
                         f"{QUERY.format(t=t)}")
        # never together with an explicit resource group
        with pytest.raises(errors.FeatureNotSupported, match="explicit resource group"):
            conn.execute(f"CREATE MATERIALIZED VIEW {t}_d WITH (resource_group = 'rg1', "
                         f"cloud.serverless_backfill_enabled = true) AS {QUERY.format(t=t)}")
        assert [r[0] for r in conn.execute("SHOW MATERIALIZED VIEWS") if str(r[0]).startswith(t)] == [f"{t}_b"]
        conn.execute(f"DROP TABLE {t} CASCADE")


# ---- on a cluster that enables it ---------------------------------------------------------------
def test_backfill_runs_on_a_backfiller_then_migrates(serverless: PlaygroundProcess, oracle_dsn: str) -> None:
    t = unique_name("sl_run")
    mv = f"{t}_mv"
    meta = f"http://127.0.0.1:{serverless.meta_port}"
    with serverless.connect() as conn, psycopg.connect(oracle_dsn, autocommit=True) as pg:
        _load(conn, t)
        conn.execute("SET background_ddl = true")
        conn.execute("SET backfill_rate_limit = 8000")  # several rounds on the backfiller, so they can be watched
        conn.execute(f"CREATE MATERIALIZED VIEW {mv} WITH (cloud.serverless_backfill_enabled = true) AS "
                     f"{QUERY.format(t=t)}")
        stop = threading.Event()
        writers = [threading.Thread(target=_writer, args=(serverless.dsn, t, stop, s), daemon=True) for s in (1, 2)]
        for w in writers:
            w.start()
        try:
            job_id, group = _wait("the job's backfiller group",
                                  lambda: (j := _job(conn, mv)) and j[1].startswith("backfill-") and j)
            assert group == f"backfill-0-{job_id}"
            consumed, is_serverless, backfill_type = _progress(conn, mv)
            assert is_serverless is True and backfill_type == "SNAPSHOT_BACKFILL"
            node = _wait("the backfiller node", lambda: _backfiller(serverless, group), log=serverless)
            assert node["resource_group"] == group and node["pid"] != serverless.proc.pid
            assert psutil.Process(node["pid"]).is_running()
            # the backfiller's own metrics: the snapshot rows were read there
            read_there = _wait("snapshot rows read on the backfiller", lambda: _metric(
                httpx.get(f"{node['address']}/metrics", timeout=10).text,
                "risingspark_compute_backfill_snapshot_rows_total", job=mv, node=group))
            assert read_there > 0
            # its CPU and memory series appear in meta's /metrics while it lives
            _wait("the backfiller's CPU series", lambda: _metric(httpx.get(f"{meta}/metrics", timeout=10).text,
                                                                  "risingspark_process_cpu_usage_cores", node=group)
                  is not None)
            # ... and on the dashboard, with its samples; and on its own /metrics
            processes = httpx.get(f"{meta}/api/nodes", timeout=10).json()["processes"]
            assert any(p["nodes"] == [group] and p["pid"] == node["pid"] and p["samples"] for p in processes)
            _wait("the backfiller's own CPU series", lambda: _metric(
                httpx.get(f"{node['address']}/metrics", timeout=10).text, "risingspark_process_cpu_usage_cores",
                node=group) is not None)
            conn.execute(f"ALTER MATERIALIZED VIEW {mv} SET BACKFILL_RATE_LIMIT = DEFAULT")
            conn.execute(f"WAIT MATERIALIZED VIEW {mv}")
        finally:
            stop.set()
            for w in writers:
                w.join(30)
        # migrated: the default group runs the job, the backfiller and its series are gone
        assert _job(conn, mv) == (job_id, "default")
        _wait("the backfiller process to exit", lambda: _gone(node["pid"]), timeout=60)
        assert _backfiller(serverless, group) is None
        metrics = httpx.get(f"{meta}/metrics", timeout=10).text
        assert _metric(metrics, "risingspark_process_cpu_usage_cores", node=group) is None
        assert _metric(metrics, "risingspark_process_resident_memory_bytes", node=group) is None
        # the default group's compute node read no snapshot row of the job
        assert not _metric(metrics, "risingspark_compute_backfill_snapshot_rows_total", job=mv)
        conn.execute("FLUSH")
        copy_table(conn, pg, t)
        assert_same(conn, pg, mv, QUERY.format(t=f'"{t}"'))
        # maintained incrementally by the default group from now on
        conn.execute(f"UPDATE {t} SET v = 7 WHERE id <= 500")
        conn.execute(f"DELETE FROM {t} WHERE id > {ROWS - 300}")
        conn.execute(f"INSERT INTO {t} VALUES (1, 999, 1), (90000000, 998, 2)")
        conn.execute("FLUSH")
        copy_table(conn, pg, t)
        assert_same(conn, pg, mv, QUERY.format(t=f'"{t}"'))
        conn.execute(f"DROP TABLE {t} CASCADE")


def test_lost_backfiller_and_cluster_restart_resume(serverless: PlaygroundProcess, oracle_dsn: str) -> None:
    t = unique_name("sl_kill")
    mv = f"{t}_mv"
    with serverless.connect() as conn:
        _load(conn, t)
        conn.execute("SET background_ddl = true")
        conn.execute("SET enable_serverless_backfill = true")
        conn.execute("SET backfill_rate_limit = 10000")
        conn.execute(f"CREATE MATERIALIZED VIEW {mv} AS {QUERY.format(t=t)}")
        job_id, _ = _wait("the job", lambda: _job(conn, mv))
        first = _wait("the first backfiller", lambda: _backfiller(serverless, f"backfill-0-{job_id}"))
        before = _wait("some snapshot progress", lambda: (p := _progress(conn, mv)) and p[0] > 0 and p[0])
        os.killpg(first["pid"], signal.SIGKILL)  # the backfiller and its Spark
        # a new backfiller is provisioned and resumes: progress never goes back
        second = _wait("a second backfiller", lambda: _backfiller(serverless, f"backfill-1-{job_id}"),
                       log=serverless)
        after = _progress(conn, mv)
        assert after is not None and after[0] >= before, (before, after)
    # the whole cluster dies during the backfill: kill -9, then start again
    serverless.kill()
    _wait("the backfiller to stop with its meta", lambda: _gone(second["pid"]), timeout=60)
    serverless.start()
    with serverless.connect() as conn, psycopg.connect(oracle_dsn, autocommit=True) as pg:
        resumed = _progress(conn, mv)
        assert resumed is not None and resumed[0] >= after[0], (after, resumed)
        third = _wait("a backfiller after the restart", lambda: _backfiller(serverless, f"backfill-1-{job_id}"),
                      log=serverless)
        assert third["pid"] != second["pid"]
        conn.execute(f"ALTER MATERIALIZED VIEW {mv} SET BACKFILL_RATE_LIMIT = DEFAULT")
        conn.execute(f"WAIT MATERIALIZED VIEW {mv}")
        assert _job(conn, mv) == (job_id, "default")
        copy_table(conn, pg, t)
        assert_same(conn, pg, mv, QUERY.format(t=f'"{t}"'))
        _wait("the last backfiller to exit", lambda: _gone(third["pid"]), timeout=60)
        conn.execute(f"DROP TABLE {t} CASCADE")


def test_cancel_destroys_the_backfiller(serverless: PlaygroundProcess) -> None:
    t = unique_name("sl_cancel")
    mv = f"{t}_mv"
    with serverless.connect() as conn:
        _load(conn, t, 20_000)
        conn.execute("SET background_ddl = true")
        conn.execute("SET enable_serverless_backfill = true")
        conn.execute("SET backfill_rate_limit = 0")  # paused: it stays on its backfiller
        conn.execute(f"CREATE MATERIALIZED VIEW {mv} AS {QUERY.format(t=t)}")
        job_id, _ = _wait("the job", lambda: _job(conn, mv))
        node = _wait("the backfiller", lambda: _backfiller(serverless, f"backfill-0-{job_id}"))
        assert conn.execute(f"CANCEL JOBS {job_id}").fetchall() == [(job_id,)]
        _wait("the backfiller process to exit", lambda: _gone(node["pid"]), timeout=60)
        assert _backfiller(serverless, f"backfill-0-{job_id}") is None
        assert _job(conn, mv) is None
        assert not [r for r in conn.execute("SHOW JOBS") if mv in r[1]]
        conn.execute(f"DROP TABLE {t}")


def test_dbt_model_config_asks_for_serverless_backfill(serverless: PlaygroundProcess, tmp_path) -> None:
    """A dbt-risingwave model with ``enable_serverless_backfill=true`` in its config (the profile
    says false) is backfilled on a backfiller."""
    from test_dbt import dbt_executable

    t = unique_name("sl_dbt")
    with serverless.connect() as conn:
        _load(conn, t, 5000)
    project = tmp_path / "project"
    (project / "models").mkdir(parents=True)
    (project / "dbt_project.yml").write_text("name: serverless\nversion: '1.0'\nconfig-version: 2\n"
                                             "profile: risingspark\nmodel-paths: ['models']\n")
    (project / "models" / f"{t}_mv.sql").write_text(
        "{{ config(materialized='materialized_view', enable_serverless_backfill=true) }}\n"
        f"select g, count(*) as n from public.{t} group by g\n")
    (tmp_path / "profiles.yml").write_text(
        "risingspark:\n  target: dev\n  outputs:\n    dev:\n"
        f"      type: risingwave\n      host: 127.0.0.1\n      port: {serverless.port}\n"
        "      user: root\n      pass: ''\n      dbname: dev\n      schema: public\n      threads: 1\n"
        "      enable_serverless_backfill: false\n")
    env = {**os.environ, "DBT_SEND_ANONYMOUS_USAGE_STATS": "false", "DBT_USE_COLORS": "false"}
    out = subprocess.run([dbt_executable(), "run", "--profiles-dir", str(tmp_path), "--project-dir", str(project)],
                         cwd=project, env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, f"dbt run failed:\n{out.stdout[-6000:]}\n{out.stderr[-2000:]}"
    with serverless.connect() as conn:
        job_id, group = _job(conn, f"{t}_mv")
        assert group == "default"
        assert conn.execute(f"SELECT sum(n) FROM {t}_mv").fetchone() == (5000,)
        conn.execute(f"DROP TABLE {t} CASCADE")
    # its backfiller existed: it wrote its log under the data directory
    assert (serverless.data_dir / "logs" / f"backfill-0-{job_id}.log").exists()


# ---- a backfiller that cannot start ---------------------------------------------------------
def test_serverless_compaction_adds_a_compactor_while_compaction_is_behind(serverless: PlaygroundProcess) -> None:
    t = unique_name("compacted")
    api = f"http://127.0.0.1:{serverless.meta_port}"
    with serverless.connect() as conn:
        conn.execute(f"CREATE TABLE {t} (k INT PRIMARY KEY, v INT)")
        conn.execute(f"INSERT INTO {t} SELECT g, 0 FROM generate_series(1, 5000) AS s(g)")
        conn.execute("FLUSH")  # (an UPDATE reads the committed rows)
    updates = 0
    stop = threading.Event()

    def update() -> None:  # a checkpoint per update: L0 deepens until compaction is due
        nonlocal updates
        with serverless.connect() as writer:
            while not stop.is_set():
                writer.execute(f"UPDATE {t} SET v = v + 1 WHERE k % 10 = {updates % 10}")
                writer.execute("FLUSH")
                updates += 1

    updater = threading.Thread(target=update, daemon=True)
    updater.start()
    try:  # (the API is polled beside the updates: a compactor runs for a few seconds only)
        deadline = time.monotonic() + 180
        while True:
            state = httpx.get(f"{api}/api/serverless_compaction", timeout=10).json()
            if any(c["state"] == "running" for c in state["compactors"]):
                break
            assert updater.is_alive(), "the updates failed"
            assert time.monotonic() < deadline, f"no extra compactor: {state}\n{serverless.log_tail()}"
            time.sleep(0.3)
    finally:
        stop.set()
        updater.join(60)
    assert not updater.is_alive()
    with serverless.connect() as conn:
        assert state["enabled"] and state["max_compactors"] == 1 and len(state["compactors"]) == 1
        (extra,) = state["compactors"]
        nodes = httpx.get(f"{api}/api/nodes", timeout=10).json()["nodes"]
        assert [n["pid"] for n in nodes if n["process"] == "risingspark compactor (serverless)"] == [extra["pid"]]
        # caught up: retired after 3 s under the threshold, its process gone
        deadline = time.monotonic() + 180
        while httpx.get(f"{api}/api/serverless_compaction", timeout=10).json()["compactors"]:
            assert time.monotonic() < deadline, "the extra compactor was never retired"
            time.sleep(0.5)
        assert not psutil.pid_exists(extra["pid"]) or psutil.Process(extra["pid"]).status() == psutil.STATUS_ZOMBIE
        assert conn.execute(f"SELECT count(*), sum(v) FROM {t}").fetchone() == (5000, 500 * updates)


def test_provision_that_cannot_start_fails_the_job(tmp_path) -> None:
    """The spark provisioner against a Spark master nobody serves: the backfiller never gets an
    executor, never becomes ready, and the job fails after the provisioning timeout."""
    dead_master = f"spark://127.0.0.1:{free_port()}"
    pg = PlaygroundProcess(tmp_path / "data", extra_args=[
        "--serverless-backfill-enabled", "--serverless-backfill-provisioner", "spark",
        "--serverless-backfill-spark-master", dead_master, "--serverless-backfill-provision-timeout-s", "4"]).start()
    try:
        with pg.connect() as conn:
            _load(conn, "t", 100)
            conn.execute("SET enable_serverless_backfill = true")
            started = time.monotonic()
            # foreground: the statement fails with the reason, and nothing is left behind
            with pytest.raises(errors.InsufficientResources, match="not ready 4 s after it was requested"):
                conn.execute(f"CREATE MATERIALIZED VIEW fg AS {QUERY.format(t='t')}")
            assert time.monotonic() - started < 120
            assert _job(conn, "fg") is None
            # background: the job stays in SHOW JOBS with the error until it is cancelled
            conn.execute("SET background_ddl = true")
            conn.execute(f"CREATE MATERIALIZED VIEW bg AS {QUERY.format(t='t')}")
            job_id, _ = _job(conn, "bg")
            failed = _wait("the job to fail", lambda: [r for r in conn.execute("SHOW JOBS")
                                                         if r[0] == job_id and str(r[3]).startswith("Failed:")])
            assert "backfill-0-" in failed[0][3]
            with pytest.raises(errors.InsufficientResources):
                conn.execute("WAIT MATERIALIZED VIEW bg")
            assert conn.execute(f"CANCEL JOBS {job_id}").fetchall() == [(job_id,)]
            assert not conn.execute("SHOW JOBS").fetchall()
    finally:
        pg.stop()
