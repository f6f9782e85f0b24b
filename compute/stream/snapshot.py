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
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, replace
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


@dataclass
class ReadBucket:
    """The rows a rate-limited snapshot backfill may read: earned at its current limit (rows/s, all
    parallelism), at most `BURST_S` seconds' worth; a read spends the rows it read (going into debt
    when it read more than it had).

    >>> b = ReadBucket(rows=2000.0, at=10.0)
    >>> b.earn(1000, now=13.0), b.earn(1000, now=30.0)  # at most 10 s of the limit
    (5000.0, 10000.0)
    >>> b.rows -= 12000; b.earn(4000, now=31.0)  # a raised limit pays the debt back faster
    2000.0
    >>> b.earn(100, now=31.0)  # a lowered one caps what was saved up
    1000.0
    """

    rows: float
    at: float

    def earn(self, rate: float, now: float) -> float:
        self.rows = min(rate * BURST_S, self.rows + rate * max(0.0, now - self.at))
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
    state, upstream = rt.snapshot, rt.scan.upstream_desc  # type: ignore[union-attr]
    assert state is not None and upstream is not None and rt.progress is not None
    rate = rt.job.backfill_rate_limit
    if rate == 0:
        rt.bucket = None  # resumed, it starts again from one second's worth
        return  # paused: the snapshot waits; upstream changes wait in the change log
    now = time.monotonic()
    rows = 0
    split = _next_read(rt, state, rate, now)
    if split is not None:
        lo, hi = split
        read = read_split(rnd.spark, rnd.store.url, upstream, state, lo, hi, rnd.read_files)
        try:
            Dataflow(rnd, rt, source=read.rows).run()
        finally:
            read.release()
        rows = read.row_count()
        BACKFILL_SNAPSHOT_ROWS.labels(**backfill_labels(rt.job)).inc(rows)
        if rate is not None and rt.bucket is not None:
            rt.bucket.rows -= rows
        by_vnode = {p.vnode: p for p in rt.progress[0]}
        changed = [VnodeProgress(v, None, True, rows if v == lo else 0) for v in range(lo, hi + 1)]
        for p in changed:
            by_vnode[p.vnode] = p
        rt.progress[0] = [by_vnode[v] for v in sorted(by_vnode)]
        logger.info("job %d: snapshot read vnodes %d..%d: %d rows in %.2f s", rt.job.job_id, lo, hi, rows,
                    time.monotonic() - now)
    else:
        changed = []
    done = next_split(state, rt.progress[0]) is None
    rt.snapshot = replace(state, snapshot_done=done)
    rnd.out.backfill.append(BackfillReport(rt.job.job_id, upstream.table_id, tuple(changed), rows,
                                           snapshot_done=done))
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
        n = len(files)
        seeds = rnd.spark.range(0, n, 1, numPartitions=min(n, max(1, rnd.spark.sparkContext.defaultParallelism)))
        df = seeds.mapInArrow(read_logs_task(rnd.store.url, tuple(files), schema), ddl)
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
