"""`risingspark compute --spark-master spark://...` runs on a Spark standalone cluster: a master
and a worker started from the installed pyspark, the object store a directory every executor reads.
An MV backfill over existing rows completes with PostgreSQL's answer, and Spark's own status APIs
(the application's REST API and the worker's status JSON) show its tasks ran in an executor on that
worker, not in the compute node's driver. A serverless backfill with the spark provisioner runs as
an application of its own on the same cluster, sized by the backfiller SKU."""

from __future__ import annotations

import time

import httpx
import psycopg
import pytest

from support.cluster import LocalCluster, free_port
from support.oracle import assert_same, copy_table
from support.spark_cluster import SparkStandalone

pytestmark = [pytest.mark.e2e, pytest.mark.spark]


def _rest(url: str, timeout_s: float = 120.0) -> list:
    """A JSON list from the driver's Spark REST API. Its first requests start its servlets: in loaded
    CI runs (JVMs compiling with C1 only) one took over 10 s, and one answered an empty body."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            response = httpx.get(url, timeout=max(1.0, deadline - time.monotonic()))
            if response.status_code == 200 and response.content.strip():
                return response.json()
        except (httpx.HTTPError, ValueError):
            pass
        assert time.monotonic() < deadline, f"no answer from {url}"
        time.sleep(1)


def test_backfill_runs_on_the_spark_workers(tmp_path, oracle_dsn: str, meta_store_url) -> None:
    # room for the compute node's application (2 cores) and a backfiller's (1 core)
    spark = SparkStandalone(tmp_path / "spark", worker_cores=3, worker_memory="3g").start()
    cluster = LocalCluster(tmp_path / "rs", meta_store_url=meta_store_url("spark_cluster"))
    cluster.base.mkdir()
    ui_port = free_port()
    try:
        cluster.meta(extra_args=("--serverless-backfill-enabled", "--serverless-backfill-provisioner", "spark",
                                 "--serverless-backfill-spark-master", spark.master_url,
                                 "--serverless-backfill-cores", "1", "--serverless-backfill-memory", "512m"))
        cluster.compute(spark_master=spark.master_url, parallelism=2,
                        spark_conf=f"spark.cores.max=2,spark.executor.memory=1g,spark.executor.cores=2,"
                                   f"spark.ui.enabled=true,spark.ui.port={ui_port}")
        fe = cluster.frontend()
        apps = [a for a in spark.master_state()["activeapps"] if a["name"].startswith("risingspark-compute")]
        assert len(apps) == 1, spark.master_state()["activeapps"]
        app_id = apps[0]["id"]

        with cluster.connect(fe) as conn, psycopg.connect(oracle_dsn, autocommit=True) as pg:
            conn.execute("CREATE TABLE trips (id BIGINT PRIMARY KEY, city VARCHAR, km INT)")
            conn.execute("INSERT INTO trips SELECT i, 'city' || (i % 13), i % 50 FROM generate_series(1, 20000) AS g(i)")
            conn.execute("FLUSH")
            conn.execute("CREATE MATERIALIZED VIEW per_city AS SELECT city, count(*) AS n, sum(km) AS km "
                         "FROM trips GROUP BY city")
            conn.execute("INSERT INTO trips VALUES (30001, 'city1', 7)")
            conn.execute("FLUSH")
            copy_table(conn, pg, "trips")
            assert assert_same(conn, pg, "per_city", "SELECT city, count(*) AS n, sum(km) AS km FROM trips "
                                                      "GROUP BY city") == 13

        # The application's executors, from Spark's REST API on the driver: tasks ran on an executor
        # of the standalone worker, none in the driver.
        # (The first request starts the REST API's servlets, which took over 10 s in a loaded CI run
        # on JVMs that compile with C1 only.)
        api = f"http://127.0.0.1:{ui_port}/api/v1/applications/{app_id}"
        executors = _rest(f"{api}/allexecutors")
        driver = [e for e in executors if e["id"] == "driver"]
        remote = [e for e in executors if e["id"] != "driver"]
        assert remote, executors
        assert sum(e["totalTasks"] for e in remote) > 0
        assert all(e["totalTasks"] == 0 for e in driver)
        # ... and that executor is the worker's: the worker lists it for our application.
        worker = spark.worker_state()
        on_worker = {str(e["id"]) for e in worker["executors"] if e["appid"] == app_id}
        assert on_worker and {e["id"] for e in remote} <= on_worker | {e["id"] for e in remote if not e["isActive"]}
        assert all(e["hostPort"].startswith("127.0.0.1:") for e in remote)
        # completed jobs include the backfill's
        jobs = _rest(f"{api}/jobs?status=succeeded")
        assert len(jobs) > 0

        # serverless backfill: a backfiller application of one core on the same Spark cluster
        with cluster.connect(fe) as conn, psycopg.connect(oracle_dsn, autocommit=True) as pg:
            conn.execute("CREATE MATERIALIZED VIEW per_city_sl WITH (cloud.serverless_backfill_enabled = true) AS "
                         "SELECT city, count(*) AS n FROM trips GROUP BY city")
            job_id = conn.execute("SELECT job_id FROM rw_catalog.rw_streaming_jobs WHERE name = 'per_city_sl'"
                                  ).fetchone()[0]
            copy_table(conn, pg, "trips")
            assert assert_same(conn, pg, "per_city_sl", "SELECT city, count(*) AS n FROM trips GROUP BY city") == 13
        state = spark.master_state()
        backfillers = [a for a in state["activeapps"] + state["completedapps"]
                       if a["name"] == f"risingspark-compute-backfill-0-{job_id}"]
        assert len(backfillers) == 1, [a["name"] for a in state["activeapps"] + state["completedapps"]]
        assert backfillers[0]["cores"] in (0, 1)  # 1 while it runs, 0 once it has finished
    except Exception:
        print(cluster.logs())
        raise
    finally:
        cluster.stop()
        spark.stop()
