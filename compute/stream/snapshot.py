"""The epoch-round part of a snapshot backfill: one read of the snapshot per round, then the change
log several epochs at a time until the job catches up (`compute.executor.backfill.snapshot_backfill`).

A read covers the first unfinished split and as many following ones as the round's row budget holds
(`risingspark.snapshot_splits.take_splits`). Unlimited, the budget is the split target. Rate-limited
(`backfill_rate_limit`, fixed or adaptive), the budget is a token bucket (`ReadBucket`): the job
earns ``limit × parallelism`` rows per second, saves up at most `BURST_S` seconds of them, and a read
spends the rows it actually read. So a rate limit holds on average, a new limit applies from the
next round on (no pause computed from the old one), and a smaller limit makes the next read smaller,
not only later — what the adaptive rate (`meta.backfill_rate`) needs to shorten the rounds that were
slow. A job reads once its bucket covers the next split, or once the bucket is full.

A rate-limited read runs **off the barrier's path**, as RisingWave's snapshot backfill reads its
snapshot apart from the upstream's barriers: the round that starts it hands it to a thread with a
round of its own (`EpochRound.fork`) and goes on, and the first round after it finished commits its
files and progress (`EpochRound.adopt`). A read's cost is mostly fixed (seconds of Spark planning and
scheduling, measured in bench/isolation.py), so in the round it made every other job's barrier wait
for it whatever its size. Nothing else of the job runs meanwhile (upstream changes wait in the change
log, as they do for the whole snapshot phase), so its tables are its own until the read is
committed, and the next read starts from that commit. Meta keeps the version the read started
from pinned and its epoch outstanding until a round reports it adopted (`BackfillReport.
reading_epoch`), so compaction's vacuum and the full GC leave its inputs and outputs alone; only
barriers whose manager does that (`Barrier.reads_off_path`: the default resource group's) start
reads off the path. Unlimited, a read stays in the round: the backfill takes the cluster, and a
read committed a round later would leave the job idle for a round between reads.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import pyarrow as pa
from pyspark.sql import functions as F

from compute.executor.backfill.snapshot_backfill import (
    LOG_EPOCH,
    compact_task,
    next_split,
    read_logs_task,
    read_split,
    unfinished_splits,
)
from compute.metrics import BACKFILL_FORWARDED, BACKFILL_SNAPSHOT_ROWS, backfill_labels
from compute.stream.dataflow import Dataflow
from risingspark.barrier import BackfillReport, SnapshotState, VnodeProgress
from risingspark.chunk import OP, VNODE
from risingspark.snapshot_splits import AGG_SPLIT_TARGET_ROWS, SPLIT_TARGET_ROWS, estimate_rows, take_splits
from risingspark.types import spark_ddl

if TYPE_CHECKING:
    from compute.stream.round import EpochRound, JobRuntime

logger = logging.getLogger(__name__)

# Seconds of its limit a rate-limited snapshot backfill may save up: more than one round of a busy
# cluster (bench/isolation.py: 4-7 s a barrier with the playground on one core), so a limit holds
# when rounds are slow, and little enough that a job throttled for long does not read in bursts.
BURST_S = 10.0
# What a rate-limited job may read in its first round (and after a pause): one second of its limit.
FIRST_READ_S = 1.0
# The Spark scheduler pool of reads off the barrier's path (`compute.spark` schedules pools fairly).
READ_POOL = "snapshot-read"
CANCEL_POLL_S = 0.5


@dataclass
class ReadBucket:
    """The rows a rate-limited snapshot backfill may read: earned at its current limit (rows/s, all
    parallelism), at most `BURST_S` seconds' worth — or, when it last earned longer ago (a read in
    flight off the barrier's path, a round that took that long), that long's worth: the time a read
    takes is earned in full, so the limit holds on average however long reads take. A read spends
    the rows it read (going into debt when it read more than it had).

    >>> b = ReadBucket(rows=2000.0, at=10.0)
    >>> b.earn(1000, now=13.0), b.earn(1000, now=18.0)  # at most 10 s of the limit saved
    (5000.0, 10000.0)
    >>> b.rows -= 12000; b.earn(4000, now=19.0)  # a raised limit pays the debt back faster
    2000.0
    >>> b.earn(100, now=19.0)  # a lowered one caps what was saved up
    1000.0
    >>> b.rows = 0.0; b.earn(1000, now=49.0)  # the 30 s a read took are earned in full
    30000.0
    """

    rows: float
    at: float

    def earn(self, rate: float, now: float) -> float:
        elapsed = max(0.0, now - self.at)
        self.rows = min(rate * max(BURST_S, elapsed), self.rows + rate * elapsed)
        self.at = now
        return self.rows

    def full(self, rate: float) -> bool:
        return self.rows >= rate * BURST_S


def run_snapshot_backfill(rnd: EpochRound, rt: JobRuntime) -> None:
    src = rt.scan
    assert src is not None and src.upstream_desc is not None and rt.snapshot is not None
    if not rt.snapshot.snapshot_done:
        _snapshot_split(rnd, rt)
    else:
        _catch_up(rnd, rt)


def _snapshot_split(rnd: EpochRound, rt: JobRuntime) -> None:
    state = rt.snapshot
    assert state is not None and rt.progress is not None
    if rt.pending is not None:
        if rt.pending.done.is_set():
            _adopt(rnd, rt)
        else:
            _report(rnd, rt, [], 0)  # still reading: the barrier goes on without it
        return
    rate = rt.job.backfill_rate_limit
    if rate == 0:
        rt.bucket = None  # resumed, it starts again from one second's worth
        return  # paused: the snapshot waits; upstream changes wait in the change log
    now = time.monotonic()
    split = _next_read(rt, state, rate, now)
    if split is None:
        _report(rnd, rt, [], 0)
    elif rate is None or not rnd.barrier.reads_off_path:
        rows = _read(rnd, rt, *split)
        _advance(rnd, rt, split, rows, now)
    else:
        _start(rnd, rt, split, now)
        _report(rnd, rt, [], 0)


@dataclass
class PendingRead:
    """A rate-limited snapshot read running off the barrier's path, in a round of its own
    (`EpochRound.fork`): the rows it read, or the error it failed with, once `done` is set."""

    split: tuple[int, int]
    started: float
    round: EpochRound
    group: str  # the Spark job group of its jobs
    done: threading.Event = field(default_factory=threading.Event)
    rows: int = 0
    error: BaseException | None = None

    def cancel(self) -> None:
        """Stop its Spark jobs: the job was dropped, or the node recovers (its output would never
        be committed). Cancelled again every `CANCEL_POLL_S` until the read ends: a job it submits
        after a cancel (it was still planning one) is cancelled too."""
        sc = self.round.spark.sparkContext

        def cancel_until_done() -> None:
            while True:
                sc.cancelJobGroup(self.group)
                if self.done.wait(CANCEL_POLL_S):
                    return

        if not self.done.is_set():
            threading.Thread(target=cancel_until_done, name=f"cancel-{self.group}", daemon=True).start()


def _start(rnd: EpochRound, rt: JobRuntime, split: tuple[int, int], now: float) -> None:
    """Read `split` in a thread of its own. Nothing else of the job runs until a round has committed
    the read (`_adopt`), so its state and SSTs are the job's alone meanwhile, and the next read starts
    over what this one committed."""
    pending = PendingRead(split, now, rnd.fork(), f"snapshot-read-{rt.job.job_id}-{rnd.env.epoch}")

    def run() -> None:
        try:
            sc = rnd.spark.sparkContext
            sc.setJobGroup(pending.group, f"snapshot read of job {rt.job.job_id}", interruptOnCancel=True)
            # its own pool: the rounds' jobs get their share of the cores while the read runs
            sc.setLocalProperty("spark.scheduler.pool", READ_POOL)
            pending.rows = _read(pending.round, rt, *split)
        except BaseException as e:  # noqa: BLE001 (handed to the round that adopts the read)
            pending.error = e
            logger.warning("job %d: snapshot read of vnodes %d..%d failed: %s", rt.job.job_id, *split, e)
        finally:
            pending.done.set()

    rt.pending = pending
    logger.info("job %d: snapshot read vnodes %d..%d started off the barrier's path", rt.job.job_id, *split)
    threading.Thread(target=run, name=f"snapshot-read-{rt.job.job_id}", daemon=True).start()


def _adopt(rnd: EpochRound, rt: JobRuntime) -> None:
    """Commit a finished read with this round; a failed one fails the round (the recovery that
    follows reads the split again)."""
    pending, rt.pending = rt.pending, None
    assert pending is not None
    if pending.error is not None:
        raise pending.error
    rnd.adopt(pending.round.out)
    _advance(rnd, rt, pending.split, pending.rows, pending.started)


def _read(rnd: EpochRound, rt: JobRuntime, lo: int, hi: int) -> int:
    """Run the job over the snapshot rows of vnodes ``lo..hi``; the rows read."""
    state, upstream = rt.snapshot, rt.scan.upstream_desc  # type: ignore[union-attr]
    assert state is not None and upstream is not None
    read = read_split(rnd.spark, rnd.store.url, upstream, state, lo, hi, rnd.read_files)
    try:
        Dataflow(rnd, rt, source=read.rows).run()
    finally:
        read.release()
    return read.row_count()


def _advance(rnd: EpochRound, rt: JobRuntime, split: tuple[int, int], rows: int, started: float) -> None:
    """Record a read of `split` in this round: its vnodes are finished."""
    assert rt.progress is not None
    lo, hi = split
    BACKFILL_SNAPSHOT_ROWS.labels(**backfill_labels(rt.job)).inc(rows)
    if rt.job.backfill_rate_limit is not None and rt.bucket is not None:
        rt.bucket.rows -= rows
    by_vnode = {p.vnode: p for p in rt.progress[0]}
    changed = [VnodeProgress(v, None, True, rows if v == lo else 0) for v in range(lo, hi + 1)]
    for p in changed:
        by_vnode[p.vnode] = p
    rt.progress[0] = [by_vnode[v] for v in sorted(by_vnode)]
    logger.info("job %d: snapshot read vnodes %d..%d: %d rows in %.2f s", rt.job.job_id, lo, hi, rows,
                time.monotonic() - started)
    _report(rnd, rt, changed, rows)


def _report(rnd: EpochRound, rt: JobRuntime, changed: list[VnodeProgress], rows: int) -> None:
    state, upstream = rt.snapshot, rt.scan.upstream_desc  # type: ignore[union-attr]
    assert state is not None and upstream is not None and rt.progress is not None
    done = rt.pending is None and next_split(state, rt.progress[0]) is None
    rt.snapshot = replace(state, snapshot_done=done)
    reading = rt.pending.round.env.epoch if rt.pending is not None else None
    rnd.out.backfill.append(BackfillReport(rt.job.job_id, upstream.table_id, tuple(changed), rows,
                                           snapshot_done=done, reading_epoch=reading))
    if done:
        logger.info("job %d: snapshot read done at epoch %d; catching up from epoch %d", rt.job.job_id,
                    rnd.env.epoch, state.consumed_epoch)


def _next_read(rt: JobRuntime, state: SnapshotState, rate: int | None, now: float) -> tuple[int, int] | None:
    """The vnode range this round reads, or None (nothing left, or a limit's budget is short)."""
    assert rt.progress is not None
    splits = unfinished_splits(state, rt.progress[0])
    if not splits:
        return None
    estimates = [estimate_rows(state.ssts, lo, hi) for lo, hi in splits]
    if rate is None:
        rt.bucket = None  # limited again later, it starts from one second's worth
        return take_splits(splits, estimates, AGG_SPLIT_TARGET_ROWS if rt.has_agg else SPLIT_TARGET_ROWS)
    rows_per_s = rate * rt.parallelism
    if rt.bucket is None:
        rt.bucket = ReadBucket(rows_per_s * FIRST_READ_S, now)
    budget = rt.bucket.earn(rows_per_s, now)
    if budget < estimates[0] and not rt.bucket.full(rows_per_s):
        return None  # the limit has not yet earned the next split
    return take_splits(splits, estimates, budget)


def _catch_up(rnd: EpochRound, rt: JobRuntime) -> None:
    state, upstream = rt.snapshot, rt.scan.upstream_desc  # type: ignore[union-attr]
    assert state is not None and upstream is not None
    batch = rnd.log_batches.get(rt.job.job_id)
    if batch is None or batch.from_epoch != state.consumed_epoch:
        return  # meta has not sent this job's log yet (it does from the round after the snapshot)
    files = [(log.epoch, log.path) for log in batch.logs]
    caught_up = batch.final and batch.to_epoch == rnd.barrier.epoch.prev
    if caught_up:
        files += [(rnd.env.epoch, path) for path in rnd.changelogs.get(upstream.table_id, [])]
    forwarded = sum(log.row_count for log in batch.logs)
    if files:
        epochs = {e for e, _ in files}
        schema = pa.schema([pa.field(OP, pa.int8()), pa.field(VNODE, pa.int16()),
                            *(pa.field(f.name, f.type.to_arrow()) for f in upstream.fields),
                            pa.field(LOG_EPOCH, pa.int64())])
        ddl = f"`{OP}` TINYINT, `{VNODE}` SMALLINT, {spark_ddl(upstream.fields)}, `{LOG_EPOCH}` BIGINT"
        # (seeds numbered by slice, not by file: see `EpochRound.read_files`)
        parts = max(1, min(len(files), rnd.spark.sparkContext.defaultParallelism))
        seeds = rnd.spark.range(0, parts, 1, numPartitions=parts)
        df = seeds.mapInArrow(read_logs_task(rnd.store.url, tuple(files), schema, parts), ddl)
        if len(epochs) > 1 and not rt.has_agg:
            # Several epochs of one key: reduce to its net change (aggregation sums need no such step).
            out_schema = pa.schema([f for f in schema if f.name != LOG_EPOCH])
            df = df.repartition(rt.parallelism, VNODE).mapInArrow(
                compact_task(upstream, out_schema), f"`{OP}` TINYINT, `{VNODE}` SMALLINT, {spark_ddl(upstream.fields)}")
        else:
            df = df.drop(F.col(LOG_EPOCH))
        Dataflow(rnd, rt, source=df).run()
    consumed = rnd.env.epoch if caught_up else batch.to_epoch
    rt.snapshot = replace(state, consumed_epoch=consumed)
    BACKFILL_FORWARDED.labels(**backfill_labels(rt.job)).inc(forwarded)
    rnd.out.backfill.append(BackfillReport(rt.job.job_id, upstream.table_id, (), 0, forwarded,
                                           consumed_epoch=consumed))
    if caught_up:
        rnd.out.finished.append(rt.job.job_id)
        rt.snapshot = None
        rt.progress = None
        logger.info("job %d: caught up with the upstream at epoch %d", rt.job.job_id, rnd.env.epoch)
    else:
        logger.info("job %d: consumed upstream change log up to epoch %d (%d rows)", rt.job.job_id, consumed,
                    forwarded)
