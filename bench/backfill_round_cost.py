"""What a barrier round pays for carrying an arrangement backfill, printed as JSON: the existing jobs'
barrier latency (p50/p99) and Spark jobs a round under a steady DML load, (a) with no backfill, (b)
with an arrangement backfill at a fixed limit of `--low` rows/s per parallelism, (c) the same backfill
paused (limit 0: its Spark job still runs, reading nothing), (d) at `--high`. The baseline is (a) of the
same run; the ratios (b)/(a), (c)/(a), (d)/(a) say how much of a backfill round's cost is fixed (paid
at any rows read) and how much follows its rows — what the adaptive rate (`meta.backfill_rate`)
cannot remove by lowering its limit (docs/notes/issue-16.md, 2026-12-07 sixth).

Usage: ``python bench/backfill_round_cost.py [--rows 4000000] [--phase-s 40] [--low 1000]
[--high 50000] [--out r.json]``
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent))
from backfill import LOAD, ORDERS, SUMMARY  # noqa: E402
from isolation import BarrierRecorder, dml_load, start_playground, summary  # noqa: E402

ROUND_LINE = re.compile(r"committed in \d+ ms \((\d+) Spark jobs")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=4_000_000, help="history rows of the backfilled MV's upstream")
    parser.add_argument("--phase-s", type=float, default=40.0, help="length of each phase")
    parser.add_argument("--low", type=int, default=1000, help="the low fixed limit, rows/s per parallelism")
    parser.add_argument("--high", type=int, default=50_000, help="the high fixed limit (low enough that the backfill outlasts its phase)")
    parser.add_argument("--dml-rate", type=int, default=1000, help="changes/s to the existing jobs")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="rs-round-cost-"))
    proc, port, meta_port = start_playground(root / "data", backfiller_cpu=1)
    dsn = f"host=127.0.0.1 port={port} user=root dbname=dev"
    log = root / "playground.log"
    result: dict = {"rows": args.rows, "dml_rate": args.dml_rate, "limits": [args.low, 0, args.high], "phases": {}}
    stop = threading.Event()
    try:
        with psycopg.connect(dsn, autocommit=True) as c:
            c.execute(ORDERS.format(t="orders"))
            c.execute(LOAD.format(t="orders", n=args.rows))
            c.execute("FLUSH")
            c.execute("CREATE TABLE events (id BIGINT PRIMARY KEY, k INT, v INT)")
            c.execute("CREATE MATERIALIZED VIEW events_by_k AS SELECT k, count(*) AS n, sum(v) AS s FROM events "
                      "GROUP BY k")
            c.execute("CREATE MATERIALIZED VIEW events_v AS SELECT id, v FROM events WHERE v > 2")
        recorder = BarrierRecorder(f"http://127.0.0.1:{meta_port}")
        recorder.start()
        written = [0]
        threading.Thread(target=dml_load, args=(dsn, args.dml_rate, stop, written), daemon=True).start()
        time.sleep(5)  # the load settles

        def phase(name: str) -> None:
            t0, log_at = time.time(), log.stat().st_size
            time.sleep(args.phase_s)
            text = log.read_bytes()[log_at:].decode(errors="replace")
            jobs = [int(n) for n in ROUND_LINE.findall(text)]
            result["phases"][name] = {**summary(recorder.between(t0, time.time())),
                                      "spark_jobs_per_round": round(statistics.fmean(jobs), 2) if jobs else None}

        phase("a_idle")
        with psycopg.connect(dsn, autocommit=True) as c:
            c.execute("SET streaming_use_snapshot_backfill = false")
            c.execute("SET streaming_use_arrangement_backfill = true")
            c.execute("SET background_ddl = true")
            c.execute(f"SET backfill_rate_limit = {args.low}")
            c.execute("CREATE MATERIALIZED VIEW summary_m AS " + SUMMARY.format(t="orders"))
            time.sleep(5)
            phase("b_low")
            for name, limit in (("c_paused", 0), ("d_high", args.high)):
                c.execute(f"ALTER MATERIALIZED VIEW summary_m SET BACKFILL_RATE_LIMIT = {limit}")
                time.sleep(3)  # (the new limit reaches the rounds)
                phase(name)
        idle = result["phases"]["a_idle"]
        for name in ("b_low", "c_paused", "d_high"):
            p = result["phases"][name]
            if p.get("barriers") and idle.get("barriers"):
                p["p50_vs_idle"] = round(p["p50_s"] / idle["p50_s"], 2)
                p["p99_vs_idle"] = round(p["p99_s"] / idle["p99_s"], 2)
    finally:
        stop.set()
        proc.terminate()
        try:
            proc.wait(30)
        except Exception:  # noqa: BLE001 - a playground that will not stop is killed
            proc.kill()
    text = json.dumps(result, indent=2)
    if args.out:
        args.out.write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
