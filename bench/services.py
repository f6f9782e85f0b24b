"""Statement latency through a frontend process that reaches meta over RPC, against the playground
(frontend and meta in one process) as the baseline, printed as JSON: p50/p90 of ``SELECT 1``, a point
SELECT and a one-row INSERT, after a warm-up.

Usage: ``python bench/services.py [--statements 200] [--out result.json]``
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from conftest import PlaygroundProcess  # noqa: E402
from support.cluster import LocalCluster  # noqa: E402

STATEMENTS = {"select_1": "SELECT 1", "point_select": "SELECT * FROM lat WHERE id = 1",
              "insert_1_row": "INSERT INTO lat VALUES ({i}, 1)"}
WARM_UP = 20


def measure(connect: Callable[[], psycopg.Connection], n: int) -> dict:
    out: dict = {}
    with connect() as conn:
        conn.execute("CREATE TABLE lat (id BIGINT PRIMARY KEY, v INT)")
        conn.execute("FLUSH")
        for k, (name, stmt) in enumerate(STATEMENTS.items()):
            times = []
            for i in range(n + WARM_UP):
                started = time.perf_counter()
                conn.execute(stmt.format(i=k * 1_000_000 + i))
                times.append(time.perf_counter() - started)
            times = sorted(times[WARM_UP:])
            out[name] = {"p50_ms": round(statistics.median(times) * 1000, 2),
                         "p90_ms": round(times[int(len(times) * 0.9)] * 1000, 2)}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--statements", type=int, default=200)
    ap.add_argument("--out")
    args = ap.parse_args()
    result: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        (base / "cluster").mkdir()
        cluster = LocalCluster(base / "cluster")
        try:
            cluster.meta()
            cluster.compute()
            fe = cluster.frontend()
            result["services"] = measure(lambda: cluster.connect(fe), args.statements)
        finally:
            cluster.stop()
        (base / "playground").mkdir()
        pg = PlaygroundProcess(base / "playground" / "data").start()
        try:
            result["playground"] = measure(pg.connect, args.statements)
        finally:
            pg.stop()
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        Path(args.out).write_text(text)


if __name__ == "__main__":
    main()
