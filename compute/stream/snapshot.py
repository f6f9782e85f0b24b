"""The epoch-round part of a snapshot backfill: one split of the snapshot per round, then the change
log several epochs at a time until the job catches up (`compute.executor.backfill.snapshot_backfill`)."""

from __future__ import annotations

import logging
import time
from dataclasses import replace
from typing import TYPE_CHECKING

import pyarrow as pa
from pyspark.sql import functions as F

from compute.executor.backfill.snapshot_backfill import (
    LOG_EPOCH,
    compact_task,
    next_split,
    read_logs_task,
    read_split,
)
from compute.metrics import BACKFILL_FORWARDED, BACKFILL_SNAPSHOT_ROWS, backfill_labels
from compute.stream.dataflow import Dataflow
from risingspark.barrier import BackfillReport, VnodeProgress
from risingspark.chunk import OP, VNODE
from risingspark.types import spark_ddl

if TYPE_CHECKING:
    from compute.stream.round import EpochRound, JobRuntime

logger = logging.getLogger(__name__)


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
    if rate == 0 or time.monotonic() < rt.throttled_until:
        return  # paused or throttled: the snapshot waits; upstream changes wait in the change log
    split = next_split(state, rt.progress[0])
    started = time.monotonic()
    rows = 0
    if split is not None:
        lo, hi = split
        read = read_split(rnd.spark, rnd.store.url, upstream, state, lo, hi, rnd.read_files)
        try:
            Dataflow(rnd, rt, source=read.rows).run()
        finally:
            read.release()
        rows = read.row_count()
        BACKFILL_SNAPSHOT_ROWS.labels(**backfill_labels(rt.job)).inc(rows)
        if rate:  # a rate limit holds on average: wait as long as the split should have taken
            rt.throttled_until = started + rows / (rate * rt.parallelism)
        by_vnode = {p.vnode: p for p in rt.progress[0]}
        changed = [VnodeProgress(v, None, True, rows if v == lo else 0) for v in range(lo, hi + 1)]
        for p in changed:
            by_vnode[p.vnode] = p
        rt.progress[0] = [by_vnode[v] for v in sorted(by_vnode)]
        logger.info("job %d: snapshot split vnodes %d..%d: %d rows in %.2f s", rt.job.job_id, lo, hi, rows,
                    time.monotonic() - started)
    else:
        changed = []
    done = next_split(state, rt.progress[0]) is None
    rt.snapshot = replace(state, snapshot_done=done)
    rnd.out.backfill.append(BackfillReport(rt.job.job_id, upstream.table_id, tuple(changed), rows,
                                           snapshot_done=done))
    if done:
        logger.info("job %d: snapshot read done at epoch %d; catching up from epoch %d", rt.job.job_id,
                    rnd.env.epoch, state.consumed_epoch)


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
