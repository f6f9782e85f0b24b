"""Compaction tasks as Spark jobs: a big task is split by key range into Spark tasks that run on the
cluster's executors.

A compactor started with a Spark master (``risingspark compactor --spark-master ...``) runs a task
whose inputs hold at least ``--spark-min-task-mb`` as a Spark job; smaller tasks, and every
task of a compactor without Spark (the playground's), run in its own process (`compactor.runner`).

1. **Split** (in the compactor, no data read): the footer of every input SST holds the first key of
   each of its blocks (`risingspark.storage.sst_meta`), a sample of the task's keys with the rows
   behind each. Cut keys are chosen among them so that each range ``[lo, hi)`` holds about the same
   number of input rows, at most `max_splits` ranges of at least `min_split_rows` rows. A cut is a
   whole key and every version of a key has the same key, so no key straddles two ranges.
2. **Merge** (one Spark task per range, on an executor): read, from every input SST, only the blocks
   the range touches (`point_get.read_ranges`), keep the rows inside the range, merge them as the
   local runner does (`mvcc.retain_versions` with the task's safe epoch and tombstone rule) and write
   the range's output SSTs with pyarrow, straight to the object store.
3. **Collect**: the executors return the outputs' `SstableInfo`s; the compactor concatenates them in
   range order (so they are key-ordered and disjoint, a level's sorted run) and reports them to meta
   like a local task's. A failed Spark job is cancelled and what its tasks wrote deleted (best
   effort; meta's full GC takes what is left) and the task is abandoned, to be picked again.

The output rows equal a local run's row for row (`tests/spark/test_spark_compaction.py`); only the
files' boundaries differ (a range's last file may be short). As Hummock's compactor splits a big task
into key-range sub-tasks run in parallel (`CompactorRunner` per split, `split_weight_by_vnode`), with
Spark's executors as the parallel workers.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from meta.compaction.task import CompactionTask
from risingspark.chunk import KEY
from risingspark.storage.desc import SstableInfo, StateTableDesc
from risingspark.storage.memcmp import key_matrix
from risingspark.storage.mvcc import retain_versions
from risingspark.storage.object_store import ObjectStore, final_path
from risingspark.storage.point_get import BlockReader, read_ranges
from risingspark.storage.sst import read_sst, write_ssts

logger = logging.getLogger(__name__)

MIN_SPLIT_ROWS = 65536


@dataclass(frozen=True)
class KeyRange:
    """``[lo, hi)`` on the memcomparable key; `hi` None: no upper bound."""

    lo: bytes
    hi: bytes | None


def plan_ranges(reader: BlockReader, task: CompactionTask, *, max_splits: int,
                min_split_rows: int = MIN_SPLIT_ROWS) -> list[KeyRange]:
    """Cut the task's key space into at most `max_splits` ranges of about equal input rows, at block
    first keys of its inputs (read from their footers)."""
    keys: list[np.ndarray] = []
    rows: list[np.ndarray] = []
    for sst in task.input_ssts:
        meta = reader.meta(sst.path)
        if not meta.indexed or meta.num_blocks == 0:
            continue  # a file without an index: its rows count towards no cut, it is read whole
        keys.append(meta.first_keys)
        counts = np.full(meta.num_blocks, meta.block_rows, dtype=np.int64)
        counts[-1] = meta.num_rows - meta.block_rows * (meta.num_blocks - 1)
        rows.append(counts)
    total = int(sum(int(r.sum()) for r in rows))
    splits = max(1, min(max_splits, total // max(1, min_split_rows)))
    if splits == 1 or not keys:
        return [KeyRange(b"", None)]
    width = max(k.dtype.itemsize for k in keys)
    all_keys = np.concatenate([k.astype(f"S{width}") for k in keys])
    all_rows = np.concatenate(rows)
    order = np.argsort(all_keys, kind="stable")
    all_keys, cumulative = all_keys[order], np.cumsum(all_rows[order])
    # the block whose first key starts range i: where the rows before it pass i/splits of the total
    targets = np.arange(1, splits) * (total / splits)
    starts = np.searchsorted(cumulative - all_rows[order], targets, side="left")
    cuts = [bytes(k) for k in np.unique(all_keys[np.clip(starts, 0, len(all_keys) - 1)])]
    cuts = [c for c in cuts if c]  # a cut at the smallest key would leave an empty first range
    bounds = [b"", *cuts]
    return [KeyRange(lo, bounds[i + 1] if i + 1 < len(bounds) else None) for i, lo in enumerate(bounds)]


def compact_range(store: ObjectStore, desc: StateTableDesc, task: CompactionTask, key_range: KeyRange,
                  path: str, file_rows: int) -> list[SstableInfo]:
    """One range of a task (what a Spark task runs): merge the inputs' rows in `key_range` and write
    them as SSTs at `path` (``-0``, ``-1``... when several)."""
    reader = BlockReader(store, None, None)
    parts = [p for p in (_read_range(reader, desc, sst, key_range) for sst in task.input_ssts)
             if p is not None and p.num_rows]
    if not parts:
        return []
    merged = retain_versions(parts, desc, task.safe_epoch, drop_tombstones=task.drop_tombstones)
    return write_ssts(store, desc, merged, path, level=task.target_level,
                      sub_level=task.output_sub_level if task.target_level == 0 else 0,
                      file_rows=file_rows, presorted=True)


def _cancel(sc, group: str, timeout_s: float = 60.0) -> None:
    """Cancel a job group and wait until none of its tasks runs."""
    sc.cancelJobGroup(group)
    tracker = sc.statusTracker()
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        stages = [tracker.getStageInfo(s) for j in tracker.getJobIdsForGroup(group)
                  for s in (getattr(tracker.getJobInfo(j), "stageIds", None) or ())]
        if not any(s is not None and s.numActiveTasks for s in stages):
            return
        time.sleep(0.1)
    logger.warning("Spark job group %s still has running tasks after %.0f s", group, timeout_s)


def _read_range(reader: BlockReader, desc: StateTableDesc, sst: SstableInfo, key_range: KeyRange) -> pa.Table | None:
    """The rows of one SST in the range, reading only the blocks it touches. Keys compare as the
    block index compares them (numpy bytes), so a range's bounds and its reads agree."""
    hi = key_range.hi
    if hi is None:  # above every key of this SST: one 0xFF byte more than its longest key
        meta = reader.meta(sst.path)
        if not meta.indexed:  # a file written before SSTs had an index: read whole, keys computed
            rows = read_sst(reader.store, sst.path, desc, with_key=True)
            return rows.filter(pa.array(key_matrix(rows.column(KEY)) >= np.array([key_range.lo])))
        hi = b"\xff" * (max(meta.first_keys.dtype.itemsize, len(meta.last_key)) + 1)
    part, _ = read_ranges(reader, desc, sst, np.array([key_range.lo]), np.array([hi]))
    return part


def run_compaction_on_spark(spark, store: ObjectStore, desc: StateTableDesc, task: CompactionTask, *,
                            file_rows: int, path_prefix: str = "hummock", max_splits: int | None = None,
                            min_split_rows: int = MIN_SPLIT_ROWS) -> list[SstableInfo]:
    """Run `task` as one Spark job of a task per key range (at most `max_splits`, by default twice
    the cluster's cores); the outputs in key order."""
    sc = spark.sparkContext
    ranges = plan_ranges(BlockReader(store, None, None), task, max_splits=max_splits or 2 * sc.defaultParallelism,
                         min_split_rows=min_split_rows)
    stem = task.output_prefix or f"{path_prefix}/{desc.table_id}/c-{uuid.uuid4().hex}"
    jobs = [(i, r, f"{stem}-s{i}-l{task.target_level}.parquet") for i, r in enumerate(ranges)]

    def run(part: Iterator[tuple[int, KeyRange, str]]) -> Iterator[tuple[int, list[SstableInfo]]]:
        for i, key_range, path in part:
            yield i, compact_range(store, desc, task, key_range, path, file_rows)

    folder, _, name = stem.rpartition("/")
    group = f"compaction-{name}"
    sc.setJobGroup(group, f"compaction task {task.task_id} of table {desc.table_id}", True)
    try:
        results = sc.parallelize(jobs, len(jobs)).mapPartitions(run).collect()
    except BaseException:
        # Stop the job's other tasks, then delete what any of them wrote (named after the stem; a
        # write a Python worker finishes after its task was killed is left to meta's full GC).
        _cancel(sc, group)
        store.delete(o.path for o in store.list(folder) if final_path(o.path).startswith(stem))
        raise
    outputs = [sst for _, ssts in sorted(results, key=lambda r: r[0]) for sst in ssts]
    logger.info("table %d: compaction task %d ran as a Spark job of %d ranges: %d SSTs in, %d L%d SSTs out",
                desc.table_id, task.task_id, len(ranges), len(task.input_ssts), len(outputs), task.target_level)
    return outputs
