"""Two frontends on one cluster, one client alternating between them: a change's effect on a
statement's cost, with the machine's drift cancelled. Printed as JSON.

`bench/serving.py` runs each configuration in a cluster of its own, one after the other; two such
runs minutes apart have differed by 20-30 % (PostgreSQL's rates too), more than most changes to the
serving path are worth. Here meta, a compute node and a compactor run once (the code
``python -m risingspark.cli`` finds: run the script with ``PYTHONPATH=<checkout>``), with two
``risingspark frontend`` processes: A from the source tree
``--a-tree`` with ``--a-args``, B from ``--b-tree`` with ``--b-args`` (default: this checkout, no
arguments). The table ``t (id INT PRIMARY KEY, v INT)`` gets ``--rows`` rows through a frontend that
is neither (a third one, started first and stopped before measuring). Then one psycopg connection to
each, and for ``--seconds`` the client runs the statement on A for ``--slice`` seconds, then on B,
then B again and A, and so on (the order alternates, so neither always follows the other). Reported per frontend: statements/s, and the frontend process's CPU per statement
(user + system, psutil); and B / A.

Run it with A and B the same first (an A/A run): what B / A then shows is the harness's own bias
(seen: 1.03 for the point query; 0.73 for the INSERT when the table had been created through the
frontend measured first, which is why a third frontend creates it now).

Statements: ``point`` (``SELECT v FROM t WHERE id = $1``, a random key), ``select1``, ``insert``
(``INSERT INTO t VALUES ($1, $2)``, new keys, autocommit).

Usage: ``python bench/frontend_ab.py [--statement point] [--seconds 30] [--slice 0.5] [--rows 1000]
[--a-tree DIR] [--a-args "--event-loop asyncio"] [--b-tree DIR] [--b-args ...] [--out result.json]``
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent))
from backfill import free_port  # noqa: E402
from serving import Standalone  # noqa: E402
from state_scaling import stop_playground  # noqa: E402

HERE = Path(__file__).resolve().parents[1]


def start_frontend(work: Path, name: str, meta: str, tree: Path, args: list[str]) -> tuple[subprocess.Popen, int]:
    """A ``risingspark frontend`` running the code of `tree` (its own working directory and
    PYTHONPATH: ``-m`` puts the working directory first on the path)."""
    from frontend.main import READY

    port = free_port()
    log = open(work / f"frontend-{name}.log", "wb")  # noqa: SIM115 - lives as long as the process
    proc = subprocess.Popen([sys.executable, "-m", "risingspark.cli", "frontend", "--port", str(port), "--metrics-port",
                             "0", "--meta-address", meta, "--dml-log-dir", str(work / f"dml-log-{name}"), *args],
                            stdout=subprocess.PIPE, stderr=log, cwd=tree, start_new_session=True,
                            env={**os.environ, "PYTHONPATH": str(tree), "PYTHONUNBUFFERED": "1"})
    assert proc.stdout is not None
    for line in proc.stdout:
        if READY.encode() in line:
            return proc, port
    raise RuntimeError(f"frontend {name} did not start; see {work / f'frontend-{name}.log'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--statement", choices=("point", "select1", "insert"), default="point")
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--slice", type=float, default=0.5)
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--a-tree", default=str(HERE))
    parser.add_argument("--a-args", default="")
    parser.add_argument("--b-tree", default=str(HERE))
    parser.add_argument("--b-args", default="")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="risingspark-bench-ab-"))
    procs = []
    try:
        with Standalone(work) as cluster:  # (its own frontend creates the table, then stops)
            with psycopg.connect(f"host=127.0.0.1 port={cluster.port} user=root dbname=dev", autocommit=True) as c:
                c.execute("CREATE TABLE t (id INT PRIMARY KEY, v INT)")
                c.execute(f"INSERT INTO t SELECT i, i * 7 FROM generate_series(1, {args.rows}) AS s(i)")
                c.execute("FLUSH")
            stop_playground(cluster.procs.pop())
            sides = {}
            for name, tree, extra in (("a", args.a_tree, args.a_args), ("b", args.b_tree, args.b_args)):
                proc, port = start_frontend(work, name, cluster.meta, Path(tree).resolve(), shlex.split(extra))
                procs.append(proc)
                sides[name] = (psutil.Process(proc.pid),
                               psycopg.connect(f"host=127.0.0.1 port={port} user=root dbname=dev", autocommit=True))
            rng = random.Random(0)
            fresh = itertools.count(args.rows + 1)

            def step(c: psycopg.Connection) -> None:
                if args.statement == "point":
                    c.execute("SELECT v FROM t WHERE id = %s", (rng.randint(1, args.rows),)).fetchone()
                elif args.statement == "select1":
                    c.execute("SELECT 1").fetchone()
                else:
                    c.execute("INSERT INTO t VALUES (%s, %s)", (next(fresh), 1))

            for _, c in sides.values():  # warm-up: prepared statements, plan caches, block caches
                for _ in range(500):
                    step(c)
            count = dict.fromkeys(sides, 0)
            wall = dict.fromkeys(sides, 0.0)
            cpu = dict.fromkeys(sides, 0.0)
            end = time.perf_counter() + args.seconds
            order = list(sides.items())
            while time.perf_counter() < end:
                order.reverse()
                for name, (proc, c) in order:
                    before = proc.cpu_times()
                    started = time.perf_counter()
                    stop = started + args.slice
                    while time.perf_counter() < stop:
                        step(c)
                        count[name] += 1
                    wall[name] += time.perf_counter() - started
                    after = proc.cpu_times()
                    cpu[name] += after.user + after.system - before.user - before.system
            for _, c in sides.values():
                c.close()
            while procs:  # (before meta stops: a frontend's shutdown records its queued writes)
                stop_playground(procs.pop())
    finally:
        for proc in procs:
            stop_playground(proc)
        shutil.rmtree(work, ignore_errors=True)
    result = {"statement": args.statement, "seconds": args.seconds, "slice_s": args.slice, "rows": args.rows,
              **{name: {"tree": tree, "args": extra, "per_s": round(count[name] / wall[name]),
                        "frontend_cpu_us_per_statement": round(cpu[name] / count[name] * 1e6)}
                 for name, tree, extra in (("a", args.a_tree, args.a_args), ("b", args.b_tree, args.b_args))}}
    result["b_over_a"] = round(result["b"]["per_s"] / result["a"]["per_s"], 3)
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        Path(args.out).write_text(text)


if __name__ == "__main__":
    main()
