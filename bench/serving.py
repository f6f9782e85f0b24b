"""Statements per second through psycopg connections, against PostgreSQL in the same run. Printed as
JSON.

A fresh playground and PostgreSQL (127.0.0.1:5432, a database of the benchmark's own) each get
``t (id INT PRIMARY KEY, v INT)`` with ``--rows`` rows (default 1,000). Then, for ``--seconds`` each
(default 10), with one connection and with ``--connections`` (default 16) autocommit connections at
once (one client thread each), as fast as they can:

* ``SELECT 1``;
* ``SELECT v FROM t WHERE id = $1`` (a random key, server-side parameters);
* ``INSERT INTO t VALUES ($1, $2)`` (new keys; autocommit);
* mixed: 80 % of the point query, 20 % of the INSERT.

Reported: statements per second on each system and the ratio RisingSpark / PostgreSQL (the issue's
goals: ≥ 0.5× for the first two, ≥ 0.3× for the INSERT).

Usage: ``python bench/serving.py [--rows 1000] [--seconds 10] [--connections 16] [--out result.json]``
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
import threading
import time
from collections.abc import Callable
from pathlib import Path

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent))
from state_scaling import start_playground, stop_playground  # noqa: E402

PG_ADMIN = "host=127.0.0.1 port=5432 user=postgres dbname=postgres"


def rate(dsn: str, seconds: float, step: Callable[[psycopg.Connection, random.Random], None],
         connections: int = 1) -> float:
    """Statements per second of `connections` clients running `step` in a loop for `seconds`."""
    conns = [psycopg.connect(dsn, autocommit=True) for _ in range(connections)]
    counts = [0] * connections
    start = threading.Barrier(connections + 1)
    stop = threading.Event()

    def client(i: int) -> None:
        rng = random.Random(i)
        for _ in range(50):  # warm-up: prepared statements, caches
            step(conns[i], rng)
        start.wait()
        while not stop.is_set():
            step(conns[i], rng)
            counts[i] += 1

    threads = [threading.Thread(target=client, args=(i,)) for i in range(connections)]
    try:
        for t in threads:
            t.start()
        start.wait()
        began = time.perf_counter()
        time.sleep(seconds)
        stop.set()
        for t in threads:
            t.join()
        return sum(counts) / (time.perf_counter() - began)
    finally:
        for c in conns:
            c.close()


def workload(dsn: str, rows: int, seconds: float, connections: int, *, flush: bool) -> dict[str, float]:
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("CREATE TABLE t (id INT PRIMARY KEY, v INT)")
        c.execute(f"INSERT INTO t SELECT i, i * 7 FROM generate_series(1, {rows}) AS s(i)")
        if flush:  # RisingSpark: the rows are visible once a checkpoint has committed them
            c.execute("FLUSH")
    fresh = itertools.count(rows + 1)

    def select_1(c: psycopg.Connection, _: random.Random) -> None:
        c.execute("SELECT 1").fetchone()

    def point(c: psycopg.Connection, rng: random.Random) -> None:
        c.execute("SELECT v FROM t WHERE id = %s", (rng.randint(1, rows),)).fetchone()

    def insert(c: psycopg.Connection, _: random.Random) -> None:
        c.execute("INSERT INTO t VALUES (%s, %s)", (next(fresh), 1))

    def mixed(c: psycopg.Connection, rng: random.Random) -> None:
        (point if rng.random() < 0.8 else insert)(c, rng)

    out = {}
    for n in sorted({1, connections}):
        suffix = "" if n == 1 else f"_{n}_connections"
        for name, step in (("select_1", select_1), ("point_select", point), ("insert", insert), ("mixed", mixed)):
            out[name + suffix] = rate(dsn, seconds, step, n)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="risingspark-bench-serving-"))
    db = f"bench_serving_{os.getpid()}"
    proc, port, _ = start_playground(work / "data", [])
    try:
        with psycopg.connect(PG_ADMIN, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{db}"')
            admin.execute(f'CREATE DATABASE "{db}"')
        ours = workload(f"host=127.0.0.1 port={port} user=root dbname=dev", args.rows, args.seconds,
                        args.connections, flush=True)
        pg = workload(f"host=127.0.0.1 port=5432 user=postgres dbname={db}", args.rows, args.seconds,
                      args.connections, flush=False)
    finally:
        stop_playground(proc)
        shutil.rmtree(work, ignore_errors=True)
        with psycopg.connect(PG_ADMIN, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')
    result = {"machine": {"cores": os.cpu_count()}, "rows": args.rows, "seconds": args.seconds,
              "connections": args.connections,
              "statements_per_s": {k: {"risingspark": round(ours[k]), "postgresql": round(pg[k]),
                                       "ratio": round(ours[k] / pg[k], 3)} for k in ours}}
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        Path(args.out).write_text(text)


if __name__ == "__main__":
    main()
