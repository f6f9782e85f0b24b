"""kill -9 of each service of a multi-process cluster while a backfill runs and writers insert:
the compute node, the compactor, one of two frontends, and the active meta (a standby takes over).
After each, every INSERT that was acknowledged is still there and the MVs equal PostgreSQL's answer
over the table's rows.

The tests run in order on one cluster (a module fixture): meta + standby meta, compute, compactor
and two frontends."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator

import httpx
import psycopg
import pytest

from support.cluster import LocalCluster, ServiceProcess
from support.oracle import assert_same, copy_table

pytestmark = pytest.mark.e2e

ROWS = 60_000
MV_QUERY = "SELECT kind, count(*) AS n, sum(v) AS total FROM events WHERE v < 900 GROUP BY kind"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, meta_store_url) -> Iterator[LocalCluster]:
    with LocalCluster(tmp_path_factory.mktemp("faults"), meta_store_url=meta_store_url("faults")) as c:
        c.meta()
        c.meta(wait_ready=False)  # the standby: waits for the meta store's leader lock
        c.compute()
        c.compactor()
        c.frontend()
        c.frontend()
        with c.connect(_frontends(c)[0]) as conn:
            conn.execute("CREATE TABLE events (id BIGINT PRIMARY KEY, kind VARCHAR, v INT)")
            conn.execute(f"INSERT INTO events SELECT i, 'k' || (i % 37), i % 1000 FROM generate_series(1, {ROWS}) AS g(i)")
            conn.execute("FLUSH")
        yield c


def _frontends(cluster: LocalCluster) -> list[ServiceProcess]:
    return [s for s in cluster.services if s.kind == "frontend" and s.alive]


class Writer:
    """Inserts rows through one frontend until stopped, recording the INSERTs that returned.
    Errors (the frontend or meta going away) are retried; only acknowledged rows count."""

    def __init__(self, dsn: str, base: int) -> None:
        self.dsn = dsn
        self.next_id = base
        self.acknowledged: list[int] = []
        self.errors = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Writer:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(120)

    def wait_for(self, count: int, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        start = len(self.acknowledged)
        while len(self.acknowledged) < start + count:
            assert time.monotonic() < deadline, f"the writer made no progress ({self.errors} errors)"
            time.sleep(0.1)

    def _run(self) -> None:
        conn: psycopg.Connection | None = None
        while not self._stop.is_set():
            try:
                if conn is None:
                    conn = psycopg.connect(self.dsn, autocommit=True, connect_timeout=5)
                i = self.next_id
                self.next_id += 1
                conn.execute(f"INSERT INTO events VALUES ({i}, 'w' || ({i} % 5), {i % 1000})")
                self.acknowledged.append(i)
                time.sleep(0.02)
            except psycopg.Error:
                self.errors += 1
                if conn is not None:
                    conn.close()
                    conn = None
                if not self._stop.is_set():
                    time.sleep(0.2)


def _progress(conn: psycopg.Connection, mv: str) -> str | None:
    for statement, progress in conn.execute("SELECT ddl_statement, progress FROM rw_ddl_progress").fetchall():
        if mv in statement:
            return progress
    return None


def _start_backfill(conn: psycopg.Connection, mv: str) -> None:
    conn.execute("SET background_ddl = true")
    conn.execute("SET backfill_rate_limit = 5000")
    conn.execute(f"CREATE MATERIALIZED VIEW {mv} AS {MV_QUERY}")
    deadline = time.monotonic() + 120
    while True:  # until the backfill has made some progress
        progress = _progress(conn, mv)
        assert progress is not None, f"{mv} is not backfilling"
        if not progress.startswith("0.00%"):
            return
        assert time.monotonic() < deadline, f"the backfill of {mv} does not progress: {progress}"
        time.sleep(0.2)


def _finish_and_check(cluster: LocalCluster, oracle_dsn: str, mv: str, writers: list[Writer]) -> None:
    with cluster.connect(_frontends(cluster)[0]) as conn, psycopg.connect(oracle_dsn, autocommit=True) as pg:
        conn.execute(f"ALTER MATERIALIZED VIEW {mv} SET BACKFILL_RATE_LIMIT = DEFAULT")
        deadline = time.monotonic() + 300
        while _progress(conn, mv) is not None:
            assert time.monotonic() < deadline, f"{mv} never finished its backfill:\n{cluster.logs()}"
            time.sleep(0.5)
        conn.execute("FLUSH")
        ids = {r[0] for r in conn.execute("SELECT id FROM events WHERE id >= 1000000").fetchall()}
        for w in writers:
            lost = [i for i in w.acknowledged if i not in ids]
            assert not lost, f"{len(lost)} acknowledged rows lost, e.g. {lost[:5]}"
        copy_table(conn, pg, "events")
        assert assert_same(conn, pg, mv, MV_QUERY) > 0


def test_kill_compute_during_backfill(cluster: LocalCluster, oracle_dsn: str) -> None:
    fe = _frontends(cluster)[0]
    with cluster.connect(fe) as conn, Writer(cluster.dsn(fe), 1_000_000) as writer:
        _start_backfill(conn, "mv_compute")
        writer.wait_for(20)
        compute = next(s for s in cluster.services if s.kind == "compute" and s.alive)
        compute.kill()
        writer.wait_for(20)  # INSERTs keep being acknowledged without a compute node
        cluster.compute()
        writer.wait_for(20)
    _finish_and_check(cluster, oracle_dsn, "mv_compute", [writer])


def test_hung_compute_is_declared_dead(cluster: LocalCluster, oracle_dsn: str) -> None:
    """A compute node that stops answering (SIGSTOP: alive but silent) misses its heartbeats, is
    declared dead after the timeout, and the round it held fails; a new node takes over and the
    backfill resumes. The old node, when it wakes up, is a stranger to meta: its late results are
    never committed."""
    fe = _frontends(cluster)[0]
    hung = next(s for s in cluster.services if s.kind == "compute" and s.alive)
    with cluster.connect(fe) as conn, Writer(cluster.dsn(fe), 1_500_000) as writer:
        _start_backfill(conn, "mv_hung")
        writer.wait_for(20)
        assert hung.proc is not None
        os.killpg(hung.proc.pid, signal.SIGSTOP)
        try:
            deadline = time.monotonic() + 120
            while any(n["kind"] == "compute" for n in cluster.nodes()):
                assert time.monotonic() < deadline, "meta never declared the hung compute node dead"
                time.sleep(0.5)
            cluster.compute()
            writer.wait_for(20)
        finally:
            os.killpg(hung.proc.pid, signal.SIGCONT)
        writer.wait_for(20)
    hung.kill()
    _finish_and_check(cluster, oracle_dsn, "mv_hung", [writer])


def test_kill_compactor_while_writing(cluster: LocalCluster, oracle_dsn: str) -> None:
    fe = _frontends(cluster)[0]
    with cluster.connect(fe) as conn, Writer(cluster.dsn(fe), 2_000_000) as writer:
        _start_backfill(conn, "mv_compactor")
        writer.wait_for(20)
        next(s for s in cluster.services if s.kind == "compactor" and s.alive).kill()
        writer.wait_for(20)
        cluster.compactor()
        writer.wait_for(20)
    _finish_and_check(cluster, oracle_dsn, "mv_compactor", [writer])
    # the new compactor compacts: L0 of the busy table is merged into L1 eventually
    with cluster.connect(_frontends(cluster)[0]) as conn:
        table_id = conn.execute("SELECT id FROM rw_catalog.rw_tables WHERE name = 'events'").fetchone()[0]
    deadline = time.monotonic() + 180
    while True:
        levels = httpx.get(f"http://127.0.0.1:{cluster.active_meta_port()}/api/tables/{table_id}/levels",
                           timeout=10).json()
        if levels["sorted_ssts"] > 0:
            break
        assert time.monotonic() < deadline, f"no compaction after the compactor restart: {levels}"
        time.sleep(1)


def test_kill_compactor_mid_task_sweeps_its_outputs(cluster: LocalCluster, oracle_dsn: str) -> None:
    """A compactor killed after writing a task's outputs and before reporting them: meta gives the
    task up, a new compactor does it again (as a Spark job: it runs every task on Spark), and the full
    GC deletes the dead one's outputs."""
    for old in [s for s in cluster.services if s.kind == "compactor" and s.alive]:
        old.stop()
    stuck = cluster.compactor(env={"RISINGSPARK_FAILPOINTS": "compactor.before_report=600"})
    fe = _frontends(cluster)[0]
    with cluster.connect(fe) as conn:
        deadline = time.monotonic() + 180
        while "fail point compactor.before_report" not in stuck.log_path.read_text(errors="replace"):
            # a checkpoint per statement: L0 deepens until a task is due
            conn.execute("UPDATE events SET v = (v + 1) % 1000 WHERE id % 97 = 1")
            conn.execute("FLUSH")
            assert time.monotonic() < deadline, f"the compactor never took a task:\n{stuck.log_tail()}"
    line = next(ln for ln in stuck.log_path.read_text(errors="replace").splitlines()
                if "fail point compactor.before_report" in ln)
    written = line.split(" wrote ", 1)[1].rstrip(")").split()
    objects = cluster.base / "data" / "objects"
    assert written and all((objects / p).exists() for p in written), line
    stuck.kill()
    deadline = time.monotonic() + 60
    while any(n["kind"] == "compactor" for n in cluster.nodes()):  # meta gives the task up
        assert time.monotonic() < deadline, "meta never declared the killed compactor dead"
        time.sleep(0.2)
    fresh = cluster.compactor(extra_args=("--spark-master", "local[1]", "--spark-min-task-mb", "0"))
    # the GC deletes no file younger than 10 s (a DML batch's file waits that long to be registered)
    while time.time() - min((objects / p).stat().st_mtime for p in written) < 11:
        time.sleep(0.5)
    gc = httpx.post(f"http://127.0.0.1:{cluster.active_meta_port()}/api/hummock/full_gc",
                    params={"retention_s": 0}, timeout=60).json()
    assert gc["deleted"] >= len(written)
    assert not any((objects / p).exists() for p in written)
    # nothing referenced went: the table and its views read as PostgreSQL does
    with cluster.connect(fe) as conn, psycopg.connect(oracle_dsn, autocommit=True) as pg:
        copy_table(conn, pg, "events")
        assert assert_same(conn, pg, "mv_compactor", MV_QUERY) > 0
    # the new compactor takes the work up, on Spark
    deadline = time.monotonic() + 120
    while "ran as a Spark job" not in fresh.log_path.read_text(errors="replace"):
        assert time.monotonic() < deadline, f"the new compactor never compacted:\n{fresh.log_tail()}"
        time.sleep(0.5)


def test_kill_one_frontend(cluster: LocalCluster, oracle_dsn: str) -> None:
    doomed, survivor = _frontends(cluster)[-1], _frontends(cluster)[0]
    with cluster.connect(survivor) as conn, Writer(cluster.dsn(doomed), 3_000_000) as on_doomed, \
            Writer(cluster.dsn(survivor), 3_500_000) as on_survivor:
        _start_backfill(conn, "mv_frontend")
        on_doomed.wait_for(20)
        doomed.kill()
        on_survivor.wait_for(40)
        deadline = time.monotonic() + 120
        while sum(n["kind"] == "frontend" for n in cluster.nodes()) != 1:
            assert time.monotonic() < deadline, "meta never declared the killed frontend dead"
            time.sleep(0.5)
        cluster.frontend()
    _finish_and_check(cluster, oracle_dsn, "mv_frontend", [on_doomed, on_survivor])


def test_kill_meta_standby_takes_over(cluster: LocalCluster, oracle_dsn: str) -> None:
    fe = _frontends(cluster)[0]
    active = next(s for s in cluster.services if s.kind == "meta" and s.port == cluster.active_meta_port())
    standby = next(s for s in cluster.services if s.kind == "meta" and s is not active)
    with pytest.raises(httpx.HTTPError):  # a standby serves nothing while the active meta lives
        httpx.get(f"http://127.0.0.1:{standby.port}/api/health", timeout=5)
    with cluster.connect(fe) as conn, Writer(cluster.dsn(fe), 4_000_000) as writer:
        _start_backfill(conn, "mv_meta")
        writer.wait_for(20)
        active.kill()
        standby.wait_ready()  # it announces itself once it holds the leader lock and serves
        writer.wait_for(40)  # the frontend reaches the new meta; INSERTs go on
    assert cluster.active_meta_port() == standby.port
    deadline = time.monotonic() + 120
    while sorted(n["kind"] for n in cluster.nodes()) != ["compactor", "compute", "frontend", "frontend"]:
        assert time.monotonic() < deadline, f"workers did not register with the new meta: {cluster.nodes()}"
        time.sleep(0.5)
    _finish_and_check(cluster, oracle_dsn, "mv_meta", [writer])
