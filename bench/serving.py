"""Statements per second through one psycopg connection, against PostgreSQL in the same run. Printed
as JSON.

A fresh playground and PostgreSQL (127.0.0.1:5432, a database of the benchmark's own) each get
``t (id INT PRIMARY KEY, v INT)`` with ``--rows`` rows (default 1,000). Then, for ``--seconds`` each
(default 10), one autocommit connection runs as fast as it can:

* ``SELECT 1``;
* ``SELECT v FROM t WHERE id = $1`` (a random key, server-side parameters);
* ``INSERT INTO t VALUES ($1, $2)`` (new keys; autocommit).

Reported: statements per second on each system and the ratio RisingSpark / PostgreSQL (the issue's
goals: ≥ 0.5× for the first two, ≥ 0.3× for the INSERT).

Usage: ``python bench/serving.py [--rows 1000] [--seconds 10] [--out result.json]``
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent))
from state_scaling import start_playground, stop_playground  # noqa: E402

PG_ADMIN = "host=127.0.0.1 port=5432 user=postgres dbname=postgres"


def rate(dsn: str, seconds: float, step: Callable[[psycopg.Connection, int], None]) -> float:
    with psycopg.connect(dsn, autocommit=True) as c:
        for i in range(50):  # warm-up: prepared statements, caches
            step(c, i)
        n, started = 0, time.perf_counter()
        deadline = started + seconds
        while time.perf_counter() < deadline:
            for _ in range(20):
                step(c, 50 + n)
                n += 1
        return n / (time.perf_counter() - started)


def workload(dsn: str, rows: int, seconds: float, *, flush: bool) -> dict[str, float]:
    rng = random.Random(0)
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("CREATE TABLE t (id INT PRIMARY KEY, v INT)")
        c.execute(f"INSERT INTO t SELECT i, i * 7 FROM generate_series(1, {rows}) AS s(i)")
        if flush:  # RisingSpark: the rows are visible once a checkpoint has committed them
            c.execute("FLUSH")
    fresh = itertools.count(rows + 1)
    return {
        "select_1": rate(dsn, seconds, lambda c, _: c.execute("SELECT 1").fetchone()),
        "point_select": rate(dsn, seconds, lambda c, _: c.execute("SELECT v FROM t WHERE id = %s",
                                                                  (rng.randint(1, rows),)).fetchone()),
        "insert": rate(dsn, seconds, lambda c, _: c.execute("INSERT INTO t VALUES (%s, %s)", (next(fresh), 1))),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="risingspark-bench-serving-"))
    db = f"bench_serving_{os.getpid()}"
    proc, port, _ = start_playground(work / "data", [])
    try:
        with psycopg.connect(PG_ADMIN, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{db}"')
            admin.execute(f'CREATE DATABASE "{db}"')
        ours = workload(f"host=127.0.0.1 port={port} user=root dbname=dev", args.rows, args.seconds, flush=True)
        pg = workload(f"host=127.0.0.1 port=5432 user=postgres dbname={db}", args.rows, args.seconds, flush=False)
    finally:
        stop_playground(proc)
        shutil.rmtree(work, ignore_errors=True)
        with psycopg.connect(PG_ADMIN, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')
    result = {"machine": {"cores": os.cpu_count()}, "rows": args.rows, "seconds": args.seconds,
              "statements_per_s": {k: {"risingspark": round(ours[k]), "postgresql": round(pg[k]),
                                       "ratio": round(ours[k] / pg[k], 3)} for k in ours}}
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        Path(args.out).write_text(text)


if __name__ == "__main__":
    main()
