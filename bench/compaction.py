"""Compaction under a steady upsert load, and under a backfill at full speed. Printed as JSON.

**(a) steady load.** A fresh playground loads ``big (id BIGINT PRIMARY KEY, g INT, payload VARCHAR)``
with ``--rows`` rows (default 15M, ``INSERT ... SELECT ... FROM generate_series`` in loads of 5M) and
one materialized view ``sum_mv`` (``SELECT g, count(*), sum(id) FROM big GROUP BY g``), waits until
compaction has worked the load off, times a batch count of every row (best of 3), then
upserts ``--rate`` rows/s (default 10,000) with random keys for ``--seconds`` (default 600). Every
2 s it samples meta's ``/metrics``: the deepest L0 of any state table (max and p99 over the
window), write stalls. At the end: the write amplification of the window (bytes written by
compaction / bytes flushed by checkpoints, both counted by meta), the largest compaction task's input
bytes (meta's gauge, since it started: the load included), the count again, and the rate the
writer achieved. Goals of the issue: WA <= 12, L0 <= 12 sub-levels at p99, largest task <= 256 MB,
count(*) at the end <= 1.2x the start.

**(b) a backfill at full speed while the writes go on.** ``CREATE MATERIALIZED VIEW bf_mv AS SELECT
id, g, payload FROM big WHERE id <= --backfill-rows`` (default 10M: a snapshot backfill) with the
writer still at ``--rate``, the write-stall threshold at ``--stall-threshold`` sub-levels (default
32). Reported: the backfill's duration, the deepest L0 while it ran, stalls engaged, the writer's
achieved rate, and a check that nothing was lost (``bf_mv`` holds exactly the rows of ``big`` with
``id <= --backfill-rows`` once flushed). Run twice: in (a)'s playground (one compactor, serverless
compaction off), and in a second playground with serverless compaction on (``--serverless-max``
extra compactors, one per ``--serverless-pending-mb``), loaded the same way.

Usage: ``python bench/compaction.py [--rows 15000000] [--rate 10000] [--seconds 600]
[--backfill-rows 10000000] [--out result.json]``
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
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
from state_scaling import (  # noqa: E402
    GROUPS,
    LOAD_CHUNK,
    RssSampler,
    Writer,
    metric_sum,
    percentile,
    start_playground,
    stop_playground,
    wait_for_compaction,
)


def metrics(meta_port: int) -> str:
    return httpx.get(f"http://127.0.0.1:{meta_port}/metrics", timeout=10).text


def series(text: str, name: str) -> list[float]:
    return [float(v) for v in re.findall(rf"^{name}(?:\{{[^}}]*\}})? (\S+)$", text, re.M)]


class Sampler:
    """Every 2 s: the deepest L0 of any state table, and write-stall counters, from ``/metrics``."""

    def __init__(self, meta_port: int) -> None:
        self.meta_port = meta_port
        self.l0: list[float] = []
        self.stalled_samples = 0
        self.extra_compactors = 0  # the most serverless compactors running at once
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(2.0):
            try:
                text = metrics(self.meta_port)
            except httpx.HTTPError:
                continue
            self.l0.append(max(series(text, "risingspark_storage_l0_sub_levels"), default=0.0))
            self.stalled_samples += int(max(series(text, "risingspark_storage_write_stall"), default=0.0) > 0)
            with contextlib.suppress(httpx.HTTPError, KeyError, ValueError):
                state = httpx.get(f"http://127.0.0.1:{self.meta_port}/api/serverless_compaction", timeout=10).json()
                self.extra_compactors = max(self.extra_compactors, len(state["compactors"]))

    def stop(self) -> dict:
        self._stop.set()
        self._thread.join()
        return {"l0_max": max(self.l0, default=0), "l0_p99": percentile(self.l0, 0.99),
                "l0_p50": percentile(self.l0, 0.5), "samples": len(self.l0),
                "samples_stalled": self.stalled_samples, "extra_compactors_max": self.extra_compactors}


def count_time(dsn: str) -> float:
    """Best of 3 of a batch count that reads every row: ``count(*) ... WHERE g >= 0`` (a bare
    ``count(*)`` of a table is answered from its row count, reading nothing)."""
    best = float("inf")
    with psycopg.connect(dsn, autocommit=True) as c:
        for _ in range(3):
            started = time.perf_counter()
            c.execute("SELECT count(*) FROM big WHERE g >= 0").fetchone()
            best = min(best, time.perf_counter() - started)
    return round(best, 3)


def load(dsn: str, rows: int) -> dict:
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("CREATE TABLE big (id BIGINT PRIMARY KEY, g INT, payload VARCHAR)")
        c.execute("CREATE MATERIALIZED VIEW sum_mv AS SELECT g, count(*) AS n, sum(id) AS total FROM big GROUP BY g")
        started = time.perf_counter()
        for first in range(1, rows + 1, LOAD_CHUNK):
            last = min(rows, first + LOAD_CHUNK - 1)
            c.execute(f"INSERT INTO big SELECT i, (i * 7919) % {GROUPS}, md5(i::varchar) "
                      f"FROM generate_series({first}, {last}) AS s(i)")
            c.execute("FLUSH")
        return {"load_s": round(time.perf_counter() - started, 1)}


def steady(dsn: str, meta_port: int, rows: int, rate: int, seconds: float) -> dict:
    out: dict = {"count_start_s": count_time(dsn)}
    flushed0 = metric_sum(meta_port, "risingspark_storage_flush_bytes_total")
    written0 = metric_sum(meta_port, "risingspark_compaction_write_bytes_total")
    stalls0 = metric_sum(meta_port, "risingspark_storage_write_stalls_total")
    tasks0 = metric_sum(meta_port, "risingspark_compaction_tasks_total")
    sampler = Sampler(meta_port)
    with Writer(dsn, rate, rows, seed=1) as w:
        time.sleep(seconds)
    out.update(sampler.stop())
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("FLUSH")
    flushed = metric_sum(meta_port, "risingspark_storage_flush_bytes_total") - flushed0
    written = metric_sum(meta_port, "risingspark_compaction_write_bytes_total") - written0
    out.update({
        "offered_rows_per_s": rate, "achieved_rows_per_s": round(w.written / w.elapsed),
        "flushed_mb": round(flushed / 2**20, 1), "compaction_written_mb": round(written / 2**20, 1),
        "write_amplification": round(written / flushed, 2) if flushed else None,
        "compaction_tasks": int(metric_sum(meta_port, "risingspark_compaction_tasks_total") - tasks0),
        "stalls": int(metric_sum(meta_port, "risingspark_storage_write_stalls_total") - stalls0),
        "largest_task_mb": round(metric_sum(meta_port, "risingspark_compaction_largest_task_input_bytes") / 2**20, 1),
        "count_end_s": count_time(dsn),
    })
    out["count_ratio"] = round(out["count_end_s"] / out["count_start_s"], 2) if out["count_start_s"] else None
    return out


def backfill(dsn: str, meta_port: int, rows: int, rate: int, backfill_rows: int, stall_threshold: int) -> dict:
    stalls0 = metric_sum(meta_port, "risingspark_storage_write_stalls_total")
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute(f"ALTER SYSTEM SET level0_stop_write_threshold_sub_level_number = {stall_threshold}")
        sampler = Sampler(meta_port)
        with Writer(dsn, rate, rows, seed=2) as w:
            time.sleep(10)
            started = time.perf_counter()
            c.execute(f"CREATE MATERIALIZED VIEW bf_mv AS SELECT id, g, payload FROM big WHERE id <= {backfill_rows}")
            took = time.perf_counter() - started
            time.sleep(10)
        out = sampler.stop()
        c.execute("FLUSH")
        expected = c.execute(f"SELECT count(*) FROM big WHERE id <= {backfill_rows}").fetchone()[0]
        got = c.execute("SELECT count(*) FROM bf_mv").fetchone()[0]
        c.execute("ALTER SYSTEM SET level0_stop_write_threshold_sub_level_number = DEFAULT")
    out.update({"backfill_s": round(took, 1), "backfill_rows": int(got), "complete": int(got) == int(expected),
                "offered_rows_per_s": rate, "achieved_rows_per_s": round(w.written / w.elapsed),
                "stalls": int(metric_sum(meta_port, "risingspark_storage_write_stalls_total") - stalls0),
                "stall_threshold": stall_threshold})
    return out


def playground(work: Path, name: str, extra: list[str]):
    proc, port, meta_port = start_playground(work / name, extra)
    return proc, f"host=127.0.0.1 port={port} user=root dbname=dev", meta_port


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=15_000_000)
    parser.add_argument("--rate", type=int, default=10_000)
    parser.add_argument("--seconds", type=float, default=600)
    parser.add_argument("--backfill-rows", type=int, default=10_000_000)
    parser.add_argument("--stall-threshold", type=int, default=32)
    parser.add_argument("--serverless-max", type=int, default=2)
    parser.add_argument("--serverless-pending-mb", type=int, default=64)
    parser.add_argument("--skip-serverless", action="store_true")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="risingspark-bench-compaction-"))
    result: dict = {"machine": {"cores": os.cpu_count()}, "rows": args.rows, "rate": args.rate,
                    "seconds": args.seconds}

    def note(key: str, value) -> None:
        result[key] = value
        print(json.dumps({key: value}), file=sys.stderr, flush=True)

    try:
        proc, dsn, meta_port = playground(work, "one-compactor", [])
        rss = RssSampler(proc.pid)
        try:
            note("load", {**load(dsn, args.rows), "settle_s": wait_for_compaction(meta_port)})
            note("steady", steady(dsn, meta_port, args.rows, args.rate, args.seconds))
            note("backfill_serverless_off", backfill(dsn, meta_port, args.rows, args.rate, args.backfill_rows,
                                                     args.stall_threshold))
            result["peak_rss_mb"] = round(rss.peak / 2**20)
        finally:
            rss.stop()
            stop_playground(proc)
        shutil.rmtree(work / "one-compactor", ignore_errors=True)
        if not args.skip_serverless:
            config = work / "serverless.toml"
            config.write_text(f"[serverless_compaction]\nenabled = true\nmax_compactors = {args.serverless_max}\n"
                              f"pending_mb = {args.serverless_pending_mb}\nidle_s = 30\n")
            proc, dsn, meta_port = playground(work, "serverless", ["--config", str(config)])
            try:
                note("load_serverless", {**load(dsn, args.rows), "settle_s": wait_for_compaction(meta_port)})
                note("backfill_serverless_on", backfill(dsn, meta_port, args.rows, args.rate, args.backfill_rows,
                                                        args.stall_threshold))
            finally:
                stop_playground(proc)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        Path(args.out).write_text(text)


if __name__ == "__main__":
    main()
