"""Statements per second through psycopg connections, against PostgreSQL in the same run. Printed as
JSON.

A fresh playground and PostgreSQL (127.0.0.1:5432, a database of the benchmark's own) each get
``t (id INT PRIMARY KEY, v INT)`` with ``--rows`` rows (default 1,000). Then, for ``--seconds`` each
(default 10), with one connection and with ``--connections`` (default 16) autocommit connections at
once (one client thread each; spread over ``--client-processes`` forked processes, so the client's
interpreter lock does not bound the many-connection rates of either system), as fast as they can:

* ``SELECT 1``;
* ``SELECT v FROM t WHERE id = $1`` (a random key, server-side parameters);
* ``INSERT INTO t VALUES ($1, $2)`` (new keys; autocommit);
* mixed: 80 % of the point query, 20 % of the INSERT;
* ``insert_async``: the INSERT with ``SET synchronous_commit = off`` on both systems (acknowledged
  before it is durable: `frontend.dml_commit` here, the WAL writer's next flush in PostgreSQL).

Reported: statements per second on each system and the ratio RisingSpark / PostgreSQL (the issue's
goals: ≥ 0.5× for the first two, ≥ 0.3× for the INSERT).

``--standalone`` also runs them against a cluster of separate processes (meta, a compute node, a
compactor and a ``risingspark frontend``, as deployed): the frontend then has a process of its own,
with no Spark and no streaming work beside it, and its DML log on a directory of its own (as
docker-compose deploys it; the playground keeps one in its data directory). Reported as
``standalone_frontend``, against PostgreSQL and against the playground.

``--load N`` runs the statements while a writer inserts N rows/s into another table (on RisingSpark,
one with a materialized view of an aggregate over it): the streaming work a serving path shares its
process with. ``--switch-intervals 5,0.5`` runs RisingSpark once per interpreter switch interval
(the playground's ``--switch-interval-ms``, each in a fresh playground), the first the baseline;
``--event-loops uvloop,asyncio`` once per frontend event loop (``--event-loop``; the standalone
frontend too), the first the baseline; ``--frontend-processes 1,2`` the standalone frontend once per
process count (``--processes``), the first the baseline.

Usage: ``python bench/serving.py [--rows 1000] [--seconds 10] [--connections 16] [--load 0]
[--switch-intervals 5] [--event-loops uvloop] [--standalone [--frontend-processes 1]]
[--client-processes 1] [--out result.json]``
"""

from __future__ import annotations

import argparse
import itertools
import json
import multiprocessing
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent))
from backfill import free_port  # noqa: E402
from state_scaling import start_playground, stop_playground  # noqa: E402

PG_ADMIN = "host=127.0.0.1 port=5432 user=postgres dbname=postgres"


def rate(dsn: str, seconds: float, step: Callable[[psycopg.Connection, random.Random], None],
         connections: int = 1, setup: str | None = None, processes: int = 1) -> float:
    """Statements per second of `connections` clients running `step` in a loop for `seconds` (each
    connection runs `setup` first), spread over `processes` client processes (forked; one thread a
    connection in each): one interpreter's lock would otherwise bound the client side of 16
    connections to one core, for both systems."""
    processes = max(1, min(processes, connections, 32))
    if processes == 1:
        return _rate_in_threads(dsn, seconds, step, connections, setup, None)
    ctx = multiprocessing.get_context("fork")
    ready, results = ctx.Barrier(processes + 1), ctx.SimpleQueue()
    shares = [connections // processes + (i < connections % processes) for i in range(processes)]

    _RUNS[0] += 1
    first_slot = _RUNS[0] * 32

    def child(index: int, n: int) -> None:
        CLIENT_PROCESS[0] = first_slot + index
        results.put(_rate_in_threads(dsn, seconds, step, n, setup, ready))

    children = [ctx.Process(target=child, args=(i, n)) for i, n in enumerate(shares)]
    for p in children:
        p.start()
    ready.wait(timeout=120)  # (every process's connections warmed up; the measured seconds start)
    total = sum(results.get() for _ in children)
    for p in children:
        p.join()
        if p.exitcode:
            raise RuntimeError(f"a client process failed (exit code {p.exitcode})")
    return total


# this client process's slot (`rate`; 0 in the benchmark's own process): new keys written by client
# processes start at a million times it, so no two processes of any run write the same key (a slot
# writes fewer than a million rows: 10 s at 100K statements/s)
CLIENT_PROCESS = [0]
_RUNS = [0]  # runs with client processes so far: each takes 32 slots


def _rate_in_threads(dsn: str, seconds: float, step: Callable[[psycopg.Connection, random.Random], None],
                     connections: int, setup: str | None, ready: Any) -> float:
    """`rate` in this process, one thread a connection; `ready` (a barrier of the client processes,
    or None) starts the measured seconds in every process at once. Statements are counted between
    two snapshots of the counters, so the warm-up and the wait for the others are not."""
    conns = [psycopg.connect(dsn, autocommit=True) for _ in range(connections)]
    for c in conns:
        if setup:
            c.execute(setup)
    counts = [0] * connections
    warm = threading.Barrier(connections + 1)
    stop = threading.Event()

    def client(i: int) -> None:
        rng = random.Random(i + 1000 * CLIENT_PROCESS[0])
        for _ in range(50):  # warm-up: prepared statements, caches
            step(conns[i], rng)
        warm.wait()
        while not stop.is_set():
            step(conns[i], rng)
            counts[i] += 1

    threads = [threading.Thread(target=client, args=(i,)) for i in range(connections)]
    try:
        for t in threads:
            t.start()
        warm.wait()
        if ready is not None:
            ready.wait(timeout=120)
        began, first = time.perf_counter(), sum(counts)
        time.sleep(seconds)
        done, ended = sum(counts), time.perf_counter()
        stop.set()
        for t in threads:
            t.join()
        return (done - first) / (ended - began)
    finally:
        for c in conns:
            c.close()


def workload(dsn: str, rows: int, seconds: float, connections: int, *, flush: bool,
             processes: int = 1) -> dict[str, float]:
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
        c.execute("INSERT INTO t VALUES (%s, %s)", (next(fresh) + CLIENT_PROCESS[0] * 1_000_000, 1))

    def mixed(c: psycopg.Connection, rng: random.Random) -> None:
        (point if rng.random() < 0.8 else insert)(c, rng)

    out = {}
    for n in sorted({1, connections}):
        suffix = "" if n == 1 else f"_{n}_connections"
        for name, step in (("select_1", select_1), ("point_select", point), ("insert", insert), ("mixed", mixed)):
            out[name + suffix] = rate(dsn, seconds, step, n, processes=processes)
        out["insert_async" + suffix] = rate(dsn, seconds, insert, n, "SET synchronous_commit = off",
                                            processes=processes)
    return out


class LoadWriter:
    """Inserts `rows_per_s` rows a second into ``load_src`` (in batches every 100 ms) until stopped; on
    RisingSpark an MV aggregates them, so every barrier carries streaming work."""

    def __init__(self, dsn: str, rows_per_s: int, *, mv: bool) -> None:
        self.dsn, self.batch, self.mv = dsn, max(1, rows_per_s // 10), mv
        self.stop = threading.Event()
        self.rows = 0
        self.started = 0.0  # when the writing began (set on entry)
        self.error: Exception | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> LoadWriter:
        with psycopg.connect(self.dsn, autocommit=True) as c:
            c.execute("CREATE TABLE load_src (id BIGINT PRIMARY KEY, g INT, v INT)")
            if self.mv:
                c.execute("CREATE MATERIALIZED VIEW load_mv AS SELECT g, count(*) AS n, sum(v) AS s "
                          "FROM load_src GROUP BY g")
        self.started = time.perf_counter()
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.thread.join()
        if self.error is not None:
            raise RuntimeError("the load writer failed") from self.error

    def _run(self) -> None:
        try:
            self._write()
        except Exception as e:  # noqa: BLE001 - reported by __exit__, in the main thread
            self.error = e

    def _write(self) -> None:
        with psycopg.connect(self.dsn, autocommit=True) as c:
            next_at = time.perf_counter()
            while not self.stop.is_set():
                lo = self.rows + 1
                c.execute("INSERT INTO load_src SELECT i, mod(i, 100), mod(i, 7) FROM generate_series(%s::bigint, %s::bigint) "
                          "AS s(i)", (lo, lo + self.batch - 1))
                self.rows += self.batch
                next_at += 0.1
                self.stop.wait(max(0.0, next_at - time.perf_counter()))


def measure(dsn: str, args: argparse.Namespace, *, ours: bool) -> dict[str, float]:
    if not args.load:
        return workload(dsn, args.rows, args.seconds, args.connections, flush=ours,
                        processes=args.client_processes)
    with LoadWriter(dsn, args.load, mv=ours) as writer:
        out = workload(dsn, args.rows, args.seconds, args.connections, flush=ours,
                        processes=args.client_processes)
        out["load_rows_per_s"] = writer.rows / (time.perf_counter() - writer.started)  # what the writer achieved
    return out


class Standalone:
    """Meta, a compute node (``local[2]``), a compactor and a frontend, each a process of its own,
    under `work` (logs ``<kind>.log``); `port` is the frontend's."""

    def __init__(self, work: Path, frontend_args: list[str] | None = None) -> None:
        self.work, self.procs = work, []
        self.frontend_args = frontend_args or []
        self.meta = f"http://127.0.0.1:{free_port()}"
        self.port = free_port()

    def __enter__(self) -> Standalone:
        try:
            self._start("meta", "--port", self.meta.rsplit(":", 1)[1], "--data-dir", str(self.work / "data"))
            self._start("compute", "--port", str(free_port()), "--meta-address", self.meta, "--spark-master",
                        "local[2]", "--spark-driver-memory", "4g")
            self._start("compactor", "--port", str(free_port()), "--meta-address", self.meta)
            self._start("frontend", "--port", str(self.port), "--metrics-port", str(free_port()),
                        "--meta-address", self.meta, "--dml-log-dir", str(self.work / "dml-log"), *self.frontend_args)
        except BaseException:
            self.__exit__()
            raise
        return self

    def _start(self, kind: str, *args: str) -> None:
        from compactor.main import READY as COMPACTOR
        from compute.server import READY as COMPUTE
        from frontend.main import READY as FRONTEND
        from meta.main import READY as META

        ready = {"meta": META, "compute": COMPUTE, "compactor": COMPACTOR, "frontend": FRONTEND}[kind].encode()
        log = open(self.work / f"{kind}.log", "wb")  # noqa: SIM115 - lives as long as the process
        proc = subprocess.Popen([sys.executable, "-m", "risingspark.cli", kind, *args], stdout=subprocess.PIPE,
                                stderr=log, env={**os.environ, "PYTHONUNBUFFERED": "1"}, start_new_session=True)
        self.procs.append(proc)
        assert proc.stdout is not None
        for line in proc.stdout:
            if ready in line:
                return
        raise RuntimeError(f"{kind} did not start; see {self.work / f'{kind}.log'}")

    def __exit__(self, *exc) -> None:
        for proc in reversed(self.procs):  # the frontend first, meta last
            stop_playground(proc)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--load", type=int, default=0, help="rows/s a writer inserts meanwhile (0: none)")
    parser.add_argument("--switch-intervals", default="5",
                        help="comma-separated playground switch intervals in ms, one run each; the first is the baseline")
    parser.add_argument("--event-loops", default="uvloop",
                        help="comma-separated event loops of the frontend (uvloop, asyncio), one run each; the first is "
                             "the baseline")
    parser.add_argument("--standalone", action="store_true",
                        help="also measure a frontend in a process of its own (a cluster of separate services)")
    parser.add_argument("--frontend-processes", default="1",
                        help="comma-separated process counts of the standalone frontend (--processes), one run each; "
                             "the first is the baseline")
    parser.add_argument("--client-processes", type=int, default=1,
                        help="client processes the --connections are spread over (1: threads of this process)")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    intervals = [float(x) for x in args.switch_intervals.split(",")]
    loops = args.event_loops.split(",")
    db = f"bench_serving_{os.getpid()}"
    runs = {}
    for loop in loops:
        for interval in intervals:
            work = Path(tempfile.mkdtemp(prefix="risingspark-bench-serving-"))
            proc, port, _ = start_playground(work / "data", ["--switch-interval-ms", str(interval),
                                                             "--event-loop", loop])
            try:
                runs[loop, interval] = measure(f"host=127.0.0.1 port={port} user=root dbname=dev", args, ours=True)
            finally:
                stop_playground(proc)
                shutil.rmtree(work, ignore_errors=True)
    standalone = {}
    counts = [int(x) for x in args.frontend_processes.split(",")]
    if args.standalone:
        for loop in loops:
            for n in counts if loop == loops[0] else counts[:1]:
                work = Path(tempfile.mkdtemp(prefix="risingspark-bench-serving-"))
                try:
                    with Standalone(work, ["--event-loop", loop, "--processes", str(n)]) as cluster:
                        standalone[loop, n] = measure(f"host=127.0.0.1 port={cluster.port} user=root dbname=dev",
                                                      args, ours=True)
                finally:
                    shutil.rmtree(work, ignore_errors=True)
    try:
        with psycopg.connect(PG_ADMIN, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{db}"')
            admin.execute(f'CREATE DATABASE "{db}"')
        pg = measure(f"host=127.0.0.1 port=5432 user=postgres dbname={db}", args, ours=False)
    finally:
        with psycopg.connect(PG_ADMIN, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')
    ours = runs[loops[0], intervals[0]]
    result = {"machine": {"cores": os.cpu_count()}, "rows": args.rows, "seconds": args.seconds,
              "connections": args.connections, "client_processes": args.client_processes,
              "load_rows_per_s": args.load, "switch_interval_ms": intervals[0],
              "event_loop": loops[0],
              "statements_per_s": {k: {"risingspark": round(ours[k]), "postgresql": round(pg[k]),
                                       "ratio": round(ours[k] / pg[k], 3)} for k in ours}}
    for (loop, interval), other in runs.items():  # each against the baseline run, in the same script
        if other is ours:
            continue
        name = "_".join(([f"event_loop_{loop}"] if loop != loops[0] else [])
                        + ([f"switch_interval_{interval:g}ms"] if interval != intervals[0] else []))
        result[name] = {k: {"risingspark": round(other[k]), "vs_baseline": round(other[k] / ours[k], 3),
                            "vs_postgresql": round(other[k] / pg[k], 3)} for k in other}
    for (loop, n), alone in standalone.items():
        base = standalone[loops[0], counts[0]]
        name = "_".join(["standalone_frontend"] + ([f"event_loop_{loop}"] if loop != loops[0] else [])
                        + ([f"processes_{n}"] if n != counts[0] else []))
        result[name] = {
            k: {"risingspark": round(alone[k]), "vs_postgresql": round(alone[k] / pg[k], 3),
                "vs_playground": round(alone[k] / runs[loop, intervals[0]][k], 3)}
            | ({} if alone is base else {"vs_baseline": round(alone[k] / base[k], 3)}) for k in alone}
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        Path(args.out).write_text(text)


if __name__ == "__main__":
    main()
