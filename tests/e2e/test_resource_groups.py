"""Resource groups: a database created WITH (resource_group = 'rg') has its streaming jobs run by the
compute nodes of that group, which join the cluster with ``risingspark compute --resource-group
rg``; its MVs stay equal to PostgreSQL's answer; serverless backfill is refused there."""

from __future__ import annotations

import httpx
import psycopg
import pytest
from psycopg import errors

from conftest import PlaygroundProcess, unique_name
from support.cluster import ServiceProcess, free_port
from support.oracle import assert_same, copy_table

pytestmark = pytest.mark.e2e

QUERY = "SELECT g, count(*) AS n, sum(v) AS s FROM {t} GROUP BY g"


def _metric(text: str, name: str, **labels: str) -> float | None:
    for line in text.splitlines():
        if line.startswith(name + "{") and all(f'{k}="{v}"' in line for k, v in labels.items()):
            return float(line.rsplit(" ", 1)[1])
    return None


def test_database_jobs_run_on_their_resource_group(playground: PlaygroundProcess, oracle_dsn: str,
                                                   tmp_path) -> None:
    group = unique_name("rg")
    db = unique_name("db_rg")
    t = unique_name("rg_t")  # the oracle database is shared by the run: a name of its own
    with playground.connect() as conn:
        conn.execute(f"CREATE DATABASE {db} WITH (resource_group = '{group}')")
        assert conn.execute("SELECT resource_group FROM rw_catalog.rw_databases WHERE name = %s",
                            (db,)).fetchone() == (group,)
        with pytest.raises(errors.DuplicateDatabase):
            conn.execute(f"CREATE DATABASE {db}")
    dsn = playground.dsn.replace("dbname=dev", f"dbname={db}")
    node: ServiceProcess | None = None
    try:
        with psycopg.connect(dsn, autocommit=True) as conn:
            # no compute node in the group yet: a clear error, nothing created
            with pytest.raises(errors.SystemError, match=f'resource group "{group}" has no live compute node'):
                conn.execute(f"CREATE TABLE {t} (id BIGINT PRIMARY KEY, g INT, v INT)")
            node = ServiceProcess("compute", [
                "--resource-group", group, "--meta-address", f"http://127.0.0.1:{playground.meta_port}",
                "--port", str(free_port()), "--spark-master", "local[1]", "--spark-driver-memory", "1g"],
                tmp_path / "compute.log", 0).start()
            conn.execute(f"CREATE TABLE {t} (id BIGINT PRIMARY KEY, g INT, v INT)")
            conn.execute(f"INSERT INTO {t} SELECT i, i % 13, i % 100 FROM generate_series(1, 20000) AS s(i)")
            conn.execute("SET background_ddl = true")
            conn.execute(f"CREATE MATERIALIZED VIEW m AS {QUERY.format(t=t)}")
            conn.execute("WAIT")
            conn.execute(f"UPDATE {t} SET g = 99 WHERE id <= 100")
            conn.execute(f"DELETE FROM {t} WHERE id > 19900")
            conn.execute(f"INSERT INTO {t} VALUES (100001, 5, 5), (100002, 77, 7)")
            conn.execute("FLUSH")
            assert sorted(conn.execute("SELECT name, resource_group FROM rw_catalog.rw_streaming_jobs").fetchall()) \
                == sorted([("m", group), (t, group)])
            with psycopg.connect(oracle_dsn, autocommit=True) as pg:
                copy_table(conn, pg, t)
                assert_same(conn, pg, "m", QUERY.format(t=t))
            # the group's node ran the rounds: its own metrics count the MV's Spark jobs
            nodes = httpx.get(f"http://127.0.0.1:{playground.meta_port}/api/nodes", timeout=10).json()["nodes"]
            mine = next(n for n in nodes if n["resource_group"] == group)
            metrics = httpx.get(f"{mine['address']}/metrics", timeout=10).text
            assert (_metric(metrics, "risingspark_compute_spark_jobs_total", job="m", resource_group=group) or 0) > 0
            # serverless backfill is for databases of the default group only
            conn.execute("SET enable_serverless_backfill = true")
            with pytest.raises(errors.FeatureNotSupported, match=f'resource group "{group}"'):
                conn.execute(f"CREATE MATERIALIZED VIEW m2 AS {QUERY.format(t=t)}")
            conn.execute(f"DROP TABLE {t} CASCADE")
    finally:
        if node is not None:
            node.stop()
    with playground.connect() as conn:
        conn.execute(f"DROP DATABASE {db}")
        assert conn.execute("SELECT count(*) FROM rw_catalog.rw_databases WHERE name = %s", (db,)).fetchone() == (0,)
