"""Incremental throughput of streaming jobs, printed as JSON: how many upstream changes per second
a job absorbs at 1 s barriers before barrier latency grows.

For each workload the same upstream DML stream (new orders inserted, existing ones updated) is
offered at increasing rates for ``--seconds`` each, and the run records the rate the writer achieved,
the rate absorbed (written and reflected, up to the ``FLUSH`` closing the step) and the barrier
latency (mean of ``risingspark_meta_barrier_duration_seconds`` over the step). The steps go on while
the writer keeps up (≥ 90 % of the offered rate) and the mean barrier latency stays within 2x the
latency at the lowest rate (plus one barrier interval): an epoch round has a fixed Spark cost, so
the lowest rate, not an idle cluster, is the reference. The *sustained* rate is the highest absorbed
rate of a step whose latency stayed bounded (``rate_steps``). Workloads:

* ``table_only`` — the baseline: the DML stream into the table, no job reading it;
* ``group_by`` — ``SELECT customer_id, count(*), sum(amount) FROM orders WHERE status <> ...
  GROUP BY customer_id``;
* ``join`` — ``orders JOIN customers ON customer_id`` (a two-table join MV).

Each job's sustained rate is also given as a ratio to the baseline's, measured in the same run.

Usage: ``python bench/streaming.py [--rates 1000,10000,30000,100000,200000] [--seconds 15] [--out result.json]``
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent))
from backfill import ORDERS, free_port  # noqa: E402

CUSTOMERS = "CREATE TABLE {t} (id INT PRIMARY KEY, name VARCHAR, region VARCHAR)"
JOBS = {
    "table_only": None,
    "group_by": "SELECT customer_id, count(*) AS n, sum(amount) AS total FROM {o} WHERE status <> 'cancelled' "
                "GROUP BY customer_id",
    "join": "SELECT o.id, o.amount, o.status, c.name, c.region FROM {o} AS o JOIN {c} AS c ON o.customer_id = c.id",
}
PRELOAD = 100_000


def start_playground(data_dir: Path, driver_memory: str = "4g") -> tuple[subprocess.Popen, int, int]:
    port, meta_port = free_port(), free_port()
    data_dir.parent.mkdir(parents=True, exist_ok=True)
    log = open(data_dir.parent / "playground.log", "wb")  # noqa: SIM115 - lives as long as the process
    proc = subprocess.Popen([sys.executable, "-m", "risingspark.cli", "playground", "--data-dir", str(data_dir),
                             "--port", str(port), "--meta-port", str(meta_port), "--spark-driver-memory", driver_memory],
                            stdout=subprocess.PIPE, stderr=log, env={**os.environ, "PYTHONUNBUFFERED": "1"},
                            start_new_session=True)
    assert proc.stdout is not None
    for line in proc.stdout:
        if b"ready" in line:
            return proc, port, meta_port
    raise RuntimeError(f"the playground did not start; see {data_dir.parent / 'playground.log'}")


def barrier_totals(meta_port: int) -> tuple[float, float]:
    """(sum of seconds, count) of the barrier latency histogram."""
    hist = barrier_histogram(meta_port)
    return hist["sum"], hist["count"]


def barrier_histogram(meta_port: int) -> dict[str, float]:
    """The barrier latency histogram: ``sum``, ``count`` and each bucket's cumulative count by its
    upper bound (``"0.5"``, ..., ``"+Inf"``)."""
    text = httpx.get(f"http://127.0.0.1:{meta_port}/metrics", timeout=10).text
    values = {}
    for name in ("sum", "count"):
        m = re.search(rf"^risingspark_meta_barrier_duration_seconds_{name}(?:\{{[^}}]*\}})? (\S+)$", text, re.M)
        values[name] = float(m.group(1)) if m else 0.0
    for le, count in re.findall(r'^risingspark_meta_barrier_duration_seconds_bucket\{le="([^"]+)"\} (\S+)$', text, re.M):
        values[le] = float(count)
    return values


def quantile_bound_ms(before: dict[str, float], after: dict[str, float], q: float) -> float | None:
    """The upper bound of the bucket holding the q-quantile of the barriers between two histograms
    (None without barriers or past the last finite bucket).

    >>> quantile_bound_ms({"0.5": 0, "1.0": 0, "+Inf": 0}, {"0.5": 90, "1.0": 100, "+Inf": 100}, 0.99)
    1000.0
    """
    buckets = sorted((float(le), after[le] - before.get(le, 0.0)) for le in after if le not in ("sum", "count"))
    if not buckets or buckets[-1][1] <= 0:
        return None
    for bound, count in buckets:
        if count >= q * buckets[-1][1]:
            return bound * 1000 if bound != float("inf") else None
    return None


class PacedWriter:
    """Offers about ``rate`` units (changes, events) per second, ten loads a second: ``load(conn, n)``
    writes ``n`` units and returns how many it wrote. A load that takes longer than its tenth of a
    second delays the next, so the achieved rate (``units / elapsed``, from the first load to the end
of the last) is what the writer kept up.
    With ``catch_up`` a late load writes what is due by then (at most a second's worth), so the
    achieved rate falls short only when the database absorbs less even in larger loads."""

    def __init__(self, dsn: str, rate: int, load: Callable[[psycopg.Connection, int], int],
                 catch_up: bool = False) -> None:
        self.dsn, self.rate, self.load, self.catch_up = dsn, rate, load, catch_up
        self.changes = 0
        self.started = self.ended = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        per_tick = max(1, self.rate // 10)
        tick = 0
        with psycopg.connect(self.dsn, autocommit=True) as c:
            start = self.started = time.perf_counter()  # the rate counts from the first load
            while not self._stop.is_set():
                n = per_tick
                if self.catch_up:  # what is due by the end of this tick, less what was written
                    n = min(int(self.rate * (time.perf_counter() - start + 0.1)) - self.changes, self.rate)
                if n > 0:
                    self.changes += self.load(c, n)
                tick += 1
                delay = start + tick / 10 - time.perf_counter()
                if delay > 0:
                    self._stop.wait(delay)
            self.ended = time.perf_counter()  # the last load's end

    def __enter__(self) -> PacedWriter:
        self.started = time.perf_counter()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.elapsed = (self.ended or time.perf_counter()) - self.started


class Writer(PacedWriter):
    """Offers about `rate` changes per second to the orders table, ten ``COPY … FROM STDIN`` loads a
    second. Half of each load's rows are new orders (one change each); the other half rewrite
    existing orders (a primary-key conflict overwrites, as RisingWave: an update, two changes)."""

    def __init__(self, dsn: str, table: str, rate: int, first_id: int) -> None:
        super().__init__(dsn, rate, self._copy)
        self.table, self.next_id, self.tick = table, first_id, 0

    def _copy(self, c: psycopg.Connection, per_tick: int) -> int:
        new = max(1, per_tick // 3)  # per tick: `new` inserts + `new` updates = 3 * new changes
        ids = list(range(self.next_id, self.next_id + new))
        self.next_id += new
        old = 1 + (self.tick * new) % (PRELOAD - new)  # preloaded orders, in turn
        ids += list(range(old, old + new))
        with c.cursor() as cur, cur.copy(f"COPY {self.table} FROM STDIN") as copy:
            copy.write("".join(f"{i}\t{i % 1000}\t{(i + self.tick) % 500}.99\t"
                               f"{'cancelled' if i % 10 == 0 else 'paid'}\t2024-01-01 00:00:00\n"
                               for i in ids))
        self.tick += 1
        return 3 * new


def rate_steps(dsn: str, meta_port: int, rates: list[int], seconds: float, interval: int,
               writer: Callable[[int], PacedWriter], unit: str = "changes",
               bound: Callable[[float], float] | None = None) -> dict:
    """Offers each rate in turn for ``seconds`` (``writer(rate)`` makes the step's writer), with a
    ``FLUSH`` after each step, and stops at the first rate the writer could not keep (< 90 % of it)
    or whose mean barrier latency exceeded ``bound(latency at the lowest rate)`` (by default 2x the
    latency at the lowest rate plus one barrier interval).

    A step's *absorbed* rate is its units over the writer's time plus the closing ``FLUSH``'s: the
    rate at which changes were both written and reflected in every job. The sustained figure is the
    highest absorbed rate of a step whose latency stayed bounded, the last step included: a writer
    that reaches 85 % of an offer on two shared cores still shows what the job absorbed, where a
    pass/fail on 90 % would report the step before (the figure would decide on noise)."""
    steps: list[dict] = []
    sustained = 0
    for rate in rates:
        h0 = barrier_histogram(meta_port)
        with writer(rate) as w:
            time.sleep(seconds)
        start = time.perf_counter()
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("FLUSH")  # the step's changes are absorbed before the next step
        flush = time.perf_counter() - start
        h1 = barrier_histogram(meta_port)
        latency = (h1["sum"] - h0["sum"]) / max(h1["count"] - h0["count"], 1) * 1000
        achieved = w.changes / w.elapsed
        absorbed = w.changes / (w.elapsed + flush)
        # the first (lowest) rate sets the latency that later steps may not outgrow
        low = steps[0]["mean_barrier_latency_ms"] if steps else latency
        max_latency = bound(low) if bound else 2 * low + interval
        bounded = latency <= max_latency
        kept_up = achieved >= 0.9 * rate
        p99 = quantile_bound_ms(h0, h1, 0.99)
        steps.append({f"offered_{unit}_per_s": rate, f"achieved_{unit}_per_s": round(achieved),
                      f"absorbed_{unit}_per_s": round(absorbed),
                      "mean_barrier_latency_ms": round(latency),
                      "p99_barrier_latency_ms_at_most": None if p99 is None else round(p99),
                      "barriers": int(h1["count"] - h0["count"]), "flush_s": round(flush, 2),
                      "max_barrier_latency_ms": round(max_latency), "latency_bounded": bounded,
                      "writer_kept_up": kept_up})
        if bounded:
            sustained = max(sustained, round(absorbed))
        if not (bounded and kept_up):
            break
    return {"barrier_interval_ms": interval, "steps": steps, f"sustained_{unit}_per_s": sustained}


def run_workload(dsn: str, meta_port: int, name: str, rates: list[int], seconds: float) -> dict:
    o, c = f"orders_{name}", f"customers_{name}"
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(ORDERS.format(t=o))
        conn.execute(CUSTOMERS.format(t=c))
        conn.execute(f"INSERT INTO {c} SELECT i, 'customer ' || i, 'region ' || (i % 7) "
                     f"FROM generate_series(0, 999) AS g(i)")
        conn.execute(f"INSERT INTO {o} SELECT i, i % 1000, (i % 500) + 0.99, 'paid', TIMESTAMP '2024-01-01' "
                     f"FROM generate_series(1, {PRELOAD}) AS g(i)")
        conn.execute("FLUSH")
        job = JOBS[name]
        if job is not None:
            conn.execute(f"CREATE MATERIALIZED VIEW {name}_mv AS " + job.format(o=o, c=c))
        interval = int({r[0]: r[1] for r in conn.execute("SHOW PARAMETERS").fetchall()}["barrier_interval_ms"])
    time.sleep(3)
    last: Writer | None = None

    def writer(rate: int) -> Writer:  # each step's new orders follow the previous step's
        nonlocal last
        last = Writer(dsn, o, rate, last.next_id if last else PRELOAD + 1)
        return last

    return rate_steps(dsn, meta_port, rates, seconds, interval, writer)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--rates", default="1000,10000,30000,100000,200000")
    parser.add_argument("--seconds", type=float, default=15)
    parser.add_argument("--workloads", default=",".join(JOBS))
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    rates = [int(x) for x in args.rates.split(",")]
    work = Path(tempfile.mkdtemp(prefix="risingspark-bench-"))
    proc, port, meta_port = start_playground(work / "data")
    dsn = f"host=127.0.0.1 port={port} user=root dbname=dev"
    result: dict = {"machine": {"cores": os.cpu_count()}, "seconds_per_step": args.seconds, "workloads": {}}
    try:
        for name in args.workloads.split(","):
            result["workloads"][name] = run_workload(dsn, meta_port, name, rates, args.seconds)
            print(json.dumps({name: result["workloads"][name]}), file=sys.stderr)
        base = result["workloads"].get("table_only", {}).get("sustained_changes_per_s")
        if base:
            result["ratio_vs_table_only"] = {n: round(w["sustained_changes_per_s"] / base, 3)
                                             for n, w in result["workloads"].items() if n != "table_only"}
    finally:
        proc.terminate()
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
        shutil.rmtree(work, ignore_errors=True)
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        Path(args.out).write_text(text)


if __name__ == "__main__":
    main()
