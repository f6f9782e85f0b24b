"""A TPC-H-like join and aggregation over a big table in local and distributed mode: time and peak
memory of the frontend. Printed as JSON.

A fresh playground gets ``lineitem (id BIGINT PRIMARY KEY, orderkey INT, qty INT, price INT)`` with
``--rows`` rows (default 30M) and ``orders (orderkey INT PRIMARY KEY, priority INT)`` with a tenth as
many, then runs, each mode in turn (distributed first, so that local mode's cache of merged relations
is empty for both)::

    SELECT o.priority, count(*), sum(l.qty * l.price) FROM lineitem l JOIN orders o
    ON l.orderkey = o.orderkey GROUP BY o.priority

Reported per mode: seconds, and the peak resident memory of the playground's Python process (the
frontend; Spark's JVM and Python workers are its children, reported apart) over the query, as
growth over the idle process.

Then (``--select-all``, on by default) ``SELECT * FROM lineitem`` in local mode, read by the client
row by row (psycopg's ``stream``), twice: with the relation streamed (``rw_batch_stream_min_bytes =
0``, `frontend.batch_stream`) and read whole (the threshold above its size: the merged
relation, as every local query read it before). Reported the same way, with the rows per second.

Usage: ``python bench/query_modes.py [--rows 30000000] [--settle 30] [--no-join] [--no-select-all]
[--out result.json]``
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import psutil
import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent))
from state_scaling import RssSampler, start_playground, stop_playground  # noqa: E402

QUERY = ("SELECT o.priority, count(*), sum(l.qty * l.price) FROM lineitem l JOIN orders o "
         "ON l.orderkey = o.orderkey GROUP BY o.priority")


def select_all(c: psycopg.Connection, pid: int, rows: int) -> dict:
    """``SELECT * FROM lineitem`` streamed, then read whole (the merged relation stays cached after)."""
    out = {}
    c.execute("SET query_mode = local")
    for name, min_bytes in (("streamed", "0"), ("whole", str(1 << 62))):
        c.execute(f"SET rw_batch_stream_min_bytes = {min_bytes}")
        idle = psutil.Process(pid).memory_info().rss
        peak = RssSampler(pid, interval_s=0.2)
        started = time.perf_counter()
        count = sum(1 for _ in c.cursor().stream("SELECT * FROM lineitem"))
        seconds = time.perf_counter() - started
        peak.stop()
        assert count == rows, (name, count)
        out[name] = {"seconds": round(seconds, 1), "rows_per_s": round(count / seconds),
                     "frontend_peak_rss_growth_mb": round((peak.own_peak - idle) / 2**20),
                     "frontend_idle_rss_mb": round(idle / 2**20)}
    c.execute("SET rw_batch_stream_min_bytes = DEFAULT")
    out["whole_over_streamed_peak_growth"] = round(out["whole"]["frontend_peak_rss_growth_mb"]
                                                   / max(1, out["streamed"]["frontend_peak_rss_growth_mb"]), 1)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=30_000_000)
    parser.add_argument("--settle", type=float, default=30, help="seconds to wait after the load")
    parser.add_argument("--out", default=None)
    parser.add_argument("--keep", action="store_true", help="keep the playground's data and log")
    parser.add_argument("--join", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--select-all", action=argparse.BooleanOptionalAction, default=True)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="risingspark-bench-modes-"))
    proc, port, _ = start_playground(work / "data", [])
    result: dict = {"machine": {"cores": os.cpu_count()}, "rows": args.rows, "query": QUERY, "modes": {}}
    try:
        with psycopg.connect(f"host=127.0.0.1 port={port} user=root dbname=dev", autocommit=True) as c:
            started = time.perf_counter()
            c.execute("CREATE TABLE lineitem (id BIGINT PRIMARY KEY, orderkey INT, qty INT, price INT)")
            c.execute("CREATE TABLE orders (orderkey INT PRIMARY KEY, priority INT)")
            c.execute(f"INSERT INTO orders SELECT i, i % 5 FROM generate_series(1, {args.rows // 10}) AS s(i)")
            c.execute(f"INSERT INTO lineitem SELECT i, (i % {args.rows // 10}) + 1, i % 50, i % 1000 "
                      f"FROM generate_series(1, {args.rows}) AS s(i)")
            c.execute("FLUSH")
            result["load_s"] = round(time.perf_counter() - started, 1)
            time.sleep(args.settle)  # let compaction settle
            answers = {}
            if args.select_all:
                result["select_all"] = select_all(c, proc.pid, args.rows)
            for mode in ("distributed", "local") if args.join else ():
                c.execute(f"SET query_mode = {mode}")
                idle = psutil.Process(proc.pid).memory_info().rss
                peak = RssSampler(proc.pid, interval_s=0.2)
                started = time.perf_counter()
                answers[mode] = sorted(c.execute(QUERY).fetchall())
                seconds = time.perf_counter() - started
                peak.stop()
                own, children = peak.own_peak, peak.children_peak
                result["modes"][mode] = {"seconds": round(seconds, 1),
                                         "frontend_peak_rss_growth_mb": round((own - idle) / 2**20),
                                         "frontend_idle_rss_mb": round(idle / 2**20),
                                         "spark_children_peak_rss_mb": round(children / 2**20)}
            if args.join:
                result["same_answer"] = answers["local"] == answers["distributed"]
    finally:
        stop_playground(proc)
        if args.keep:
            print(f"kept {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        Path(args.out).write_text(text)


if __name__ == "__main__":
    main()
