"""A dbt project (tests/e2e/dbt_project) run end to end with dbt-risingwave against the playground:
seed, run, test, docs generate, a second run, and run --full-refresh. Results are checked against
PostgreSQL given the same seeds and queries.

dbt lives in its own virtual environment (`.venv-dbt`, made by `.ci/run`: dbt-core pins versions
the project's own tools do not accept); `RISINGSPARK_DBT` may name another dbt executable.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
from pathlib import Path

import psycopg
import pytest

from conftest import PlaygroundProcess, unique_name

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
PROJECT = Path(__file__).resolve().parent / "dbt_project"


def dbt_executable() -> str:
    for candidate in (os.environ.get("RISINGSPARK_DBT"), str(ROOT / ".venv-dbt" / "bin" / "dbt"), shutil.which("dbt")):
        if candidate and Path(candidate).exists():
            return candidate
    pytest.fail("dbt is not installed: run .ci/run, or make .venv-dbt with "
                "pip install 'dbt-risingwave==1.11.16' 'dbt-core~=1.11.0'")


class Dbt:
    def __init__(self, workdir: Path, playground: PlaygroundProcess, schema: str, source_schema: str) -> None:
        self.exe = dbt_executable()
        self.project = workdir / "project"
        shutil.copytree(PROJECT, self.project, ignore=shutil.ignore_patterns("target", "logs", "dbt_packages"))
        (workdir / "profiles.yml").write_text(
            "risingspark:\n  target: dev\n  outputs:\n    dev:\n"
            f"      type: risingwave\n      host: 127.0.0.1\n      port: {playground.port}\n"
            f"      user: root\n      pass: ''\n      dbname: dev\n      schema: {schema}\n      threads: 1\n"
            "      streaming_parallelism: 2\n      enable_serverless_backfill: false\n")
        self.workdir = workdir
        self.source_schema = source_schema

    def __call__(self, *args: str) -> str:
        cmd = [self.exe, *args, "--profiles-dir", str(self.workdir), "--project-dir", str(self.project),
               "--vars", json.dumps({"source_schema": self.source_schema})]
        env = {**os.environ, "DBT_SEND_ANONYMOUS_USAGE_STATS": "false", "DBT_USE_COLORS": "false"}
        out = subprocess.run(cmd, cwd=self.project, env=env, capture_output=True, text=True, timeout=600)
        assert out.returncode == 0, f"dbt {' '.join(args)} failed:\n{out.stdout[-6000:]}\n{out.stderr[-2000:]}"
        return out.stdout

    def log(self) -> str:
        return (self.project / "logs" / "dbt.log").read_text(errors="replace")


def _seed_rows(name: str) -> list[dict[str, str]]:
    with open(PROJECT / "seeds" / f"{name}.csv", newline="") as f:
        return list(csv.DictReader(f))


REVENUE = """
    select c.customer_id, c.country, count(*) as order_count, sum(o.amount) as revenue
    from orders o join customers c on o.customer_id = c.customer_id
    where o.status <> 'cancelled'
    group by c.customer_id, c.country order by c.customer_id"""


def _oracle_revenue(dsn: str) -> list[tuple]:
    with psycopg.connect(dsn, autocommit=True) as pg:
        pg.execute("drop table if exists customers, orders")
        pg.execute("create table customers (customer_id int, name varchar, country varchar)")
        pg.execute("create table orders (order_id int, customer_id int, amount numeric(10,2), status varchar)")
        with pg.cursor() as cur:
            cur.executemany("insert into customers values (%(customer_id)s, %(name)s, %(country)s)",
                            _seed_rows("customers"))
            cur.executemany("insert into orders values (%(order_id)s, %(customer_id)s, %(amount)s, %(status)s)",
                            _seed_rows("orders"))
        return pg.execute(REVENUE).fetchall()


def _relation_ids(conn: psycopg.Connection, schema: str) -> dict[str, tuple[int, str]]:
    rows = conn.execute("select r.name, r.id, r.relation_type from rw_relations r join rw_schemas s "
                        "on r.schema_id = s.id where s.name = %s", (schema,)).fetchall()
    return {name: (rid, kind) for name, rid, kind in rows}


def test_dbt_project(playground: PlaygroundProcess, tmp_path: Path, oracle_dsn: str) -> None:
    schema, source_schema = unique_name("dbt"), unique_name("dbt_src")
    conn = playground.connect()
    conn.execute(f"create schema {source_schema}")
    conn.execute(f"create table {source_schema}.events (event_id int primary key, kind varchar, value int)")
    conn.execute(f"insert into {source_schema}.events values (1, 'a', 1), (2, 'b', 2), (3, 'a', 3)")
    conn.execute("flush")
    dbt = Dbt(tmp_path, playground, schema, source_schema)
    expected = _oracle_revenue(oracle_dsn)

    dbt("seed")
    dbt("run")
    revenue = f"select customer_id, country, order_count, revenue from {schema}.customer_revenue order by 1"
    assert conn.execute(revenue).fetchall() == expected
    assert conn.execute(f"select kind, events, total from {schema}.event_counts order by 1").fetchall() == \
        [("a", 2, 4), ("b", 1, 2)]
    assert conn.execute(f'select count(*), count(distinct order_id) from "dev"."{schema}"."orders_snapshot"') \
        .fetchone() == (7, 7)
    first = _relation_ids(conn, schema)
    assert {k: v[1] for k, v in first.items()} == {
        "customers": "table", "orders": "table", "stg_orders": "view", "dim_customers": "table",
        "customer_revenue": "materialized view", "event_counts": "materialized view",
        "big_orders": "materialized view", "orders_snapshot": "table",
        "__dbt_index_customer_revenue_country": "index"}
    log = dbt.log()
    assert f'WAIT MATERIALIZED VIEW "{schema}"."event_counts"' in log  # background_ddl=true
    assert "create index if not exists" in log

    # the materialized views stay up to date
    conn.execute(f"insert into {source_schema}.events values (4, 'c', 10), (5, 'a', 5)")
    conn.execute("flush")
    assert conn.execute(f"select kind, events, total from {schema}.event_counts order by 1").fetchall() == \
        [("a", 3, 9), ("b", 1, 2), ("c", 1, 10)]

    out = dbt("test")
    assert "PASS=15" in out and "ERROR=0" in out

    dbt("docs", "generate")
    catalog = json.loads((dbt.project / "target" / "catalog.json").read_text())
    node = catalog["nodes"]["model.risingspark_shop.customer_revenue"]
    assert node["metadata"]["type"] == "MATERIALIZED VIEW"
    assert node["metadata"]["comment"] == "Revenue per customer, kept up to date"
    assert list(node["columns"]) == ["customer_id", "country", "order_count", "revenue"]
    assert node["columns"]["customer_id"]["comment"] == "The customer"

    # a second run keeps the existing views and materialized views (no drop, no backfill again);
    # the incremental model runs its delete+insert
    dbt("run")
    second = _relation_ids(conn, schema)
    for name in ("customer_revenue", "event_counts", "big_orders", "stg_orders", "dim_customers",
                 "__dbt_index_customer_revenue_country"):
        assert second[name] == first[name], name
    assert 'delete from "dev"."' + schema + '"."orders_snapshot"' in dbt.log()
    assert conn.execute(f"select count(*), count(distinct order_id) from {schema}.orders_snapshot").fetchone() == (7, 7)
    assert conn.execute(revenue).fetchall() == expected

    # --full-refresh drops (cascade) and recreates
    dbt("run", "--full-refresh")
    third = _relation_ids(conn, schema)
    assert set(third) == set(first)
    for name in ("customer_revenue", "event_counts", "big_orders", "dim_customers",
                 "__dbt_index_customer_revenue_country"):
        assert third[name][0] != first[name][0], name
    assert conn.execute(revenue).fetchall() == expected
    assert conn.execute(f"select kind, events, total from {schema}.event_counts order by 1").fetchall() == \
        [("a", 3, 9), ("b", 1, 2), ("c", 1, 10)]
    assert conn.execute(f"select count(*), count(distinct order_id) from {schema}.orders_snapshot").fetchone() == (7, 7)
    out = dbt("test")
    assert "PASS=15" in out

    conn.execute(f"drop schema {schema} cascade")
    conn.execute(f"drop schema {source_schema} cascade")
    assert not _relation_ids(conn, schema)
    conn.close()
