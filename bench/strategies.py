"""Backfill strategies compared, printed as JSON, every figure against a baseline of the same run:

* per strategy (snapshot, arrangement, no-shuffle): backfill rows/s of a GROUP BY MV over N rows
  (default 1M and 10M), against the same query as a plain Spark SQL batch job over the same rows;
* peak RSS of the compute (the playground's process tree: Python, the JVM, Spark's Python workers)
  while each backfill runs, at each history size;
* INSERT → visible latency (p50/p99) of an existing MV while a backfill runs, with and without a
  rate limit, against the same probe on an idle cluster;
* bounded memory: peak RSS of a backfill under a steady upstream update stream, held twice as long
  in the second run (the rate limit doubles the backfill's duration).

Usage: ``python bench/strategies.py [--rows 1000000,10000000] [--out result.json]``
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent))
from backfill import LOAD, ORDERS, SUMMARY, spark_baseline, start_playground  # noqa: E402

STRATEGIES = {
    "SNAPSHOT_BACKFILL": ("SET streaming_use_snapshot_backfill = true",),
    "ARRANGEMENT_BACKFILL": ("SET streaming_use_snapshot_backfill = false",
                             "SET streaming_use_arrangement_backfill = true"),
    "NO_SHUFFLE_BACKFILL": ("SET streaming_use_snapshot_backfill = false",
                            "SET streaming_use_arrangement_backfill = false"),
}


def tree_rss_mb(pid: int) -> float:
    """Resident memory of a process and all its descendants, in MiB."""
    children: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            ppid = int(Path(f"/proc/{d}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(d))
    total, stack = 0, [pid]
    while stack:
        p = stack.pop()
        stack.extend(children.get(p, []))
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            pass
    return total / 1024


class PeakRss:
    """Samples the process tree's RSS in the background; `peak` is the highest sample."""

    def __init__(self, pid: int) -> None:
        self.pid, self.peak, self._stop = pid, 0.0, threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, tree_rss_mb(self.pid))
            self._stop.wait(0.2)

    def __enter__(self) -> PeakRss:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


class LatencyProbe:
    """Inserts a row every 100 ms into a table with an existing MV and measures when it shows up."""

    def __init__(self, dsn: str, table: str) -> None:
        self.dsn, self.table, self.samples = dsn, table, []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._next = int(time.time() * 1000)

    def _run(self) -> None:
        with psycopg.connect(self.dsn, autocommit=True) as c:
            while not self._stop.is_set():
                k = self._next = self._next + 1
                start = time.perf_counter()
                c.execute(f"INSERT INTO {self.table} VALUES ({k}, {k})")
                while not self._stop.is_set() and not c.execute(
                        f"SELECT n FROM {self.table}_mv WHERE k = {k}").fetchone():
                    time.sleep(0.01)
                self.samples.append((time.perf_counter() - start) * 1000)
                time.sleep(0.1)

    def __enter__(self) -> LatencyProbe:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def summary(self) -> dict:
        s = sorted(self.samples)
        if not s:
            return {"samples": 0}
        return {"samples": len(s), "p50_ms": round(statistics.median(s)),
                "p99_ms": round(s[min(len(s) - 1, int(len(s) * 0.99))])}


def backfill(dsn: str, pid: int, table: str, strategy: str, rate: int | None = None) -> dict:
    with psycopg.connect(dsn, autocommit=True) as c:
        for stmt in STRATEGIES[strategy]:
            c.execute(stmt)
        c.execute(f"SET backfill_rate_limit = {rate if rate is not None else -1}")
        mv = f"{table}_{strategy.split('_')[0].lower()}"
        with PeakRss(pid) as rss:
            start = time.perf_counter()
            c.execute(f"CREATE MATERIALIZED VIEW {mv} AS " + SUMMARY.format(t=table))
            elapsed = time.perf_counter() - start
        c.execute(f"DROP MATERIALIZED VIEW {mv}")
    return {"seconds": round(elapsed, 2), "peak_rss_mb": round(rss.peak)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", default="1000000,10000000")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    sizes = [int(x) for x in args.rows.split(",")]
    work = Path(tempfile.mkdtemp(prefix="risingspark-bench-"))
    proc, port = start_playground(work / "data")
    dsn = f"host=127.0.0.1 port={port} user=root dbname=dev"
    result: dict = {"machine": {"cores": os.cpu_count()}, "strategies": {}}
    try:
        with psycopg.connect(dsn, autocommit=True) as c:
            c.execute("CREATE TABLE probe (id BIGINT PRIMARY KEY, k BIGINT)")
            c.execute("CREATE MATERIALIZED VIEW probe_mv AS SELECT k, count(*) AS n FROM probe GROUP BY k")
        with LatencyProbe(dsn, "probe") as idle:
            time.sleep(15)
        result["latency_idle"] = idle.summary()
        for n in sizes:
            t = f"orders_{n}"
            with psycopg.connect(dsn, autocommit=True) as c:
                c.execute(ORDERS.format(t=t))
                c.execute(LOAD.format(t=t, n=n))
                c.execute("FLUSH")
            for strategy in STRATEGIES:
                r = backfill(dsn, proc.pid, t, strategy)
                r["rows_per_s"] = round(n / r["seconds"])
                result["strategies"].setdefault(strategy, {})[n] = r
                print(json.dumps({strategy: {n: r}}), file=sys.stderr)
        # An existing MV's latency while a backfill runs, unthrottled and throttled.
        big = f"orders_{sizes[-1]}"
        for label, rate in (("latency_during_backfill", None), ("latency_during_rate_limited_backfill", 500_000)):
            with LatencyProbe(dsn, "probe") as probe:
                backfill(dsn, proc.pid, big, "SNAPSHOT_BACKFILL", rate)
            result[label] = probe.summary()
        # Bounded memory: the same backfill under a steady update stream, held 1x and 2x as long.
        small = f"orders_{sizes[0]}"
        stop = threading.Event()

        def updates() -> None:
            with psycopg.connect(dsn, autocommit=True) as c:
                i = 0
                while not stop.is_set():
                    i += 1
                    c.execute(f"UPDATE {small} SET amount = amount + 1 WHERE id % 1000 = {i % 1000}")
                    time.sleep(0.05)

        memory = {}
        for label, rate in (("1x", 100_000), ("2x", 50_000)):
            stop.clear()
            updater = threading.Thread(target=updates, daemon=True)
            updater.start()
            memory[label] = backfill(dsn, proc.pid, small, "ARRANGEMENT_BACKFILL", rate)
            stop.set()
            updater.join()
        result["bounded_memory_under_updates"] = memory
    finally:
        proc.terminate()
        proc.wait(120)
    baseline = spark_baseline(sizes, work)
    for _strategy, per_size in result["strategies"].items():
        for n, r in per_size.items():
            r.update(baseline[n])
            r["ratio_vs_spark_batch"] = round(r["rows_per_s"] / baseline[n]["spark_rows_per_s"], 3)
    text = json.dumps(result, indent=2, default=str)
    print(text)
    if args.out:
        Path(args.out).write_text(text)
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
