"""How much a backfill disturbs the jobs already running, printed as JSON: the barrier latency of
existing jobs under a steady DML load while a big MV backfills, (a) with no backfill (the baseline of
this same run, measured before and after the backfills and pooled), (b) during a normal (snapshot) backfill in the default resource group, (c) during a
serverless backfill on a backfiller of its own, (d) during a backfill in the default group with an
adaptive rate (``SET backfill_rate_limit = adaptive``, `meta.backfill_rate`), whose limits are sampled
from ``rw_fragment_backfill_progress.rate_limit``.

This machine has 2 cores and stands for two machines: the playground (meta, the default group's
compute, the frontend) is pinned to CPU 0 once the history is loaded (every thread of its process
tree, with ``taskset -a``), and backfillers to CPU 1 (``serverless_backfill_cpu_affinity``). The
ratio (c)/(a) is the figure of merit (goal ≤ 1.5); (b)/(a) shows what the default group pays
without serverless backfill. For (d) the goal is p99 ≤ 1.5× (a) and a backfill within 2× of (b)'s time.

With ``--cluster-cpus 0,1`` the playground keeps both CPUs (the backfiller still runs on CPU 1,
sharing it): a cluster with headroom, where the pinned default is one that its existing jobs keep
~80 % busy (a backfill there can only take the rounds' time).

Usage: ``python bench/isolation.py [--rows 10000000] [--dml-rate 1000] [--idle-s 20] [--cluster-cpus 0]
[--strategy snapshot|arrangement] [--out r.json]``
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
import psutil
import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent))
from backfill import LOAD, ORDERS, SUMMARY, free_port  # noqa: E402

# the session settings that pick each backfill strategy
STRATEGIES = {"snapshot": ("SET streaming_use_snapshot_backfill = true",),
              "arrangement": ("SET streaming_use_snapshot_backfill = false",
                              "SET streaming_use_arrangement_backfill = true")}


def start_playground(data_dir: Path, backfiller_cpu: int) -> tuple[subprocess.Popen, int, int]:
    port, meta_port = free_port(), free_port()
    log = open(data_dir.parent / "playground.log", "wb")  # noqa: SIM115 - lives as long as the process
    proc = subprocess.Popen(
        [sys.executable, "-m", "risingspark.cli", "playground", "--data-dir", str(data_dir), "--port", str(port),
         "--meta-port", str(meta_port), "--spark-driver-memory", "6g", "--serverless-backfill-enabled",
         "--serverless-backfill-cores", "1", "--serverless-backfill-memory", "4g",
         "--serverless-backfill-cpu-affinity", str(backfiller_cpu)],
        stdout=subprocess.PIPE, stderr=log, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    assert proc.stdout is not None
    for line in proc.stdout:
        if b"ready" in line:
            return proc, port, meta_port
    raise RuntimeError(f"the playground did not start: see {data_dir.parent / 'playground.log'}")


def pin_tree(pid: int, cpu: str) -> int:
    """Pin every thread of a process and its descendants to CPUs (a ``taskset -c`` list); returns the
    processes pinned."""
    procs = [psutil.Process(pid), *psutil.Process(pid).children(recursive=True)]
    pinned = 0
    for p in procs:
        done = subprocess.run(["taskset", "-a", "-p", "-c", str(cpu), str(p.pid)], capture_output=True)
        if done.returncode == 0:
            pinned += 1
        elif p.is_running():  # (a short-lived child may be gone by now: nothing to pin)
            raise RuntimeError(f"taskset failed for process {p.pid}: {done.stderr.decode().strip()}")
    return pinned


class BarrierRecorder:
    """Polls meta's barrier history and keeps every committed barrier once: (commit time, seconds)."""

    def __init__(self, meta: str) -> None:
        self.meta = meta
        self.samples: dict[int, tuple[float, float]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)

    def _run(self) -> None:
        with httpx.Client(timeout=10) as client:
            while not self._stop.wait(0.5):
                try:
                    for s in client.get(f"{self.meta}/api/barriers").json()["recent"]:
                        self.samples[s["epoch"]] = (s["at"], s["duration_s"])
                except httpx.HTTPError:
                    pass

    def between(self, start: float, end: float) -> list[float]:
        return [d for at, d in self.samples.values() if start <= at <= end]

    def timeline(self, start: float, end: float) -> list[tuple[float, float]]:
        """(commit time after `start`, seconds) of each barrier committed in ``[start, end]``."""
        return sorted((round(at - start, 2), d) for at, d in self.samples.values() if start <= at <= end)


def summary(durations: list[float]) -> dict:
    if not durations:
        return {"barriers": 0}
    q = statistics.quantiles(durations, n=100, method="inclusive") if len(durations) > 1 else durations * 99
    return {"barriers": len(durations), "p50_s": round(q[49], 3), "p99_s": round(q[98], 3),
            "mean_s": round(statistics.fmean(durations), 3)}


def dml_load(dsn: str, rate: int, stop: threading.Event, done: list[int]) -> None:
    """A steady stream of `rate` changes/s to the events table (ten statements a second)."""
    per = max(1, rate // 10)
    i = 0
    with psycopg.connect(dsn, autocommit=True) as c:
        next_at = time.monotonic()
        while not stop.is_set():
            values = ", ".join(f"({i + k}, {(i + k) % 100}, {(i + k) % 7})" for k in range(per))
            c.execute(f"INSERT INTO events VALUES {values}")
            i += per
            done[0] = i
            next_at += 0.1
            time.sleep(max(0.0, next_at - time.monotonic()))


class RateSampler:
    """Samples a creating job's adaptive limit (``adaptive (n rows/s)``) every half second."""

    def __init__(self, dsn: str, job: str) -> None:
        self.dsn, self.job = dsn, job
        self.limits: list[int] = []
        self.at: list[float] = []  # when each limit was sampled (time.time())
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> RateSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(10)

    def _run(self) -> None:
        with psycopg.connect(self.dsn, autocommit=True) as c:
            while not self._stop.wait(0.5):
                row = c.execute("SELECT rate_limit FROM rw_catalog.rw_fragment_backfill_progress WHERE job_name = %s",
                                (self.job,)).fetchone()
                if row and row[0] and row[0].startswith("adaptive ("):
                    self.limits.append(int(row[0].removeprefix("adaptive (").split()[0]))
                    self.at.append(time.time())

    def summary(self) -> dict:
        if not self.limits:
            return {"samples": 0}
        return {"samples": len(self.limits), "first": self.limits[0], "min": min(self.limits),
                "max": max(self.limits), "last": self.limits[-1],
                "changes": sum(1 for a, b in zip(self.limits, self.limits[1:], strict=False) if a != b)}


def snapshot_reads(log: Path, job_id: int) -> dict:
    """The snapshot reads of one job in the playground's log (``job N: snapshot read vnodes a..b:
    R rows in S s``): how many, their rows and seconds, and a least-squares fit of a read's seconds
    as ``fixed + per_row × rows`` (the fixed part is what every round that carries a read pays)."""
    pattern = re.compile(rf"job {job_id}: snapshot read vnodes \d+\.\.\d+: (\d+) rows in ([\d.]+) s")
    reads = [(int(m[1]), float(m[2])) for m in pattern.finditer(log.read_text(errors="replace"))]
    if not reads:
        return {"reads": 0}
    out: dict = {"reads": len(reads), "rows": [r for r, _ in reads], "seconds": [s for _, s in reads]}
    if len({r for r, _ in reads}) > 1:
        fit = statistics.linear_regression([r for r, _ in reads], [s for _, s in reads])
        out["fit_fixed_s"] = round(fit.intercept, 3)
        out["fit_us_per_row"] = round(fit.slope * 1e6, 3)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=10_000_000, help="history rows of the backfilled MV's upstream")
    parser.add_argument("--dml-rate", type=int, default=1000, help="changes/s to the existing jobs")
    parser.add_argument("--idle-s", type=float, default=20.0, help="length of the baseline phase")
    parser.add_argument("--adaptive-target-ms", type=int, default=-1,
                        help="adaptive_backfill_target_barrier_latency_ms for (d); -1: the goal, 1.5× the idle "
                             "p99 measured before the backfills; 0: the system default (twice the barrier interval)")
    parser.add_argument("--cluster-cpus", default="0", help="the CPUs the playground is pinned to (taskset -c list)")
    parser.add_argument("--strategy", choices=sorted(STRATEGIES), default="snapshot",
                        help="the backfill strategy of phases (b) and (d)")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    if (os.cpu_count() or 1) < 2:
        raise SystemExit("needs two CPUs: one for the default group, one for the backfiller")
    root = Path(tempfile.mkdtemp(prefix="rs-isolation-"))
    proc, port, meta_port = start_playground(root / "data", backfiller_cpu=1)
    dsn = f"host=127.0.0.1 port={port} user=root dbname=dev"
    meta = f"http://127.0.0.1:{meta_port}"
    result: dict = {"rows": args.rows, "dml_rate": args.dml_rate, "strategy": args.strategy, "machine": {
        "cpus": os.cpu_count(), "cluster_cpus": args.cluster_cpus, "backfiller_cpus": "1",
        "note": "one machine standing for two: the playground pinned to CPU 0, backfillers to CPU 1"
        if args.cluster_cpus == "0" else f"the playground on CPUs {args.cluster_cpus}, backfillers on CPU 1"}}
    stop = threading.Event()
    try:
        with psycopg.connect(dsn, autocommit=True) as c:
            c.execute(ORDERS.format(t="orders"))
            started = time.perf_counter()
            c.execute(LOAD.format(t="orders", n=args.rows))
            c.execute("FLUSH")
            result["load_seconds"] = round(time.perf_counter() - started, 1)
            c.execute("CREATE TABLE events (id BIGINT PRIMARY KEY, k INT, v INT)")
            c.execute("CREATE MATERIALIZED VIEW events_by_k AS SELECT k, count(*) AS n, sum(v) AS s FROM events "
                      "GROUP BY k")
            c.execute("CREATE MATERIALIZED VIEW events_v AS SELECT id, v FROM events WHERE v > 2")
        result["pinned_processes"] = pin_tree(proc.pid, args.cluster_cpus)
        recorder = BarrierRecorder(meta)
        recorder.start()
        written = [0]
        writer = threading.Thread(target=dml_load, args=(dsn, args.dml_rate, stop, written), daemon=True)
        writer.start()
        time.sleep(5)  # the load settles

        phases: dict[str, dict] = {}
        t0 = time.time()
        time.sleep(args.idle_s)
        idle = [(t0, time.time())]
        phases["a_idle_before"] = summary(recorder.between(t0, time.time()))
        target = args.adaptive_target_ms
        if target < 0:
            target = round(1500 * phases["a_idle_before"]["p99_s"])
        result["adaptive_target_barrier_latency_ms"] = target or "default"
        with psycopg.connect(dsn, autocommit=True) as c:
            c.execute(f"ALTER SYSTEM SET adaptive_backfill_target_barrier_latency_ms = {target}")
            for statement in STRATEGIES[args.strategy]:
                c.execute(statement)
            for phase, serverless, rate in (("b_backfill", "false", "-1"), ("c_serverless_backfill", "true", "-1"),
                                            ("d_adaptive_backfill", "false", "adaptive")):
                c.execute(f"SET enable_serverless_backfill = {serverless}")
                c.execute(f"SET backfill_rate_limit = {rate}")
                with RateSampler(dsn, f"summary_{phase}") as limits:
                    t0 = time.time()
                    c.execute(f"CREATE MATERIALIZED VIEW summary_{phase} AS " + SUMMARY.format(t="orders"))
                    t1 = time.time()
                time.sleep(2)  # barriers committed up to the end of the backfill reach the history
                phases[phase] = {**summary(recorder.between(t0, t1)), "create_seconds": round(t1 - t0, 1),
                                 "backfill_rows_per_s": round(args.rows / (t1 - t0))}
                if rate == "adaptive":
                    phases[phase]["adaptive_limit_rows_per_s"] = limits.summary()
                    # to see which barriers the controller reacted to, and to what
                    phases[phase]["timeline"] = {
                        "barriers_s": recorder.timeline(t0, t1),
                        "limits": [(round(at - t0, 2), n) for at, n in zip(limits.at, limits.limits, strict=True)]}
                if serverless == "false":  # (a serverless backfill logs on its backfiller)
                    job_id = c.execute("SELECT id FROM rw_catalog.rw_materialized_views WHERE name = %s",
                                       (f"summary_{phase}",)).fetchone()[0]
                    phases[phase]["snapshot_reads"] = snapshot_reads(root / "playground.log", job_id)
        t0 = time.time()  # a second baseline after both backfills, pooled with the first
        time.sleep(args.idle_s)
        phases["a_idle_after"] = summary(recorder.between(t0, time.time()))
        stop.set()
        writer.join(10)
        recorder.stop()
        phases["a_idle"] = base = summary([d for start, end in idle for d in recorder.between(start, end)] +
                                          recorder.between(t0, t0 + args.idle_s))
        for name in ("b_backfill", "c_serverless_backfill", "d_adaptive_backfill"):
            p = phases[name]
            if base.get("p50_s") and p.get("p50_s"):
                p["p50_vs_idle"] = round(p["p50_s"] / base["p50_s"], 2)
                p["p99_vs_idle"] = round(p["p99_s"] / base["p99_s"], 2)
        result["phases"] = phases
        result["dml_rows_written"] = written[0]
        result["goal_serverless_p99_vs_idle_at_most"] = 1.5
        adaptive = phases["d_adaptive_backfill"]
        adaptive["create_seconds_vs_unlimited"] = round(adaptive["create_seconds"] /
                                                        phases["b_backfill"]["create_seconds"], 2)
        result["goal_adaptive"] = {"p99_vs_idle_at_most": 1.5, "create_seconds_vs_unlimited_at_most": 2.0,
                                   "met": adaptive.get("p99_vs_idle", 99) <= 1.5
                                   and adaptive["create_seconds_vs_unlimited"] <= 2.0}
    finally:
        stop.set()
        proc.terminate()
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
        shutil.rmtree(root, ignore_errors=True)
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
