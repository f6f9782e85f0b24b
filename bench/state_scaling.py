"""Does an epoch cost what its changes cost, whatever the state holds? Printed as JSON.

For each table size (default 300K, 3M and 30M rows) a fresh playground loads ``big (id BIGINT PRIMARY
KEY, g INT, payload VARCHAR)`` with ``INSERT ... SELECT ... FROM generate_series`` (in loads of at most
5M rows) and a 1K-row ``dim (g INT PRIMARY KEY, name VARCHAR)``, with four materialized views on ``big``:

* ``sum_mv``   — ``SELECT g, count(*), sum(id) FROM big GROUP BY g``;
* ``max_mv``   — ``SELECT g, max(id) FROM big GROUP BY g`` (a materialized input state);
* ``proj_mv``  — ``SELECT id, payload FROM big``;
* ``join_mv``  — ``SELECT b.id, b.payload, d.name FROM big b JOIN dim d ON b.g = d.g``;

``join_mv`` exists before the load, which flows through it; the others are created over the loaded
table (snapshot backfill). A join over two tables backfills by arrangement backfill, whose rounds
cost about a second each whatever their size here, so 30M rows would take most of an hour to
backfill — a matter of backfill speed, not of the steady state this measures. It waits until
compaction has worked off the load (no compaction task for 30 s), warms up, then offers upserts with
random primary keys (``COPY ... FROM STDIN`` ten times a second; a key that exists is overwritten, as
RisingWave) at each rate of ``--rates`` (default 2,000 and 10,000 rows/s)
for ``--seconds`` each, and records every barrier's latency from meta's ``/api/barriers``: p50, p99
and mean per step, the rate the writer achieved, and the peak RSS of the playground's whole process
tree (driver, JVM, Python workers) over the run. State cache hits and misses come from ``/metrics``.

The size ratios (p50 at each size / p50 at the smallest size, same rate) are the result: an epoch
whose cost follows the change keeps them near 1.

Usage: ``python bench/state_scaling.py [--sizes 300000,3000000,30000000] [--rates 2000,10000]
[--seconds 60] [--out result.json]``
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import re
import shutil
import statistics
import string
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
from backfill import free_port  # noqa: E402

MVS = {
    "sum_mv": "SELECT g, count(*) AS n, sum(id) AS total FROM big GROUP BY g",
    "max_mv": "SELECT g, max(id) AS top FROM big GROUP BY g",
    "proj_mv": "SELECT id, payload FROM big",
    "join_mv": "SELECT b.id, b.payload, d.name FROM big AS b JOIN dim AS d ON b.g = d.g",
}
GROUPS = 1000
LOAD_CHUNK = 5_000_000


def start_playground(data_dir: Path, extra: list[str]) -> tuple[subprocess.Popen, int, int]:
    port, meta_port = free_port(), free_port()
    data_dir.parent.mkdir(parents=True, exist_ok=True)
    log = open(data_dir.parent / "playground.log", "wb")  # noqa: SIM115 - lives as long as the process
    proc = subprocess.Popen([sys.executable, "-m", "risingspark.cli", "playground", "--data-dir", str(data_dir),
                             "--port", str(port), "--meta-port", str(meta_port), "--spark-driver-memory", "4g",
                             *extra],
                            stdout=subprocess.PIPE, stderr=log, env={**os.environ, "PYTHONUNBUFFERED": "1"},
                            start_new_session=True)
    assert proc.stdout is not None
    for line in proc.stdout:
        if b"ready" in line:
            return proc, port, meta_port
    raise RuntimeError(f"the playground did not start; see {data_dir.parent / 'playground.log'}")


def stop_playground(proc: subprocess.Popen, timeout: float = 120) -> None:
    proc.terminate()
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()


class RssSampler:
    """The peak of the summed RSS of a process and its descendants (`peak`), and apart, of the
    process alone (`own_peak`) and of its descendants (`children_peak`), sampled every `interval_s`
    (and at the start and the stop)."""

    def __init__(self, pid: int, interval_s: float = 1.0) -> None:
        self.root = psutil.Process(pid)
        self.interval_s = interval_s
        self.peak = self.own_peak = self.children_peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def sample(self) -> int:
        try:
            own = self.root.memory_info().rss
            children = self.root.children(recursive=True)
        except psutil.Error:
            return 0
        rest = 0
        for p in children:
            with contextlib.suppress(psutil.Error):
                rest += p.memory_info().rss
        self.own_peak, self.children_peak = max(self.own_peak, own), max(self.children_peak, rest)
        return own + rest

    def _run(self) -> None:
        self.peak = max(self.peak, self.sample())
        while not self._stop.wait(self.interval_s):
            self.peak = max(self.peak, self.sample())

    def reset(self) -> None:
        self.peak = self.sample()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self.sample())


class BarrierLog:
    """Every committed barrier's latency, polled from meta's ``/api/barriers`` (its newest 60)."""

    def __init__(self, meta_port: int) -> None:
        self.url = f"http://127.0.0.1:{meta_port}/api/barriers"
        self.samples: dict[int, tuple[float, float]] = {}  # epoch -> (at, duration_s)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        with httpx.Client(timeout=10) as client:
            while not self._stop.wait(2.0):
                try:
                    for s in client.get(self.url).json()["recent"]:
                        self.samples[s["epoch"]] = (s["at"], s["duration_s"])
                except (httpx.HTTPError, KeyError, ValueError):
                    pass

    def between(self, start: float, end: float) -> list[float]:
        return [d for at, d in self.samples.values() if start <= at <= end]

    def stop(self) -> None:
        self._stop.set()


def metric_sum(meta_port: int, name: str) -> float:
    """The sum over label sets of a counter in meta's ``/metrics`` (0 when absent)."""
    text = httpx.get(f"http://127.0.0.1:{meta_port}/metrics", timeout=10).text
    return sum(float(v) for v in re.findall(rf"^{name}(?:\{{[^}}]*\}})? (\S+)$", text, re.M))


class Writer:
    """Upserts about `rate` rows per second with random keys in ``[1, rows]``, ten COPY loads a second."""

    def __init__(self, dsn: str, rate: int, rows: int, seed: int) -> None:
        self.dsn, self.rate, self.rows = dsn, rate, rows
        self.rng = random.Random(seed)
        self.written = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _payload(self) -> str:
        return "".join(self.rng.choices(string.ascii_lowercase, k=16))

    def _run(self) -> None:
        per_tick = max(1, self.rate // 10)
        tick = 0
        with psycopg.connect(self.dsn, autocommit=True) as c:
            start = time.perf_counter()
            while not self._stop.is_set():
                lines = "".join(f"{self.rng.randint(1, self.rows)}\t{self.rng.randrange(GROUPS)}\t{self._payload()}\n"
                                for _ in range(per_tick))
                with c.cursor() as cur, cur.copy("COPY big FROM STDIN") as copy:
                    copy.write(lines)
                self.written += per_tick
                tick += 1
                delay = start + tick / 10 - time.perf_counter()
                if delay > 0:
                    self._stop.wait(delay)

    def __enter__(self) -> Writer:
        self.started = time.perf_counter()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.elapsed = time.perf_counter() - self.started


def wait_for_compaction(meta_port: int, quiet_s: float = 30.0, max_s: float = 1800.0) -> float:
    """Seconds until no compaction task has committed for `quiet_s` (at most `max_s`)."""
    started = last_change = time.perf_counter()
    tasks = metric_sum(meta_port, "risingspark_compaction_tasks_total")
    while time.perf_counter() - last_change < quiet_s and time.perf_counter() - started < max_s:
        time.sleep(5)
        now = metric_sum(meta_port, "risingspark_compaction_tasks_total")
        if now != tasks:
            tasks, last_change = now, time.perf_counter()
    return round(last_change - started, 1)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0


def run_size(rows: int, rates: list[int], seconds: float, work: Path, extra: list[str]) -> dict:
    proc, port, meta_port = start_playground(work / f"data-{rows}", extra)
    dsn = f"host=127.0.0.1 port={port} user=root dbname=dev"
    rss = RssSampler(proc.pid)
    barriers = BarrierLog(meta_port)
    out: dict = {"rows": rows, "steps": []}
    try:
        with psycopg.connect(dsn, autocommit=True) as c:
            c.execute("CREATE TABLE big (id BIGINT PRIMARY KEY, g INT, payload VARCHAR)")
            c.execute("CREATE TABLE dim (g INT PRIMARY KEY, name VARCHAR)")
            c.execute(f"INSERT INTO dim SELECT i, 'group ' || i FROM generate_series(0, {GROUPS - 1}) AS s(i)")
            c.execute("FLUSH")
            c.execute(f"CREATE MATERIALIZED VIEW join_mv AS {MVS['join_mv']}")
            started = time.perf_counter()
            for first in range(1, rows + 1, LOAD_CHUNK):
                last = min(rows, first + LOAD_CHUNK - 1)
                c.execute(f"INSERT INTO big SELECT i, (i * 7919) % {GROUPS}, md5(i::varchar) "
                          f"FROM generate_series({first}, {last}) AS s(i)")
                c.execute("FLUSH")
            out["load_s"] = round(time.perf_counter() - started, 1)
            started = time.perf_counter()
            for name, query in MVS.items():
                if name != "join_mv":
                    c.execute(f"CREATE MATERIALIZED VIEW {name} AS {query}")
            out["create_mvs_s"] = round(time.perf_counter() - started, 1)
        # The load leaves L0 deep with big sub-levels; measure once compaction has worked it off.
        out["compaction_settle_s"] = wait_for_compaction(meta_port)
        print(json.dumps({"rows": rows, "load_s": out["load_s"], "create_mvs_s": out["create_mvs_s"],
                          "compaction_settle_s": out["compaction_settle_s"]}), file=sys.stderr)
        with Writer(dsn, rates[0], rows, seed=0):  # warm-up: caches, Spark's JIT
            time.sleep(min(30.0, seconds / 2))
        time.sleep(5)
        rss.reset()
        for i, rate in enumerate(rates):
            hits0 = metric_sum(meta_port, "risingspark_state_cache_hits_total")
            misses0 = metric_sum(meta_port, "risingspark_state_cache_misses_total")
            begin = time.time()
            with Writer(dsn, rate, rows, seed=i + 1) as w:
                time.sleep(seconds)
            end = time.time()
            lat = barriers.between(begin + 5, end)  # the first seconds settle from the previous step
            hits = metric_sum(meta_port, "risingspark_state_cache_hits_total") - hits0
            misses = metric_sum(meta_port, "risingspark_state_cache_misses_total") - misses0
            step = {"offered_rows_per_s": rate, "achieved_rows_per_s": round(w.written / w.elapsed),
                    "barriers": len(lat), "p50_ms": round(percentile(lat, 0.5) * 1000),
                    "p99_ms": round(percentile(lat, 0.99) * 1000),
                    "mean_ms": round(statistics.fmean(lat) * 1000) if lat else 0,
                    "state_cache_hit_rate": round(hits / (hits + misses), 3) if hits + misses else None}
            out["steps"].append(step)
            print(json.dumps({"rows": rows, **step}), file=sys.stderr)
            with psycopg.connect(dsn, autocommit=True) as c:
                c.execute("FLUSH")
            time.sleep(5)
        out["peak_rss_mb"] = round(rss.peak / 2**20)
    finally:
        barriers.stop()
        rss.stop()
        stop_playground(proc)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="300000,3000000,30000000")
    parser.add_argument("--rates", default="2000,10000")
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--out", default=None)
    parser.add_argument("--keep", action="store_true", help="keep the work directory (data and playground logs)")
    parser.add_argument("--playground-args", default="", help="extra playground flags, space-separated")
    args = parser.parse_args()
    sizes = [int(x) for x in args.sizes.split(",")]
    rates = [int(x) for x in args.rates.split(",")]
    work = Path(tempfile.mkdtemp(prefix="risingspark-bench-"))
    extra = args.playground_args.split()
    result: dict = {"machine": {"cores": os.cpu_count()}, "seconds_per_step": args.seconds, "sizes": []}
    try:
        for n in sizes:
            result["sizes"].append(run_size(n, rates, args.seconds, work, extra))
            shutil.rmtree(work / f"data-{n}", ignore_errors=True)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"work directory kept: {work}", file=sys.stderr)
    base = result["sizes"][0]
    result["p50_ratio_vs_smallest"] = {
        str(s["rows"]): {str(st["offered_rows_per_s"]): round(st["p50_ms"] / max(b["p50_ms"], 1), 2)
                         for st, b in zip(s["steps"], base["steps"], strict=False)}
        for s in result["sizes"]}
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        Path(args.out).write_text(text)


if __name__ == "__main__":
    main()
