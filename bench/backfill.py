"""Backfill and write benchmarks, printed as JSON. Every figure comes with a baseline run by this same
script on this same machine, so results read as ratios:

* backfill throughput of the ``orders_summary`` MV over N rows (default 1M and 5M), against the same
  query as a plain Spark SQL batch job over the same rows (Spark local[*], read Parquet → filter →
  group by → write Parquet);
* INSERT throughput with multi-row VALUES, against PostgreSQL on 127.0.0.1:5432 given the same
  statements;
* INSERT → visible-in-the-MV latency (p50/p99), against the barrier interval.

Usage: ``python bench/backfill.py [--rows 1000000,5000000] [--out result.json]``
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psycopg

ORDERS = ("CREATE TABLE {t} (id BIGINT PRIMARY KEY, customer_id INT, amount NUMERIC(12,2), status VARCHAR, "
          "created_at TIMESTAMP)")
LOAD = ("INSERT INTO {t} SELECT i, i % 1000, (i % 500) + 0.99, CASE WHEN i % 10 = 0 THEN 'cancelled' ELSE 'paid' "
        "END, TIMESTAMP '2024-01-01' + i * INTERVAL '1 second' FROM generate_series(1, {n}) AS g(i)")
SUMMARY = ("SELECT customer_id, COUNT(*) AS order_count, SUM(amount) AS total_amount FROM {t} "
           "WHERE status <> 'cancelled' GROUP BY customer_id")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_playground(data_dir: Path) -> tuple[subprocess.Popen, int]:
    port, meta_port = free_port(), free_port()
    log = open(data_dir.parent / "playground.log", "wb")  # noqa: SIM115 - lives as long as the process
    proc = subprocess.Popen([sys.executable, "-m", "risingspark.cli", "playground", "--data-dir", str(data_dir),
                             "--port", str(port), "--meta-port", str(meta_port), "--spark-driver-memory", "6g"],
                            stdout=subprocess.PIPE, stderr=log, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    assert proc.stdout is not None
    for line in proc.stdout:
        if b"ready" in line:
            return proc, port
    raise RuntimeError("the playground did not start")


def bench_backfill(dsn: str, n: int) -> dict:
    t = f"orders_{n}"
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute(ORDERS.format(t=t))
        start = time.perf_counter()
        c.execute(LOAD.format(t=t, n=n))
        c.execute("FLUSH")
        load = time.perf_counter() - start
        start = time.perf_counter()
        c.execute(f"CREATE MATERIALIZED VIEW {t}_summary AS " + SUMMARY.format(t=t))
        backfill = time.perf_counter() - start
        groups = c.execute(f"SELECT count(*) FROM {t}_summary").fetchone()[0]
    return {"rows": n, "load_seconds": round(load, 2), "load_rows_per_s": round(n / load),
            "backfill_seconds": round(backfill, 2), "backfill_rows_per_s": round(n / backfill), "groups": groups}


def values_statements(table: str, statements: int, rows: int) -> list[str]:
    out = []
    for s in range(statements):
        base = s * rows
        vals = ", ".join(f"({base + i}, {i % 1000}, {i % 500}.99, 'paid', '2024-01-01 00:00:00')" for i in range(rows))
        out.append(f"INSERT INTO {table} VALUES {vals}")
    return out


def bench_insert(dsn: str, pg_dsn: str, statements: int = 100, rows: int = 1000) -> dict:
    stmts = values_statements("ins", statements, rows)
    result = {}
    for name, target in (("risingspark", dsn), ("postgres", pg_dsn)):
        with psycopg.connect(target, autocommit=True) as c:
            c.execute("DROP TABLE IF EXISTS ins")
            c.execute(ORDERS.format(t="ins"))
            start = time.perf_counter()
            for s in stmts:
                c.execute(s)
            elapsed = time.perf_counter() - start
        result[f"{name}_rows_per_s"] = round(statements * rows / elapsed)
    result["rows_per_statement"] = rows
    result["ratio_vs_postgres"] = round(result["risingspark_rows_per_s"] / result["postgres_rows_per_s"], 3)
    return result


def bench_latency(dsn: str, samples: int = 60) -> dict:
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("CREATE TABLE lat (id BIGINT PRIMARY KEY, k INT)")
        c.execute("CREATE MATERIALIZED VIEW lat_mv AS SELECT k, count(*) AS n FROM lat GROUP BY k")
        interval = int({r[0]: r[1] for r in c.execute("SHOW PARAMETERS").fetchall()}["barrier_interval_ms"])
        waits = []
        for i in range(samples):
            start = time.perf_counter()
            c.execute(f"INSERT INTO lat VALUES ({i}, {i})")
            while not c.execute(f"SELECT n FROM lat_mv WHERE k = {i}").fetchone():
                time.sleep(0.01)
            waits.append((time.perf_counter() - start) * 1000)
    waits.sort()
    return {"samples": samples, "p50_ms": round(statistics.median(waits)),
            "p99_ms": round(waits[min(len(waits) - 1, int(len(waits) * 0.99))]), "barrier_interval_ms": interval}


def spark_baseline(sizes: list[int], work: Path) -> dict[int, dict]:
    """The same query as a Spark SQL batch job over the same rows, in a fresh local SparkSession."""
    from compute.spark import SparkSettings, create_spark_session

    spark = create_spark_session(SparkSettings(app_name="bench-baseline", driver_memory="6g"))
    gen = ("id", "CAST(id % 1000 AS INT) AS customer_id", "CAST((id % 500) + 0.99 AS DECIMAL(12,2)) AS amount",
           "CASE WHEN id % 10 = 0 THEN 'cancelled' ELSE 'paid' END AS status",
           "TIMESTAMP_NTZ'2024-01-01 00:00:00' + make_interval(0, 0, 0, 0, 0, 0, id) AS created_at")
    out = {}
    for n in [100_000, *sizes]:  # the first size warms the JIT up
        src = str(work / f"orders_{n}.parquet")
        spark.range(1, n + 1).selectExpr(*gen).write.mode("overwrite").parquet(src)
        spark.read.parquet(src).createOrReplaceTempView(f"orders_{n}")
        start = time.perf_counter()
        spark.sql(SUMMARY.format(t=f"orders_{n}")).write.mode("overwrite").parquet(str(work / f"summary_{n}"))
        elapsed = time.perf_counter() - start
        out[n] = {"spark_batch_seconds": round(elapsed, 2), "spark_rows_per_s": round(n / elapsed)}
    spark.stop()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", default="1000000,5000000")
    parser.add_argument("--out", default=None)
    parser.add_argument("--only-backfill", action="store_true", help="skip the INSERT and latency parts")
    parser.add_argument("--keep", action="store_true", help="keep the work directory (and the playground's log)")
    parser.add_argument("--pg", default="host=127.0.0.1 port=5432 user=postgres dbname=postgres")
    args = parser.parse_args()
    sizes = [int(x) for x in args.rows.split(",")]
    work = Path(tempfile.mkdtemp(prefix="risingspark-bench-"))
    result: dict = {"machine": {"cores": os.cpu_count()}, "backfill": []}
    proc, port = start_playground(work / "data")
    dsn = f"host=127.0.0.1 port={port} user=root dbname=dev"
    try:
        for n in sizes:
            result["backfill"].append(bench_backfill(dsn, n))
            print(json.dumps(result["backfill"][-1]), file=sys.stderr)
        if not args.only_backfill:
            result["insert"] = bench_insert(dsn, args.pg)
            result["insert_to_visible"] = bench_latency(dsn)
    finally:
        proc.terminate()
        proc.wait(120)
    baseline = spark_baseline(sizes, work)
    for entry in result["backfill"]:
        entry.update(baseline[entry["rows"]])
        entry["ratio_vs_spark_batch"] = round(entry["backfill_rows_per_s"] / entry["spark_rows_per_s"], 3)
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        Path(args.out).write_text(text)
    if args.keep:
        print(f"work directory kept: {work}", file=sys.stderr)
    else:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
