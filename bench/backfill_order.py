"""Backfill order, printed as JSON: a 3-way join MV — a fact table of N rows (default 10M) LEFT JOIN two
dimension tables of N/100 rows each, every fact row matching — backfilled with ``backfill_order =
NONE`` (every scan at once, the baseline of this same run) and with ``FIXED(dims -> fact)``.

Per mode: the backfill's time (CREATE in the foreground), the change rows the MV's materialize
received while it backfilled (``risingspark_stream_materialize_input_rows_total``: a fact row that
arrives before its dimension rows is emitted with NULLs, then retracted and emitted again, so
retractions count here), and the peak rows in the join's state tables' SSTs (every version and
tombstone, as `rw_hummock_sstables` counts them, sampled every second; the live join state is the
same in both modes once done: both sides are kept whole). The MV is dropped between
modes; ratios are FIXED / NONE. The mode run first pays for the warm-up (Spark's first plans of
the join); ``--order FIXED,NONE`` swaps them.

Usage: ``python bench/backfill_order.py [--rows 10000000] [--dimension-rows N] [--order NONE,FIXED]
[--out r.json]``
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent))
from isolation import start_playground  # noqa: E402

QUERY = ("SELECT f.id, f.amount, a.name, b.label FROM fact f LEFT JOIN dim_a a ON f.a_id = a.id "
         "LEFT JOIN dim_b b ON f.b_id = b.id")


def load(conn: psycopg.Connection, n: int, dims: int) -> float:
    conn.execute("CREATE TABLE fact (id BIGINT PRIMARY KEY, a_id INT, b_id INT, amount INT)")
    conn.execute("CREATE TABLE dim_a (id INT PRIMARY KEY, name VARCHAR)")
    conn.execute("CREATE TABLE dim_b (id INT PRIMARY KEY, label VARCHAR)")
    started = time.perf_counter()
    conn.execute(f"INSERT INTO fact SELECT i, i % {dims}, (i * 7) % {dims}, i % 1000 "
                 f"FROM generate_series(1, {n}) AS g(i)")
    conn.execute(f"INSERT INTO dim_a SELECT i, 'a' || i FROM generate_series(0, {dims - 1}) AS g(i)")
    conn.execute(f"INSERT INTO dim_b SELECT i, 'b' || i FROM generate_series(0, {dims - 1}) AS g(i)")
    conn.execute("FLUSH")
    return time.perf_counter() - started


def materialize_rows(meta: str, job: str) -> int:
    text = httpx.get(f"{meta}/metrics", timeout=10).text
    pattern = re.compile(rf'^risingspark_stream_materialize_input_rows_total\{{[^}}]*job="{job}"[^}}]*\}} (\S+)$',
                         re.M)
    return sum(int(float(v)) for v in pattern.findall(text))


class StateSampler:
    """The peak SST rows (versions and tombstones included) of the given state tables, every second."""

    def __init__(self, dsn: str, tables: set[int]) -> None:
        self.dsn, self.tables, self.peak = dsn, tables, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> StateSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            while True:  # a last sample after the stop: the state as the backfill left it
                stopping = self._stop.wait(1.0)
                rows = conn.execute("SELECT table_id, sum(total_key_count) FROM rw_catalog.rw_hummock_sstables "
                                    "GROUP BY table_id").fetchall()
                self.peak = max(self.peak, sum(int(n) for t, n in rows if t in self.tables))
                if stopping:
                    return


def run_mode(dsn: str, meta: str, mode: str, n: int) -> dict:
    option = {"NONE": "NONE", "FIXED": "FIXED(dim_a -> fact, dim_b -> fact)"}[mode]
    mv = f"joined_{mode.lower()}"
    with psycopg.connect(dsn, autocommit=True) as conn:
        before = materialize_rows(meta, mv)
        conn.execute("SET background_ddl = true")
        started = time.perf_counter()
        conn.execute(f"CREATE MATERIALIZED VIEW {mv} WITH (backfill_order = {option}) AS {QUERY}")
        (mv_id, tables), = conn.execute("SELECT table_id, state_table_ids FROM rw_catalog.rw_fragments f "
                                        "JOIN rw_catalog.rw_relations r ON r.id = f.table_id WHERE r.name = %s",
                                        (mv,)).fetchall()
        with StateSampler(dsn, set(tables) - {mv_id}) as sampler:  # the join's state tables
            conn.execute(f"WAIT MATERIALIZED VIEW {mv}")
            seconds = time.perf_counter() - started
        emitted = materialize_rows(meta, mv) - before
        count = conn.execute(f"SELECT count(*) FROM {mv}").fetchone()[0]
        conn.execute(f"DROP MATERIALIZED VIEW {mv}")
    return {"mode": mode, "backfill_seconds": round(seconds, 2), "rows_per_s": round(n / seconds),
            "materialize_input_rows": emitted, "mv_rows": count, "peak_join_state_sst_rows": sampler.peak}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--order", default="NONE,FIXED", choices=["NONE,FIXED", "FIXED,NONE"],
                    help="the modes, in the order they run")
    ap.add_argument("--dimension-rows", type=int, help="rows of each dimension table (default: a hundredth)")
    ap.add_argument("--out")
    args = ap.parse_args()
    dims = args.dimension_rows or max(1, args.rows // 100)
    work = Path(tempfile.mkdtemp(prefix="bench-order-"))
    proc, port, meta_port = start_playground(work / "data", backfiller_cpu=1)
    dsn, meta = f"host=127.0.0.1 port={port} user=root dbname=dev", f"http://127.0.0.1:{meta_port}"
    try:
        with psycopg.connect(dsn, autocommit=True) as conn:
            load_s = load(conn, args.rows, dims)
        runs = [run_mode(dsn, meta, mode, args.rows) for mode in args.order.split(",")]
    finally:
        proc.terminate()
        proc.wait(120)
        shutil.rmtree(work, ignore_errors=True)
    by_mode = {r["mode"]: r for r in runs}
    none, fixed = by_mode["NONE"], by_mode["FIXED"]
    result = {"rows": args.rows, "dimension_rows": dims, "order": args.order, "load_seconds": round(load_s, 1),
              "runs": runs,
              "fixed_over_none": {
                  "backfill_seconds": round(fixed["backfill_seconds"] / none["backfill_seconds"], 3),
                  "materialize_input_rows": round(fixed["materialize_input_rows"]
                                                  / max(1, none["materialize_input_rows"]), 3),
                  "peak_join_state_sst_rows": round(fixed["peak_join_state_sst_rows"]
                                                    / max(1, none["peak_join_state_sst_rows"]), 3)}}
    print(json.dumps(result, indent=2))
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
