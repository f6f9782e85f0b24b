"""Snapshot backfill, as RisingWave's `SnapshotBackfillExecutor`, in two phases.

1. **Snapshot**: the upstream is read at one fixed snapshot epoch from the SSTs it had then (meta
   pins them), one vnode range per epoch round (one or more of the splits meta planned,
   `risingspark.snapshot_splits`), as a Spark batch job at full parallelism:
   Spark's own Parquet reader over the SST files, the MVCC merge in Spark (``max_by`` over
   ``_epoch`` per key, skipped when meta proved every stored version a distinct live key), then the
   job's operators. Upstream changes meanwhile are not buffered: they stay in the upstream's change
   log, which meta keeps for the job.
2. **Catch-up**: each round consumes the change logs of the next epochs after ``consumed_epoch``
   (many at once while far behind), compacted to one net change per key
   (`compact_changes`); once the batch reaches the barrier's previous epoch the job also consumes
   the current epoch's changes and is created.

Persisted state: the split progress as per-vnode rows (a split's vnodes are finished together; the
split's row count is kept on its first vnode), plus `risingspark.barrier.SnapshotState` in the
meta store.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from compute.executor.keyed import left_join
from risingspark.barrier import SnapshotState, VnodeProgress
from risingspark.chunk import EPOCH, OP, TOMBSTONE, VNODE, Op, is_insert_op
from risingspark.storage.desc import StateTableDesc
from risingspark.storage.object_store import get_object_store
from risingspark.types import spark_ddl
from risingspark.vnode import VNODE_COUNT

LOG_EPOCH = "_log_epoch"


def next_split(state: SnapshotState, progress: list[VnodeProgress]) -> tuple[int, int] | None:
    """The first split with an unfinished vnode (a restart resumes there), or None when done."""
    finished = {p.vnode for p in progress if p.finished}
    for lo, hi in state.splits:
        if any(v not in finished for v in range(lo, hi + 1)):
            return lo, hi
    return None


def unfinished_splits(state: SnapshotState, progress: list[VnodeProgress]) -> list[tuple[int, int]]:
    """The splits with an unfinished vnode, in order (a restart resumes at the first)."""
    finished = {p.vnode for p in progress if p.finished}
    return [(lo, hi) for lo, hi in state.splits if any(v not in finished for v in range(lo, hi + 1))]


def sst_ddl(desc: StateTableDesc) -> str:
    return f"`{VNODE}` SMALLINT, {spark_ddl(desc.fields)}, `{EPOCH}` BIGINT, `{TOMBSTONE}` BOOLEAN"


@dataclass
class SplitRead:
    """The rows of one split (``_op`` + upstream columns, all Inserts), and what to release after the
    job ran. `row_count()` is known once the job has run: Spark observes it while the rows stream
    through the job, without a pass of its own."""

    rows: Any  # a pyspark DataFrame
    observation: Any  # a pyspark Observation, or None for an empty split
    release: Callable[[], None]

    def row_count(self) -> int:
        """The split's rows. When the job's plan left the read out, nothing was observed: Spark's
        optimizer drops a scan whose rows cannot reach the output (a view over ``WHERE false``), and
        the observation's row then fails an assertion in the JVM (every round failed and recovered,
        the cluster's barriers with it). The rows are then counted by a job of their own."""
        if self.observation is None:
            return 0
        from py4j.protocol import Py4JJavaError

        try:
            return int(self.observation.get.get("rows") or 0)
        except Py4JJavaError:
            return self.rows.count()


def read_split(spark, store_url: str, desc: StateTableDesc, state: SnapshotState, lo: int, hi: int,
               read_files: Callable[[list[str], pa.Schema, str], object]) -> SplitRead:
    """The snapshot rows of vnodes ``lo..hi`` as a Spark DataFrame.

    `read_files` reads SST files through pyarrow in Spark tasks; it is used when the object store is
    not a local directory Spark's Parquet reader can open."""
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    store = get_object_store(store_url)
    ssts = [s for s in state.ssts if s.max_vnode >= lo and s.min_vnode <= hi]
    ddl = sst_ddl(desc)
    if not ssts:
        empty = spark.createDataFrame([], f"`{OP}` TINYINT, {spark_ddl(desc.fields)}")
        return SplitRead(empty, None, lambda: None)
    uris = [store.local_uri(s.path) for s in ssts]
    if all(uris):
        df = spark.read.schema(ddl).parquet(*uris)
    else:
        df = read_files([s.path for s in ssts], desc.sst_schema(), ddl)
    release: Callable[[], None] = lambda: None  # noqa: E731
    if (lo, hi) != (0, VNODE_COUNT - 1):
        df = df.where(f"`{VNODE}` BETWEEN {lo} AND {hi}")
    if state.unique_keys:
        # Pinned SSTs hold no version newer than the snapshot and, here, no tombstone: nothing to
        # filter, and Spark reads only the columns the job uses.
        live = df
    else:
        others = [n for n in desc.names if n not in desc.pk_names]
        newest = F.max_by(F.struct(*[F.col(f"`{n}`") for n in [*others, TOMBSTONE]]), F.col(EPOCH)).alias("_v")
        merged = df.where(f"`{EPOCH}` <= {state.snapshot_epoch}").groupBy(VNODE, *desc.pk_names).agg(newest)
        live = merged.select(VNODE, *desc.pk_names, *[F.col(f"_v.`{n}`").alias(n) for n in [*others, TOMBSTONE]]) \
                     .where(f"NOT `{TOMBSTONE}`").persist()
        release = live.unpersist
    observation = Observation(f"split-{lo}-{hi}")
    live = live.observe(observation, F.count(F.lit(1)).alias("rows"))
    rows = live.select(F.lit(int(Op.INSERT)).cast("tinyint").alias(OP), *[F.col(f"`{n}`") for n in desc.names])
    return SplitRead(rows, observation, release)


def read_logs_task(store_url: str, files: tuple[tuple[int, str], ...], schema: pa.Schema, slices: int):
    """A source of change-log files (input row ``id`` = the number of one of `slices` consecutive
    slices of `files`, as `compute.stream.tasks.read_files_task`), each row tagged with the epoch of
    its log (``_log_epoch``)."""
    count = len(files)

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        store = get_object_store(store_url)
        names = [n for n in schema.names if n != LOG_EPOCH]
        for batch in batches:
            for j in batch.column("id").to_pylist():
                for epoch, path in files[j * count // slices:(j + 1) * count // slices]:
                    t = store.read_parquet(path).select(names)
                    t = t.append_column(LOG_EPOCH, pa.array([epoch] * t.num_rows, pa.int64())).cast(schema)
                    yield from t.to_batches(max_chunksize=65536)

    return run


def compact_changes(desc: StateTableDesc, rows: pa.Table) -> pa.Table:
    """Several epochs of a change log (``_op``, ``_vnode``, columns, ``_log_epoch``) as one net
    change per key: the before-image the key had in its earliest epoch and the after-image it has
    in its latest, as Delete / Insert / UpdateDelete+UpdateInsert (the change-stream invariant).

    A key inserted and deleted within the epochs disappears; one deleted and inserted again becomes
    an update from its oldest value to its newest.
    """
    keys = [VNODE, *desc.pk_names]
    cols = [VNODE, *desc.names]
    span = rows.group_by(keys, use_threads=False).aggregate([(LOG_EPOCH, "min"), (LOG_EPOCH, "max")])
    t = left_join(rows, span, keys, right_suffix="__s")
    inserting = is_insert_op(t.column(OP))
    first = pc.equal(t.column(LOG_EPOCH), t.column(f"{LOG_EPOCH}_min__s"))
    last = pc.equal(t.column(LOG_EPOCH), t.column(f"{LOG_EPOCH}_max__s"))
    before = t.filter(pc.and_(first, pc.invert(inserting))).select(cols)
    after = t.filter(pc.and_(last, inserting)).select(cols)
    both = left_join(before.select(keys), after.select(keys), keys, right_suffix="__a")
    has_after = both.column("__present__a")
    updated_keys = both.filter(has_after).select(keys)
    deleted = left_join(before, updated_keys, keys, right_suffix="__u")
    is_update_b = deleted.column("__present__u")
    inserted = left_join(after, updated_keys, keys, right_suffix="__u")
    is_update_a = inserted.column("__present__u")

    def with_ops(t: pa.Table, mask_update: pa.Array, plain: Op, update: Op) -> pa.Table:
        ops = pc.if_else(mask_update, pa.scalar(int(update), pa.int8()), pa.scalar(int(plain), pa.int8()))
        return t.select(cols).add_column(0, pa.field(OP, pa.int8(), nullable=False), ops)

    return pa.concat_tables([with_ops(deleted, is_update_b, Op.DELETE, Op.UPDATE_DELETE),
                             with_ops(inserted, is_update_a, Op.INSERT, Op.UPDATE_INSERT)])


def compact_task(desc: StateTableDesc, out_schema: pa.Schema):
    """`compact_changes` over a partition (all rows of a key are in one partition)."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        parts = [b for b in batches if b.num_rows]
        if not parts:
            return
        out = compact_changes(desc, pa.Table.from_batches(parts))
        yield from out.select(out_schema.names).cast(out_schema).to_batches(max_chunksize=65536)

    return run
