"""One service per process: `risingspark meta`, `compute`, `compactor` and two `frontend`s run as
separate local processes that find each other through meta. DDL and DML through either frontend,
MVs equal PostgreSQL's answer, workers register and heartbeat, and a silent worker is declared
dead."""

from __future__ import annotations

import time
from collections.abc import Iterator

import httpx
import psycopg
import pytest

from support.cluster import LocalCluster
from support.oracle import assert_same, copy_table, rows_of

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, meta_store_url) -> Iterator[LocalCluster]:
    with LocalCluster(tmp_path_factory.mktemp("services"), meta_store_url=meta_store_url("services")) as c:
        c.meta()
        c.compute()
        c.compactor()
        c.frontend()
        c.frontend()
        yield c


def _frontends(cluster: LocalCluster):
    return [s for s in cluster.services if s.kind == "frontend"]


def test_workers_register_with_meta(cluster: LocalCluster) -> None:
    kinds = sorted(n["kind"] for n in cluster.nodes())
    assert kinds == ["compactor", "compute", "frontend", "frontend"]
    compute = next(n for n in cluster.nodes() if n["kind"] == "compute")
    assert compute["parallelism"] == 2 and compute["resource_group"] == "default"
    # the dashboard's nodes are the registered workers, with their own process ids
    dashboard = httpx.get(f"http://127.0.0.1:{cluster.active_meta_port()}/api/nodes", timeout=10).json()
    pids = {(n["role"], n["pid"]) for n in dashboard["nodes"]}
    assert pids == {("meta" if s.kind == "meta" else s.kind, s.proc.pid) for s in cluster.services
                    if s.proc is not None and s.alive}


def test_two_frontends_serve_one_cluster(cluster: LocalCluster, oracle_dsn: str) -> None:
    fe1, fe2 = _frontends(cluster)
    with cluster.connect(fe1) as a, cluster.connect(fe2) as b, psycopg.connect(oracle_dsn, autocommit=True) as pg:
        a.execute("CREATE TABLE orders (id BIGINT PRIMARY KEY, customer VARCHAR, amount INT)")
        a.execute("INSERT INTO orders SELECT i, 'c' || (i % 7), i % 100 FROM generate_series(1, 5000) AS g(i)")
        a.execute("FLUSH")
        # The other frontend sees the table at once (a DDL returns once every frontend has it) and
        # builds an MV over the existing rows (backfill).
        b.execute("CREATE MATERIALIZED VIEW per_customer AS SELECT customer, count(*) AS n, sum(amount) AS total "
                  "FROM orders WHERE amount > 10 GROUP BY customer")
        b.execute("INSERT INTO orders VALUES (6001, 'c1', 55), (6002, 'new', 99)")
        a.execute("UPDATE orders SET amount = amount + 1 WHERE id <= 100")
        a.execute("DELETE FROM orders WHERE id BETWEEN 200 AND 300")
        b.execute("FLUSH")
        a.execute("FLUSH")  # (it returns once every frontend has the version it committed)
        copy_table(a, pg, "orders")
        query = ("SELECT customer, count(*) AS n, sum(amount) AS total FROM orders WHERE amount > 10 "
                 "GROUP BY customer")
        assert assert_same(a, pg, "per_customer", query) == 8
        assert assert_same(b, pg, "per_customer", query) == 8
        assert a.execute("SELECT count(*) FROM orders").fetchone() == (4901,)


def test_a_frontend_runs_distributed_queries_on_the_compute_node(cluster: LocalCluster, oracle_dsn: str) -> None:
    fe = _frontends(cluster)[0]
    with cluster.connect(fe) as conn, psycopg.connect(oracle_dsn, autocommit=True) as pg:
        conn.execute("CREATE TABLE dq_items (id INT PRIMARY KEY, g INT, v INT)")
        conn.execute("INSERT INTO dq_items SELECT i, i % 5, i % 13 FROM generate_series(1, 3000) AS s(i)")
        conn.execute("FLUSH")
        copy_table(conn, pg, "dq_items")
        query = "SELECT a.g, count(*) AS n, sum(b.v) / count(*) AS q FROM dq_items a JOIN dq_items b ON a.id = b.id + 1 GROUP BY a.g"
        conn.execute("SET query_mode = distributed")
        assert rows_of(conn, query) == rows_of(pg, query)
        plan = "\n".join(r[0] for r in conn.execute(f"EXPLAIN {query}").fetchall())
        assert plan.startswith("Distributed mode: Spark") and "HashAggregate" in plan
        conn.execute("SET statement_timeout = '2s'")
        with pytest.raises(psycopg.errors.QueryCanceled):
            # ~13 billion pairs of comparisons: long enough for the timeout, and bounded after the cancel,
            # which does not interrupt a nested-loop join's tasks (docs/notes/test-suite.md)
            conn.execute("SELECT count(*) FROM dq_items a, dq_items b, dq_items c "
                         "WHERE a.id > b.id AND b.id > c.id AND c.id > a.id")
        conn.execute("SET statement_timeout = 0")
        assert conn.execute("SELECT count(*) FROM dq_items").fetchone() == (3000,)
        # the session's zone reaches the compute node: 2024-01-01 20:00 UTC is already the 2nd in Kolkata
        conn.execute("SET TimeZone = 'Asia/Kolkata'")
        conn.execute("CREATE TABLE dq_times (id INT PRIMARY KEY, ts TIMESTAMPTZ)")
        conn.execute("INSERT INTO dq_times VALUES (1, '2024-01-01 17:00:00+00'), (2, '2024-01-01 20:00:00+00'), "
                     "(3, '2024-01-02 01:00:00+00')")
        conn.execute("FLUSH")
        conn.execute("SET query_mode = auto")
        copy_table(conn, pg, "dq_times")
        conn.execute("SET query_mode = distributed")
        zoned = "SELECT ts::date AS d, count(*) AS n FROM dq_times GROUP BY 1 ORDER BY 1"
        pg.execute("SET TimeZone = 'Asia/Kolkata'")
        assert rows_of(conn, zoned) == rows_of(pg, zoned)
        assert conn.execute("EXPLAIN " + zoned).fetchone()[0].startswith("Distributed mode")


def test_users_and_grants_reach_every_frontend(cluster: LocalCluster) -> None:
    """Users and privileges changed through one frontend (meta's user calls over RPC) apply on the
    other (its catalog snapshot over RPC), which trusts the user a client names if it exists."""
    fe1, fe2 = _frontends(cluster)
    with cluster.connect(fe1) as root:
        root.execute("CREATE TABLE grants_t (id INT PRIMARY KEY)")
        root.execute("INSERT INTO grants_t VALUES (1), (2)")
        root.execute("FLUSH")
        root.execute("CREATE USER svc_reader")
        with psycopg.connect(cluster.dsn(fe2).replace("user=root", "user=svc_reader"), autocommit=True) as reader:
            assert reader.execute("SELECT current_user").fetchone() == ("svc_reader",)
            with pytest.raises(psycopg.errors.InsufficientPrivilege, match="permission denied for table grants_t"):
                reader.execute("SELECT count(*) FROM grants_t")
            root.execute("GRANT SELECT ON grants_t TO svc_reader")
            assert reader.execute("SELECT count(*) FROM grants_t").fetchone() == (2,)
            root.execute("REVOKE SELECT ON grants_t FROM svc_reader")
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                reader.execute("SELECT count(*) FROM grants_t")
        root.execute("DROP USER svc_reader")
    with pytest.raises(psycopg.OperationalError, match='role "svc_reader" does not exist'):
        psycopg.connect(cluster.dsn(fe2).replace("user=root", "user=svc_reader"))


def test_errors_keep_their_sqlstate_across_services(cluster: LocalCluster) -> None:
    fe1, _ = _frontends(cluster)
    with cluster.connect(fe1) as conn:
        with pytest.raises(psycopg.errors.UndefinedTable):
            conn.execute("SELECT * FROM no_such_table")
        conn.execute("CREATE TABLE dup (id INT)")
        with pytest.raises(psycopg.errors.DuplicateTable):
            conn.execute("CREATE TABLE dup (id INT)")


def test_a_silent_worker_is_declared_dead(cluster: LocalCluster) -> None:
    compactor = next(s for s in cluster.services if s.kind == "compactor")
    compactor.kill()
    deadline = time.monotonic() + 120
    while any(n["kind"] == "compactor" for n in cluster.nodes()):
        assert time.monotonic() < deadline, "meta never declared the killed compactor dead"
        time.sleep(0.5)
    # A new compactor joins; the cluster keeps serving.
    cluster.compactor()
    assert sorted(n["kind"] for n in cluster.nodes()).count("compactor") == 1
    fe1, _ = _frontends(cluster)
    with cluster.connect(fe1) as conn:
        conn.execute("INSERT INTO orders VALUES (7001, 'late', 42)")
        conn.execute("FLUSH")
        assert conn.execute("SELECT n FROM per_customer WHERE customer = 'late'").fetchone() == (1,)


def test_one_meta_per_meta_store(tmp_path) -> None:
    """A playground on the data directory of a running `risingspark meta` refuses to start (clearly),
    instead of writing the same meta store."""
    import subprocess
    import sys

    from support.cluster import free_port

    c = LocalCluster(tmp_path)
    try:
        c.meta()
        out = subprocess.run([sys.executable, "-m", "risingspark.cli", "playground", "--data-dir", str(tmp_path / "data"),
                              "--port", str(free_port()), "--meta-port", str(free_port())],
                             capture_output=True, text=True, timeout=300)
        assert out.returncode == 1
        assert "another RisingSpark meta or playground is using this meta store" in out.stderr
        assert "Traceback" not in out.stderr
    finally:
        c.stop()
