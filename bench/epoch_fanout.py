"""An epoch's cost as the views over one table grow, printed as JSON.

A table feeds materialized views of the shapes the workload tests have (group-by aggregates,
filters, a top-N, a self join, a global aggregate), added in steps (``--views 1,8,16``). At each
step, rounds of an INSERT and an UPDATE of a row or two, each closed by a FLUSH: the round's time is
the FLUSH's latency, and the playground's CPU (its process tree, `psutil`) over the rounds is divided
by them. So few rows change that what is measured is an epoch's fixed cost per view, which a workload
of many views pays every round whatever its data. ``marginal`` is the cost per added view between the
first and the last step; the ratios compare the steps in the same playground.

Usage: ``python bench/epoch_fanout.py [--views 1,8,16] [--rounds 12]``
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import psutil
import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from conftest import PlaygroundProcess  # noqa: E402

SHAPES = (
    "SELECT g, count(*) AS n, sum(v) AS s FROM t GROUP BY g",
    "SELECT k, v FROM t WHERE v % {i} = 0",
    "SELECT g, max(v) AS m, min(v) AS lo FROM t WHERE k > {i} GROUP BY g",
    "SELECT k, g, v FROM t ORDER BY v DESC LIMIT {i}",
    "SELECT a.k, b.v FROM t a JOIN t b ON a.g = b.k WHERE a.v > {i}",
    "SELECT count(*) AS n, sum(v + {i}) AS s FROM t",
)


def process_cpu(proc: psutil.Process) -> float:
    total = 0.0
    for p in [proc, *proc.children(recursive=True)]:
        try:
            t = p.cpu_times()
            total += t.user + t.system
        except psutil.NoSuchProcess:
            pass
    return total


def measure(c: psycopg.Connection, root: psutil.Process, rounds: int, first_key: int) -> dict:
    for _ in range(3):  # warm-up rounds
        c.execute("UPDATE t SET v = v + 1 WHERE k < 5")
        c.execute("FLUSH")
    cpu0, times = process_cpu(root), []
    for r in range(rounds):
        c.execute("INSERT INTO t VALUES (%s, %s, %s)", (first_key + r, r % 10, r))
        c.execute("UPDATE t SET v = v + 1 WHERE k = %s", (r + 1,))
        started = time.monotonic()
        c.execute("FLUSH")
        times.append(time.monotonic() - started)
    cpu = process_cpu(root) - cpu0
    return {"round_s_median": round(statistics.median(times), 3), "round_s_mean": round(statistics.mean(times), 3),
            "cpu_s_per_round": round(cpu / rounds, 3)}


def check_views(c: psycopg.Connection, views: int) -> None:
    """Each view equals its query run now as a batch query (top-N views, whose ties may differ, aside)."""
    for i in range(views):
        q = SHAPES[i % len(SHAPES)].format(i=i % 7 + 2)
        if "LIMIT" in q:
            continue
        got = sorted(map(repr, c.execute(f"SELECT * FROM m{i}").fetchall()))
        want = sorted(map(repr, c.execute(q).fetchall()))
        assert got == want, f"m{i} differs from its query: {got[:5]} {want[:5]}"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--views", default="1,8,16")
    ap.add_argument("--rounds", type=int, default=12)
    args = ap.parse_args()
    steps = sorted({int(v) for v in args.views.split(",")})
    base = Path(tempfile.mkdtemp(prefix="epoch-fanout-"))
    results = {}
    try:
        (base / "pg").mkdir()
        pg = PlaygroundProcess(base / "pg" / "data").start()
        try:
            assert pg.proc is not None
            root = psutil.Process(pg.proc.pid)
            with pg.connect() as c:
                c.execute("CREATE TABLE t (k INT PRIMARY KEY, g INT, v INT)")
                c.execute("INSERT INTO t SELECT i, i % 10, i * 7 % 101 FROM generate_series(1, 1000) AS i")
                made = 0
                for n in steps:
                    for i in range(made, n):
                        c.execute(f"CREATE MATERIALIZED VIEW m{i} AS " + SHAPES[i % len(SHAPES)].format(i=i % 7 + 2))
                    made = n
                    results[n] = measure(c, root, args.rounds, 10_000 * (len(results) + 1))
                    check_views(c, n)
                    print(json.dumps({"views": n, **results[n]}), file=sys.stderr, flush=True)
        finally:
            pg.stop()
    finally:
        shutil.rmtree(base, ignore_errors=True)
    lo, hi = steps[0], steps[-1]
    out: dict = {"rounds": args.rounds, "steps": {str(n): r for n, r in results.items()}}
    if hi > lo:
        span = hi - lo
        out["marginal_per_view"] = {
            "round_s": round((results[hi]["round_s_median"] - results[lo]["round_s_median"]) / span, 4),
            "cpu_s": round((results[hi]["cpu_s_per_round"] - results[lo]["cpu_s_per_round"]) / span, 4)}
        out["ratio_last_to_first"] = {
            "round_s": round(results[hi]["round_s_median"] / results[lo]["round_s_median"], 3),
            "cpu_s": round(results[hi]["cpu_s_per_round"] / results[lo]["cpu_s_per_round"], 3)}
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
