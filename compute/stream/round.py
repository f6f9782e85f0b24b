"""One epoch round on Spark: DML → tables → every streaming job in topological order.

Each job whose inputs changed in the epoch (or that is backfilling) runs as one Spark job (see
`compute.stream.dataflow`); a job with no input runs nothing, so an idle epoch costs no Spark job.
Jobs read their upstreams' change logs of this epoch, which the upstream's job wrote earlier in the
same round; nothing is visible to readers until meta commits the epoch.

Jobs run in **waves** (`job_waves`): a job waits for the jobs whose tables it reads, and the jobs of
one wave — the materialized views of one table, say — run their Spark jobs at the same time, from
threads of the driver (Spark schedules concurrent jobs from threads). A Spark job of an epoch spends
most of its time on fixed costs (planning, scheduling, shuffles of a few thousand rows), which
overlap; measured with four MVs on one table, an epoch took the sum of its jobs' times before.
"""

from __future__ import annotations

import copy
import json
import logging
import math
import threading
import time
from collections import OrderedDict, defaultdict
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession

from compute.cache.state_cache import DEFAULT_STATE_CACHE_BYTES
from compute.metrics import (
    BACKFILL_FORWARDED,
    BACKFILL_SNAPSHOT_ROWS,
    EPOCH_ROUNDS,
    STATE_CACHE_HITS,
    STATE_CACHE_MISSES,
    backfill_labels,
)
from compute.stream.chunk_size import HISTORY, INITIAL_CHUNK_ROWS, RoundSample, next_chunk_rows
from compute.stream.tasks import (
    TaskEnv,
    progress_path,
    read_files_task,
)
from risingspark.backfill_order import finished_relations, waiting_for
from risingspark.barrier import (
    BackfillReport,
    Barrier,
    ChangeLogInfo,
    EpochResult,
    SnapshotState,
    StreamJob,
    VnodeProgress,
)
from risingspark.errors import job_plan_failed
from risingspark.keys import decode_key
from risingspark.storage.desc import SstableInfo, StateTableDesc
from risingspark.storage.object_store import ObjectStore
from risingspark.stream_plan import StreamChangeLog, StreamDml, StreamHashAgg, StreamTableScan, scans, walk
from risingspark.vnode import VNODE_COUNT, actor_vnodes

if TYPE_CHECKING:
    from compute.stream.round_args import CachedPlan
    from compute.stream.snapshot import PendingRead, ReadBucket

logger = logging.getLogger(__name__)


@dataclass
class JobRuntime:
    """A running job on this compute node. `progress` (per scan, per upstream vnode) is set while it
    backfills."""

    job: StreamJob
    parallelism: int
    progress: dict[int, list[VnodeProgress]] | None = None
    chunk_rows: int = INITIAL_CHUNK_ROWS  # snapshot rows the next backfill round reads (`chunk_size`)
    rounds: list[RoundSample] = field(default_factory=list)  # the latest rounds read at the chunk size
    round_fixed_s: float | None = None  # the estimated fixed part of a backfill round
    reading: frozenset[int] = frozenset()  # the scans that read in the latest round
    snapshot: SnapshotState | None = None  # a snapshot backfill in progress
    bucket: ReadBucket | None = None  # what a rate-limited snapshot backfill may read (`snapshot.ReadBucket`)
    pending: PendingRead | None = None  # a snapshot read running off the barrier's path (`snapshot.PendingRead`)
    plans: OrderedDict[tuple, CachedPlan] = field(default_factory=OrderedDict)  # by shape, least recently run first

    @property
    def scan(self) -> StreamTableScan | None:
        """The job's scan of its upstream (None for a table's DML job)."""
        return next((n for n in walk(self.job.plan) if isinstance(n, StreamTableScan)), None)

    @property
    def has_agg(self) -> bool:
        return any(isinstance(n, StreamHashAgg) for n in walk(self.job.plan))

    @property
    def no_shuffle(self) -> bool:
        scan = self.scan
        return scan is not None and scan.backfill_type == "NO_SHUFFLE_BACKFILL"

    @property
    def backfilling(self) -> bool:
        return self.progress is not None

    def waiting_for(self, scan_id: int) -> list[int]:
        """The upstreams a scan still waits for in the job's backfill order."""
        if not self.job.backfill_order or self.progress is None:
            return []
        plan_scans = scans(self.job.plan)
        done = finished_relations({i: (plan_scans[i].upstream_id, all(v.finished for v in p))
                                   for i, p in self.progress.items()})
        return waiting_for(self.job.backfill_order, plan_scans[scan_id].upstream_id, done)

    def reading_scans(self) -> frozenset[int]:
        """The scans with snapshot left to read whose turn in the backfill order has come."""
        assert self.progress is not None
        return frozenset(i for i, p in self.progress.items()
                         if not all(v.finished for v in p) and not self.waiting_for(i))


@dataclass
class RoundOutput:
    ssts: list[SstableInfo] = field(default_factory=list)
    change_logs: list[ChangeLogInfo] = field(default_factory=list)
    row_deltas: dict[int, int] = field(default_factory=lambda: defaultdict(int))
    rows_in: dict[int, int] = field(default_factory=lambda: defaultdict(int))
    backfill: list[BackfillReport] = field(default_factory=list)
    finished: list[int] = field(default_factory=list)
    spark_jobs: int = 0
    cache_hits: int = 0
    cache_misses: int = 0


class EpochRound:
    def __init__(self, spark: SparkSession, store: ObjectStore, barrier: Barrier, target_round_s: float, *,
                 generation: str = "", cache_bytes: tuple[int, int] | None = None) -> None:
        self.spark = spark
        self.store = store
        self.barrier = barrier
        state_bytes, block_bytes = cache_bytes or (DEFAULT_STATE_CACHE_BYTES, None)
        compacted = tuple((t, lv.l0_compacted_epoch) for t, lv in sorted(barrier.version.tables.items())
                          if lv.l0_compacted_epoch)
        self.env = TaskEnv(store.url, barrier.epoch.curr, barrier.epoch.prev, generation, state_bytes, block_bytes,
                           compacted)
        self.target_round_s = target_round_s
        self.out = RoundOutput()
        self.changelogs: dict[int, list[str]] = defaultdict(list)
        self.dml: dict[int, list[str]] = defaultdict(list)
        for b in barrier.dml:
            self.dml[b.table_id].append(b.path)
        self.log_batches = {b.job_id: b for b in barrier.log_batches}
        self._lock = threading.Lock()  # jobs of a wave record their results from threads of their own

    def run(self, jobs: list[JobRuntime]) -> EpochResult:
        EPOCH_ROUNDS.inc()
        for wave in job_waves(jobs):
            if len(wave) == 1:
                self._run_job(wave[0])
                continue
            with ThreadPoolExecutor(min(len(wave), MAX_CONCURRENT_JOBS), thread_name_prefix="epoch-job") as pool:
                futures = [pool.submit(self._run_job, rt) for rt in wave]
                wait(futures)
            for f in futures:  # the round fails with the first job that failed
                f.result()
        # Only batches of tables whose job ran: a batch can arrive in the same barrier as, or before,
        # the mutation that adds its table's job (an INSERT right after CREATE TABLE); it stays
        # pending until a round runs the job.
        running = {rt.job.job_id for rt in jobs}
        consumed = tuple(b.batch_id for b in self.barrier.dml if b.table_id in running)
        o = self.out
        return EpochResult(self.env.epoch, tuple(o.ssts), tuple(o.change_logs), dict(o.row_deltas),
                           tuple(o.backfill), tuple(o.finished), consumed, o.spark_jobs, dict(o.rows_in),
                           o.cache_hits, o.cache_misses)

    def fork(self) -> EpochRound:
        """A round of its own for work that outlives this one (a snapshot read off the barrier's
        path): the same epoch, inputs and committed version, an output of its own that a later round
        takes into its commit (`adopt`)."""
        other = copy.copy(self)
        other.out = RoundOutput()
        other.changelogs = defaultdict(list)
        other._lock = threading.Lock()
        return other

    def adopt(self, out: RoundOutput) -> None:
        """Commit another round's output with this epoch. Its SSTs keep the epoch they were written
        at (older than this one), as a serverless backfiller's rounds do when meta commits them with
        a later epoch (`meta.barrier.manager`): only the job that wrote them writes their tables, and
        it wrote nothing since, so readers at this epoch or later see exactly them. Its change logs
        are this epoch's."""
        with self._lock:
            self.out.ssts.extend(out.ssts)
            for log in out.change_logs:
                self.out.change_logs.append(replace(log, epoch=self.env.epoch))
                self.changelogs[log.table_id].append(log.path)
            for table_id, delta in out.row_deltas.items():
                self.out.row_deltas[table_id] += delta
            for job_id, rows in out.rows_in.items():
                self.out.rows_in[job_id] += rows
            self.out.spark_jobs += out.spark_jobs
            self.out.cache_hits += out.cache_hits
            self.out.cache_misses += out.cache_misses

    # ---- one job ------------------------------------------------------------------------------
    def _run_job(self, rt: JobRuntime) -> None:
        """Run one job's epoch. A plan Spark's analysis rejects fails the round as the job's own
        failure (`risingspark.errors.job_plan_failed`: meta cancels a creating job that keeps failing
        so, rather than recovering the cluster for ever)."""
        from pyspark.errors import AnalysisException

        try:
            self._run_job_epoch(rt)
        except AnalysisException as e:
            reason = str(e).splitlines()[0] if str(e) else type(e).__name__
            raise job_plan_failed(rt.job.job_id, rt.job.name, f"Spark rejected it: {reason}") from e

    def _run_job_epoch(self, rt: JobRuntime) -> None:
        started = time.monotonic()
        if rt.snapshot is not None:
            from compute.stream.snapshot import run_snapshot_backfill

            run_snapshot_backfill(self, rt)
            return
        from compute.stream.dataflow import Dataflow

        ran = Dataflow(self, rt).run()
        if ran and rt.backfilling:
            self._collect_backfill(rt, time.monotonic() - started)

    def input_slices(self, rt: JobRuntime, src: StreamDml | StreamTableScan) -> int:
        """How many tasks read a leaf's input this epoch (slices of its files, `read_files`; a
        backfill's actors); 0 when it has none. One file is read by one task, more by as many tasks
        as Spark has cores (some read nothing when the files are fewer): three widths, so a job's
        plans are few (`plan_shape`)."""
        if isinstance(src, StreamDml):
            paths = self.dml.get(rt.job.job_id, [])
        elif rt.backfilling:
            return rt.parallelism
        else:
            assert src.upstream_desc is not None
            paths = self.changelogs.get(src.upstream_desc.table_id, [])
        return len(paths) if len(paths) <= 1 else self.spark.sparkContext.defaultParallelism

    def plan_shape(self, rt: JobRuntime) -> tuple | None:
        """What a job's Spark plan depends on besides its round arguments (`compute.stream.round_args`):
        how many tasks read each leaf (none: the leaf gives no DataFrame), whether it backfills (a
        backfill replaces its scans, a global aggregate adds a seed row), its parallelism. None for a
        plan with the epoch in it as a constant (a change log's row ids), built every round."""
        plan = rt.job.plan
        leaves = []
        for n in walk(plan):
            if isinstance(n, StreamChangeLog):
                return None
            if isinstance(n, StreamDml | StreamTableScan):
                leaves.append(self.input_slices(rt, n))
        return id(plan), rt.backfilling, rt.parallelism, tuple(leaves)

    def read_files(self, paths: list[str], schema: pa.Schema, ddl: str) -> DataFrame:
        """The rows of `paths`, read by one task per slice of them. The seeds are the slices' numbers,
        not the files': Spark's generated code for a range holds its length, so a range as long as
        this round's file count (a new length nearly every round) compiled new code twice a round,
        which the JIT compiled again (a 2-core playground loading a table spent ~0.8 cores in Spark
        then, ~a quarter of it in the JIT's compiler threads; JFR)."""
        parts = max(1, min(len(paths), self.spark.sparkContext.defaultParallelism))
        seeds = self.spark.range(0, parts, 1, numPartitions=parts)
        return seeds.mapInArrow(read_files_task(self.store.url, tuple(paths), schema, parts), ddl)

    def backfill_args(self, rt: JobRuntime, scan_id: int, upstream: StateTableDesc) -> tuple:
        """A backfill executor's round arguments (`compute.stream.tasks.backfill_task`): the
        environment, the upstream's SSTs and change log of this epoch, each actor's vnodes, and the
        rows each vnode may read."""
        assert rt.progress is not None
        paths = tuple(self.changelogs.get(upstream.table_id, []))
        progress = rt.progress[scan_id]
        n = rt.parallelism
        by_vnode = {p.vnode: p for p in progress}
        actors = tuple(tuple(by_vnode[v] for v in actor_vnodes(i, n) if v in by_vnode) for i in range(n))
        unfinished = sum(1 for p in progress if not p.finished)
        budget = rt.chunk_rows
        rate = rt.job.backfill_rate_limit
        if rate is not None and rate >= 0:
            # rows/s per parallelism over one round; a positive limit always reads something
            budget = max(1, int(rate * n * self.target_round_s)) if rate > 0 else 0
        if rt.waiting_for(scan_id):
            budget = 0  # its place in the backfill order has not come: it waits as a paused scan does
        limit = 0 if budget == 0 else max(1, math.ceil(budget / max(1, unfinished)))
        ssts = tuple(self.barrier.version.ssts(upstream.table_id))
        if rt.no_shuffle:
            # Each actor walks its vnodes in order from one position; a chunk moves on across as many
            # vnodes as the budget is expected to cover (rows per vnode estimated from the SSTs).
            per_vnode = max(1, sum(s.row_count for s in ssts) // VNODE_COUNT)
            window = max(1, math.ceil(budget / n / per_vnode)) if budget else 1
            actors = tuple(_walk_window(a, window) for a in actors)
            limit = 0 if budget == 0 else max(1, math.ceil(budget / max(1, n * window)))
        return self.env, ssts, paths, actors, limit

    # ---- results ------------------------------------------------------------------------------
    def count_spark_job(self) -> None:
        with self._lock:
            self.out.spark_jobs += 1

    def record(self, kind: str, payload: dict, job_id: int) -> None:
        with self._lock:
            self._record(kind, payload, job_id)

    def _record(self, kind: str, payload: dict, job_id: int) -> None:
        if kind == "sst":
            self.out.ssts.append(SstableInfo.from_json(payload))
        elif kind == "changelog":
            info = ChangeLogInfo(payload["table_id"], self.env.epoch, payload["path"], payload["row_count"])
            self.out.change_logs.append(info)
            self.changelogs[info.table_id].append(info.path)
        elif kind == "rows":
            self.out.row_deltas[payload["table_id"]] += payload["delta"]
            self.out.rows_in[job_id] += payload["input"]
        elif kind == "cache":
            self.out.cache_hits += payload["hits"]
            self.out.cache_misses += payload["misses"]
            STATE_CACHE_HITS.labels(executor=payload["executor"]).inc(payload["hits"])
            STATE_CACHE_MISSES.labels(executor=payload["executor"]).inc(payload["misses"])

    def _collect_backfill(self, rt: JobRuntime, elapsed: float) -> None:
        """Read the per-actor progress files of every scan and report what changed."""
        assert rt.progress is not None
        reading = rt.reading_scans()  # (before this round's progress is collected)
        if reading != rt.reading:  # another stage of the backfill order: another cost per round
            if rt.job.backfill_order:
                names = {i: s.upstream_name for i, s in enumerate(scans(rt.job.plan))}
                logger.info("job %d: backfill reads %s", rt.job.job_id,
                            ", ".join(sorted({names[i] for i in reading})) or "no snapshot")
            rt.rounds, rt.round_fixed_s, rt.reading = [], None, reading
        snapshot_total = 0
        for scan_id, scan in enumerate(scans(rt.job.plan)):
            assert scan.upstream_desc is not None
            snapshot_total += self._collect_scan(rt, scan_id, scan.upstream_desc)
        limited = rt.job.backfill_rate_limit is not None and rt.job.backfill_rate_limit >= 0
        if elapsed > 0 and snapshot_total and not limited:
            rt.rounds = [*rt.rounds[-HISTORY + 1:], RoundSample(snapshot_total, elapsed)]
            rt.chunk_rows, rt.round_fixed_s = next_chunk_rows(rt.chunk_rows, rt.rounds, self.target_round_s,
                                                              rt.round_fixed_s)
        total = sum(len(p) for p in rt.progress.values())
        done = sum(1 for p in rt.progress.values() for v in p if v.finished)
        if done == total:
            self.out.finished.append(rt.job.job_id)
            rt.progress = None
            rt.plans.clear()  # (the plans of a backfilling job: it runs others from now on)
            logger.info("job %d: backfill finished at epoch %d", rt.job.job_id, self.env.epoch)
        else:
            logger.info("job %d: backfill read %d snapshot rows in %.2f s (%d/%d vnodes done)", rt.job.job_id,
                        snapshot_total, elapsed, done, total)

    def _collect_scan(self, rt: JobRuntime, scan_id: int, upstream: StateTableDesc) -> int:
        assert rt.progress is not None
        key_types = [upstream.fields[i].type for i in upstream.pk]
        by_vnode = {p.vnode: p for p in rt.progress[scan_id]}
        changed: list[VnodeProgress] = []
        snapshot_rows = forwarded = 0
        paths = [progress_path(rt.job.job_id, scan_id, self.env.epoch, i) for i in range(rt.parallelism)]
        for path in paths:
            if not self.store.exists(path):
                continue  # the scan had nothing to read this epoch
            report = json.loads(self.store.read_bytes(path))
            snapshot_rows += report["snapshot_rows"]
            forwarded += report["forwarded_rows"]
            for vnode, pos, finished, count in report["vnodes"]:
                p = VnodeProgress(vnode, decode_key(pos, key_types), finished, count)
                if by_vnode.get(vnode) != p:
                    changed.append(p)
                by_vnode[vnode] = p
        self.store.delete(paths)
        BACKFILL_FORWARDED.labels(**backfill_labels(rt.job)).inc(forwarded)
        BACKFILL_SNAPSHOT_ROWS.labels(**backfill_labels(rt.job)).inc(snapshot_rows)
        rt.progress[scan_id] = [by_vnode[v] for v in sorted(by_vnode)]
        self.out.backfill.append(BackfillReport(rt.job.job_id, upstream.table_id, tuple(changed), snapshot_rows,
                                                forwarded, scan_id=scan_id))
        return snapshot_rows


MAX_CONCURRENT_JOBS = 4


def job_output(rt: JobRuntime) -> int | None:
    """The table a job writes (and whose change log it produces)."""
    table = getattr(rt.job.plan, "table", None)
    return table.table_id if table is not None else None


def job_waves(jobs: list[JobRuntime]) -> list[list[JobRuntime]]:
    """`jobs` (upstreams first, as their ids grow) in waves: every job of a wave reads only tables
    written by jobs of earlier waves (or by nobody this round)."""
    produced: dict[int, int] = {}
    level: dict[int, int] = {}
    waves: list[list[JobRuntime]] = []
    for rt in jobs:
        reads = {s.upstream_desc.table_id for s in scans(rt.job.plan) if s.upstream_desc is not None}
        lvl = 1 + max((level[produced[t]] for t in reads if t in produced), default=-1)
        level[rt.job.job_id] = lvl
        out = job_output(rt)
        if out is not None:
            produced[out] = rt.job.job_id
        while len(waves) <= lvl:
            waves.append([])
        waves[lvl].append(rt)
    return waves


def _walk_window(actor: tuple[VnodeProgress, ...], window: int) -> tuple[VnodeProgress, ...]:
    """The vnodes a no-shuffle actor merges this epoch: the finished ones (they forward changes) and
    the next `window` unfinished ones in vnode order (they read snapshot); later ones wait, holding
    nothing yet."""
    out, reading = [], 0
    for p in actor:
        if p.finished:
            out.append(p)
        elif reading < window:
            out.append(p)
            reading += 1
    return tuple(out)
