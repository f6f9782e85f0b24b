"""The barrier manager: injects a barrier every ``barrier_interval_ms``, has the compute node run the
epoch round, and commits the round in one meta-store transaction.

One round at a time: barrier E+1 is injected only after E has committed (or failed), so a round
always reads the state committed at ``E.prev``. A failed round triggers recovery, as RisingWave's
`GlobalBarrierManager`: the compute node drops its jobs, meta re-adds every job from the meta store
with its persisted backfill positions, and uncommitted DML batches are delivered again. Files the
failed round wrote are referenced by nothing and are swept as garbage.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future

import sqlalchemy as sa

from meta.barrier.command import ComputeClient
from meta.catalog import CatalogManager, post_order
from meta.compaction.write_stall import WriteStallController
from meta.history import BarrierSample, RingBuffer
from meta.hummock import HummockManager
from meta.metrics import METRICS
from meta.snapshot_backfill import SnapshotBackfills
from meta.store.schema import backfill_progress, dml_batches, table_stats
from meta.store.store import MetaStore
from risingspark.backfill_order import BACKFILL_ORDER, normalize
from risingspark.barrier import (
    AddJobs,
    BackfillReport,
    Barrier,
    DmlBatch,
    EpochResult,
    Mutation,
    ScanProgress,
    StreamJob,
    VnodeProgress,
)
from risingspark.catalog import JobStatus, RelationCatalog
from risingspark.epoch import Epoch, EpochGenerator, EpochPair
from risingspark.errors import ServiceUnavailable
from risingspark.keys import decode_key, encode_key
from risingspark.storage.desc import HummockVersion
from risingspark.storage.object_store import ObjectStore
from risingspark.stream_plan import node_from_json, scans

logger = logging.getLogger(__name__)

RECOVERY_BACKOFF_S = (0.5, 1.0, 2.0, 5.0, 10.0)
# Rounds in a row a job's own plan may fail (`risingspark.errors.job_plan_failed`) before meta gives
# up on it (`BarrierManager.on_job_plan_failed`): once is proof enough of a deterministic failure,
# the rest are for a failure that was the cluster's after all.
JOB_PLAN_FAILURES = 3
# DML rows one barrier delivers at most (a larger backlog waits for the next barriers), so an epoch
# round's memory is bounded whatever the size of an INSERT.
MAX_DML_ROWS_PER_BARRIER = 1_000_000
CHANGE_LOG_RETENTION_MS = 60_000
BARRIER_HISTORY = 4096  # recent barriers kept for the dashboard


class BarrierManager:
    def __init__(self, store: MetaStore, catalog: CatalogManager, hummock: HummockManager,
                 objects: ObjectStore, compute: ComputeClient, snapshots: SnapshotBackfills, *,
                 interval_ms: Callable[[], int], on_commit: Callable[[EpochResult], None] | None = None) -> None:
        self._store = store
        self._catalog = catalog
        self._hummock = hummock
        self._objects = objects
        self._compute = compute
        self._snapshots = snapshots
        self._interval_ms = interval_ms
        self._on_commit = on_commit
        self._epochs = EpochGenerator(hummock.version.committed_epoch)
        self._cond = threading.Condition()
        self._mutations: list[Mutation] = []
        self._requested = False
        self._stopping = False
        self._needs_recovery = True  # the first barrier after start re-adds every job
        self._failures = 0
        self._injected = 0  # barriers injected so far
        self._committed_seq = 0  # the injection number of the newest committed barrier
        self._oldest_pending: int | None = None  # oldest uncommitted DML batch after the last commit
        self._dml_budget_hit = False
        self._flushers = 0  # FLUSH calls waiting
        self._last_error: str | None = None
        self._thread: threading.Thread | None = None
        self.history: RingBuffer[BarrierSample] = RingBuffer(BARRIER_HISTORY)  # committed barriers, newest last
        # Jobs whose rounds run elsewhere — on a serverless backfiller (`meta.serverless`) or on
        # the compute node of another resource group (`meta.resource_groups`) — not in the default
        # group's rounds; their results arrive through `submit_external` and commit with the next
        # checkpoint of the default group.
        # Write stalls (`meta.compaction.write_stall`): recomputed before each round picks its DML.
        self.write_stalls = WriteStallController()
        self.stall_threshold: Callable[[], int] = lambda: 0
        # A creating job's backfill rate limit as its job starts (a recovery re-adds every job): the
        # stored one, or meta's current adaptive limit (`meta.backfill_rate`).
        self.rate_limit_of: Callable[[RelationCatalog], int | None] = lambda rel: rel.extra.get("backfill_rate_limit")
        self.jobs_elsewhere: Callable[[], set[int]] = set
        # A job whose plan failed `JOB_PLAN_FAILURES` rounds in a row, and the failure's message:
        # meta's service cancels it if it is still being created (`MetaService._plan_failed`).
        self.on_job_plan_failed: Callable[[int, str], None] = lambda job_id, message: None
        self._plan_failures: dict[int, int] = {}  # job -> rounds in a row its plan failed
        self._external: list[tuple[EpochResult, list[DmlBatch], Future[int]]] = []
        self._outstanding: set[int] = set()  # epochs of rounds run elsewhere, not committed yet
        self._reads: dict[int, tuple[int, HummockVersion]] = {}  # job -> a snapshot read off the path (`_track_reads`)

    # ---- control ------------------------------------------------------------------------------
    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="barrier-manager", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        if self._thread:
            self._thread.join(timeout=120)

    def add_mutation(self, mutation: Mutation, *, urgent: bool = True) -> None:
        """Inject `mutation` with the next barrier: at once, or (not `urgent`) when one is due."""
        with self._cond:
            self._mutations.append(mutation)
            if urgent:
                self._requested = True
                self._cond.notify_all()

    def next_epoch(self) -> int:
        """An epoch newer than every one allocated so far, for a round run elsewhere (a serverless
        backfiller's, another resource group's). The epoch stays *outstanding* until the round's
        result commits or fails (`submit_external`) or its runner gives it up (`release_epoch`): its
        files are not garbage before (`oldest_outstanding_epoch`, `meta.garbage`), though the
        default group commits newer epochs meanwhile."""
        with self._cond:
            epoch = self._epochs.next()
            self._outstanding.add(epoch)
            return epoch

    def release_epoch(self, epoch: int) -> None:
        """The round of `epoch` (from `next_epoch`) is over: committed, failed or given up."""
        with self._cond:
            self._outstanding.discard(epoch)

    def oldest_outstanding_epoch(self) -> int | None:
        with self._cond:
            return min(self._outstanding, default=None)

    def submit_external(self, result: EpochResult, dml: list[DmlBatch] | None = None) -> Future[int]:
        """Commit a round run elsewhere (a serverless backfiller's, another resource group's, which
        consumed `dml`) with the next checkpoint whose epoch is newer than the round's: the future
        gives that epoch, or the error when that checkpoint failed (the round's work is then lost and
        its jobs must start again from the committed state)."""
        done: Future[int] = Future()
        done.add_done_callback(lambda _: self.release_epoch(result.epoch))
        with self._cond:
            self._external.append((result, list(dml or ()), done))
        return done

    def request_recovery(self) -> None:
        with self._cond:
            self._needs_recovery = True
            self._requested = True
            self._cond.notify_all()

    def flush(self, timeout: float | None = None) -> int:
        """Wait until every DML batch submitted before this call is committed, and a barrier
        injected after it has committed; return the committed epoch."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._store.begin() as conn:
            newest = conn.execute(sa.select(sa.func.max(dml_batches.c.id))).scalar() or 0
        with self._cond:
            target = self._injected + 1
            self._requested = True
            self._flushers += 1
            self._oldest_pending = newest or None  # until the next commit says otherwise
            self._cond.notify_all()
            try:
                self._wait_flushed(target, newest, deadline)
            finally:
                self._flushers -= 1
        return self._hummock.version.committed_epoch

    def _wait_flushed(self, target: int, newest: int, deadline: float | None) -> None:
        with self._cond:
            while self._committed_seq < target or self._dml_backlog_upto(newest):
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    raise TimeoutError("FLUSH timed out waiting for a checkpoint")
                if self._stopping:
                    raise RuntimeError("the cluster is shutting down")
                self._cond.wait(remaining if remaining is not None else 1.0)

    def _backfilling(self, result: EpochResult) -> bool:
        snapshot = self._catalog.snapshot
        finished = set(result.finished_jobs) | self.jobs_elsewhere()
        return any(r.job_id not in finished and r.job_id in snapshot.relations and r.reading_epoch is None and
                   snapshot.relations[r.job_id].extra.get("backfill_rate_limit") is None
                   for r in result.backfill)

    # ---- snapshot reads off the barrier's path --------------------------------------------------
    def _track_reads(self, result: EpochResult, version: HummockVersion) -> list[tuple[int, HummockVersion]]:
        """Keep what the snapshot reads still running need (`BackfillReport.reading_epoch`): the
        version of the round that started each (pinned once more here, while this round's own pin
        holds it) and its epoch, outstanding for the full GC. Returns the reads no report names any
        more (committed with this round, failed, their job dropped): `_let_go` releases them once
        this round has committed."""
        reading = {r.job_id: r.reading_epoch for r in result.backfill if r.reading_epoch is not None}
        ended = []
        with self._cond:
            for job_id, (epoch, _) in list(self._reads.items()):
                if reading.get(job_id) != epoch:
                    ended.append(self._reads.pop(job_id))
            for job_id, epoch in reading.items():
                if job_id not in self._reads:  # started by this round, over its version
                    self._hummock.pin_again(version)
                    self._outstanding.add(epoch)
                    self._reads[job_id] = (epoch, version)
        return ended

    def _let_go(self, reads: list[tuple[int, HummockVersion]]) -> None:
        with self._cond:
            for epoch, pinned in reads:
                self._hummock.unpin(pinned)
                self._outstanding.discard(epoch)

    def _release_reads(self) -> None:
        """A recovery: the compute node let every read go."""
        with self._cond:
            reads, self._reads = list(self._reads.values()), {}
        self._let_go(reads)

    def _dml_backlog_upto(self, batch_id: int) -> bool:
        """Whether an uncommitted DML batch with an id at most `batch_id` remains."""
        if batch_id == 0 or self._oldest_pending is None:
            return False
        return self._oldest_pending <= batch_id

    @property
    def last_error(self) -> str | None:
        return self._last_error

    # ---- the loop -----------------------------------------------------------------------------
    def _run(self) -> None:
        last_start = 0.0
        while True:
            with self._cond:
                while not self._stopping:
                    wait = last_start + self._interval_ms() / 1000 - time.monotonic()
                    if self._requested or wait <= 0:
                        break
                    self._cond.wait(wait)
                if self._stopping:
                    return
                self._requested = False
                mutations, self._mutations = self._mutations, []
                recovery, self._needs_recovery = self._needs_recovery, False
                self._injected += 1
                seq = self._injected
            last_start = time.monotonic()
            try:
                self._round(seq, mutations, recovery)
                self._failures = 0
                self._last_error = None
                self._plan_failures.clear()
            except Exception as e:  # noqa: BLE001 - any failure of a round means recovery
                self._failures += 1
                self._last_error = f"{type(e).__name__}: {e}"
                self._note_plan_failure(e)
                backoff = RECOVERY_BACKOFF_S[min(self._failures, len(RECOVERY_BACKOFF_S)) - 1]
                if isinstance(e, ServiceUnavailable):  # a compute node missing or lost: no traceback to show
                    logger.warning("epoch round %d failed: %s; recovering in %.1fs", seq, e.message, backoff)
                else:
                    logger.exception("epoch round %d failed; recovering in %.1fs", seq, backoff)
                METRICS.recoveries.inc()
                with self._cond:
                    self._needs_recovery = True
                    self._cond.wait(backoff)

    def _note_plan_failure(self, e: Exception) -> None:
        """Count a round failed by one job's plan; at `JOB_PLAN_FAILURES` in a row, hand the job to
        `on_job_plan_failed` (the recovery that follows re-adds what the catalog still holds)."""
        job_id = getattr(e, "job_id", None)
        if job_id is None:
            return
        failures = self._plan_failures[job_id] = self._plan_failures.get(job_id, 0) + 1
        if failures < JOB_PLAN_FAILURES:
            return
        del self._plan_failures[job_id]
        try:
            self.on_job_plan_failed(job_id, getattr(e, "message", str(e)))
        except Exception:  # noqa: BLE001 - the round's own recovery goes on
            logger.exception("job %d: giving up on its plan failed", job_id)

    def _round(self, seq: int, mutations: list[Mutation], recovery: bool) -> None:
        prev = self._hummock.version.committed_epoch
        epoch = self._epochs.next()
        external: list[tuple[EpochResult, list[DmlBatch], Future[int]]] = []
        try:
            self._round_inner(seq, mutations, recovery, prev, epoch, external)
        except BaseException as e:
            for *_, done in external:
                done.set_exception(e)
            raise
        for *_, done in external:
            done.set_result(epoch)

    def _round_inner(self, seq: int, mutations: list[Mutation], recovery: bool, prev: int, epoch: int,
                     external: list[tuple[EpochResult, list[DmlBatch], Future[int]]]) -> None:
        elsewhere = self.jobs_elsewhere()
        if recovery:
            self._compute.reset()
            self._release_reads()
            everything = self._all_jobs(elsewhere)
            mutations = [everything, *[m for m in mutations if not isinstance(m, AddJobs)]]
            logger.info("recovery: re-adding %d streaming jobs at epoch %d", len(everything.jobs), epoch)
        dml = self._pending_dml()
        version = self._hummock.pin()
        started = time.monotonic()
        try:
            barrier = Barrier(EpochPair(epoch, prev), True, version, tuple(mutations), tuple(dml), recovery,
                              tuple(self._snapshots.log_batches(prev, exclude=elsewhere)), reads_off_path=True)
            result = self._compute.run_epoch(barrier)
            ended = self._track_reads(result, version)
        finally:
            self._hummock.unpin(version)
        try:
            with self._cond:  # rounds run elsewhere with older epochs commit with this one
                external += [e for e in self._external if e[0].epoch < epoch]
                self._external = [e for e in self._external if e[0].epoch >= epoch]
            for other, other_dml, _ in external:
                result = merge_results(result, other)
                dml = dml + other_dml
            committing = time.monotonic()
            self._commit(result, dml)
            commit_s = time.monotonic() - committing
        finally:  # (a read committed by this round is protected until its files are in the version)
            self._let_go(ended)
        elapsed = time.monotonic() - started
        METRICS.barrier_latency.observe(elapsed)
        METRICS.epoch_commit_latency.observe(commit_s)
        METRICS.committed_epoch.set(epoch)
        self.history.append(BarrierSample(time.time(), epoch, elapsed, commit_s, result.spark_jobs,
                                          result.cache_hits, result.cache_misses))
        if result.spark_jobs:
            logger.info("epoch %d committed in %.0f ms (%d Spark jobs, %d DML batches)", epoch, elapsed * 1000,
                        result.spark_jobs, len(dml))
        else:
            logger.debug("epoch %d committed (idle)", epoch)
        oldest = None
        if self._flushers:  # only a waiting FLUSH needs to know the DML backlog
            with self._store.begin() as conn:
                oldest = conn.execute(sa.select(sa.func.min(dml_batches.c.id))
                                      .where(dml_batches.c.committed_epoch.is_(None))).scalar()
        with self._cond:
            self._committed_seq = seq
            self._oldest_pending = oldest
            if self._dml_budget_hit or self._backfilling(result):
                # A DML backlog beyond one barrier's budget, or a backfill with more to read: go on at
                # once, as RisingWave's backfill keeps reading its snapshot between barriers.
                self._requested = True
            self._cond.notify_all()
        if self._on_commit:
            self._on_commit(result)
        if seq % 10 == 0:
            self._housekeeping()

    def _commit(self, result: EpochResult, dml: list[DmlBatch]) -> None:
        live = self._catalog.snapshot.relations
        live_tables = {d.table_id for r in live.values() for d in r.state_tables}
        ssts = [s for s in result.ssts if s.table_id in live_tables]
        logs = [c for c in result.change_logs if c.table_id in live_tables]
        # Files the round wrote for jobs dropped meanwhile: nothing will ever reference them.
        stale = [s.path for s in result.ssts if s.table_id not in live_tables] + \
                [c.path for c in result.change_logs if c.table_id not in live_tables]
        consumed = set(result.consumed_dml)
        with self._store.transaction() as tx:
            conn = tx.conn
            self._hummock.commit_epoch(tx, result.epoch, ssts, logs)
            if consumed:
                conn.execute(dml_batches.update().where(dml_batches.c.id.in_(consumed))
                             .values(committed_epoch=result.epoch))
            for table_id, delta in result.row_count_deltas.items():
                if table_id in live_tables and delta:
                    _add_row_count(conn, table_id, delta)
            for report in result.backfill:
                if report.job_id in live:
                    _save_progress(conn, report)
                    self._snapshots.commit(conn, report)
            self._snapshots.remove(conn, list(result.finished_jobs))
            for job_id in result.finished_jobs:
                if job_id in live and live[job_id].status is JobStatus.CREATING:
                    self._catalog.set_status(tx, job_id, JobStatus.CREATED)
                    self._catalog.set_initialized(tx, job_id, result.epoch)
                    logger.info("job %d (%s) finished backfill at epoch %d", job_id, live[job_id].name,
                                result.epoch)
        if stale:
            self._objects.delete(stale)
        # The rows are in SSTs now: the DML files are no longer needed.
        done = [b for b in dml if b.batch_id in consumed]
        if done:
            self._objects.delete([b.path for b in done])
            with self._store.transaction() as tx:
                tx.conn.execute(dml_batches.delete().where(dml_batches.c.id.in_([b.batch_id for b in done])))

    def _housekeeping(self) -> None:
        before = Epoch.from_unix_ms(int(time.time() * 1000) - CHANGE_LOG_RETENTION_MS).value
        needed = self._snapshots.oldest_needed_epoch()
        if needed is not None:
            before = min(before, needed)
        with self._store.transaction() as tx:
            self._hummock.truncate_change_logs(tx, before)
        self._hummock.vacuum(protected=self._snapshots.pinned_paths())

    # ---- inputs of a barrier --------------------------------------------------------------------
    def _pending_dml(self) -> list[DmlBatch]:
        """DML batches of the default group's tables not committed yet, but those of stalled tables.

        The batches are read before the catalog: a table is in the catalog before any batch of it is
        recorded (its creation installs the catalog before it returns), so every batch read has its
        table here. Read the other way round, a table created between the two reads would have its
        batches held back a round while those recorded with them in one transaction went ahead."""
        rows = uncommitted_dml(self._store)
        live = self._catalog.snapshot.relations
        elsewhere = self.jobs_elsewhere()
        stalled = self.write_stalls.update(self._hummock.version, live.values(), self.stall_threshold())
        out, self._dml_budget_hit = take_dml(rows, lambda t: t in live and t not in elsewhere and t not in stalled)
        return out

    def _all_jobs(self, elsewhere: set[int]) -> AddJobs:
        rels = [r for r in self._catalog.snapshot.relations.values()
                if r.plan is not None and not r.extra.get("queued") and r.id not in elsewhere]
        return AddJobs(tuple(self.stream_job(r) for r in topological(rels)))

    def stream_job(self, rel: RelationCatalog) -> StreamJob:
        creating = rel.status is JobStatus.CREATING
        backfill = self.load_progress(rel) if creating else None
        snapshot = self._snapshots.load(rel.id) if creating else None
        assert rel.plan is not None
        return StreamJob(rel.id, rel.name, node_from_json(rel.plan), rel.parallelism, rel.dependencies, backfill,
                         self.rate_limit_of(rel), snapshot,
                         normalize(rel.extra.get(BACKFILL_ORDER, ())) if creating else ())

    def load_progress(self, rel: RelationCatalog) -> tuple[ScanProgress, ...]:
        assert rel.plan is not None
        out = []
        with self._store.begin() as conn:
            for scan_id, scan in enumerate(scans(node_from_json(rel.plan))):
                assert scan.upstream_desc is not None
                desc = scan.upstream_desc
                key_types = [desc.fields[i].type for i in desc.pk]
                rows = conn.execute(sa.select(backfill_progress).where(
                    (backfill_progress.c.job_id == rel.id) & (backfill_progress.c.scan_id == scan_id))
                    .order_by(backfill_progress.c.vnode)).all()
                out.append(ScanProgress(scan_id, scan.upstream_id, tuple(
                    VnodeProgress(r.vnode, decode_key(r.position, key_types), r.finished, r.row_count) for r in rows)))
        return tuple(out)


def pending_dml(store: MetaStore, keep: Callable[[int], bool]) -> tuple[list[DmlBatch], bool]:
    """The uncommitted DML batches of the tables `keep` accepts, oldest first, up to one barrier's
    budget of rows (at least one batch); and whether more are left for the next barriers."""
    return take_dml(uncommitted_dml(store), keep)


def uncommitted_dml(store: MetaStore) -> list[sa.Row]:
    """The recorded DML batches no committed epoch has consumed, oldest first."""
    with store.begin() as conn:
        return list(conn.execute(sa.select(dml_batches).where(dml_batches.c.committed_epoch.is_(None))
                                 .order_by(dml_batches.c.id)).all())


def take_dml(rows: list[sa.Row], keep: Callable[[int], bool]) -> tuple[list[DmlBatch], bool]:
    """`rows` (of `uncommitted_dml`) of the tables `keep` accepts, up to one barrier's budget of rows
    (at least one batch); and whether more are left for the next barriers."""
    out: list[DmlBatch] = []
    total = 0
    for r in rows:
        if not keep(r.table_id):
            continue
        if out and total + r.row_count > MAX_DML_ROWS_PER_BARRIER:
            return out, True
        out.append(DmlBatch(r.id, r.table_id, r.path, r.row_count))
        total += r.row_count
    return out, False


def merge_results(a: EpochResult, b: EpochResult) -> EpochResult:
    """Two rounds committed as one checkpoint (the default group's, epoch `a.epoch`, and a
    backfiller's); they touch disjoint jobs."""
    deltas = dict(a.row_count_deltas)
    for table_id, delta in b.row_count_deltas.items():
        deltas[table_id] = deltas.get(table_id, 0) + delta
    rows_in = dict(a.rows_in)
    for job_id, n in b.rows_in.items():
        rows_in[job_id] = rows_in.get(job_id, 0) + n
    return EpochResult(a.epoch, a.ssts + b.ssts, a.change_logs + b.change_logs, deltas, a.backfill + b.backfill,
                       a.finished_jobs + b.finished_jobs, a.consumed_dml + b.consumed_dml,
                       a.spark_jobs + b.spark_jobs, rows_in, a.cache_hits + b.cache_hits,
                       a.cache_misses + b.cache_misses)


def topological(rels: list[RelationCatalog]) -> list[RelationCatalog]:
    by_id = {r.id: r for r in rels}
    return post_order(sorted(rels, key=lambda r: r.id),
                      lambda r: [by_id[d] for d in r.dependencies if d in by_id])


def _add_row_count(conn, table_id: int, delta: int) -> None:
    updated = conn.execute(table_stats.update().where(table_stats.c.table_id == table_id)
                           .values(row_count=table_stats.c.row_count + delta)).rowcount
    if not updated:
        conn.execute(table_stats.insert().values(table_id=table_id, row_count=delta))


def _save_progress(conn, report: BackfillReport) -> None:
    for v in report.vnodes:
        values = {"position": encode_key(v.position), "finished": v.finished, "row_count": v.row_count}
        updated = conn.execute(backfill_progress.update().where(
            (backfill_progress.c.job_id == report.job_id) & (backfill_progress.c.scan_id == report.scan_id)
            & (backfill_progress.c.vnode == v.vnode)).values(**values)).rowcount
        if not updated:
            conn.execute(backfill_progress.insert().values(job_id=report.job_id, scan_id=report.scan_id,
                                                           upstream_id=report.upstream_id, vnode=v.vnode, **values))
