"""The compaction runner: executes a `CompactionTask` picked by meta and writes the new L1 SSTs.

The inputs are merged by key (`retain_versions`: the newest version of each key, or every version
newer than the task's safe epoch), tombstones are dropped when the task allows it, and the sorted
result is cut into L1 SSTs at vnode boundaries only, so no two L1 SSTs share a vnode. Rows keep
their original ``_epoch``. Meta then swaps inputs for outputs in one version delta; the inputs are
deleted once no reader pins them.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pyarrow as pa

from meta.compaction.picker import CompactionTask
from risingspark.errors import InternalError
from risingspark.storage.desc import SstableInfo, StateTableDesc
from risingspark.storage.mvcc import retain_versions, vnode_array
from risingspark.storage.object_store import ObjectStore
from risingspark.storage.sst import read_sst, write_sst

logger = logging.getLogger(__name__)

DEFAULT_TARGET_FILE_ROWS = 262144


def split_at_vnodes(vnodes: np.ndarray, target_rows: int) -> list[tuple[int, int]]:
    """Cut sorted `vnodes` into ``[start, end)`` row ranges of at most `target_rows` rows each,
    cutting only between vnodes (a range holding one vnode may be longer).

    >>> split_at_vnodes(np.array([0, 0, 1, 2, 2, 2, 3]), 3)
    [(0, 3), (3, 6), (6, 7)]
    """
    n = len(vnodes)
    if n == 0:
        return []
    bounds = np.flatnonzero(vnodes[1:] != vnodes[:-1]) + 1
    group_ends = [*bounds.tolist(), n]
    ranges, start, prev_end = [], 0, 0
    for end in group_ends:  # one iteration per vnode (at most 256)
        if end - start > target_rows and prev_end > start:
            ranges.append((start, prev_end))
            start = prev_end
        prev_end = end
    ranges.append((start, n))
    return ranges


def run_compaction(store: ObjectStore, desc: StateTableDesc, task: CompactionTask, *,
                   target_file_rows: int = DEFAULT_TARGET_FILE_ROWS, path_prefix: str = "hummock",
                   io_threads: int = 8) -> list[SstableInfo]:
    """Merge the task's input SSTs into new L1 SSTs and return their infos, by ``min_vnode``.

    An input whose every key is deleted yields no SST. If writing fails, the SSTs already written are
    deleted (best effort) and the error propagates; the inputs are untouched either way.
    """
    if task.table_id != desc.table_id:
        raise InternalError(f"compaction task of table {task.table_id} run with table {desc.table_id}")
    if target_file_rows < 1:
        raise InternalError(f"target_file_rows must be positive, got {target_file_rows}")
    inputs = _read_inputs(store, desc, task.input_ssts, io_threads)
    merged = retain_versions(inputs, desc, task.safe_epoch, drop_tombstones=task.drop_tombstones)
    ranges = split_at_vnodes(vnode_array(merged), target_file_rows)
    outputs: list[SstableInfo] = []
    try:
        for start, end in ranges:
            path = f"{path_prefix}/{desc.table_id}/l{task.target_level}-{uuid.uuid4().hex}.parquet"
            outputs.append(write_sst(store, desc, merged.slice(start, end - start), path,
                                     level=task.target_level,
                                     sub_level=task.output_sub_level if task.target_level == 0 else 0,
                                     presorted=True))
    except BaseException:
        store.delete(o.path for o in outputs)
        raise
    logger.info("table %d: compacted %d SSTs (%d rows, sub-levels %s) into %d L%d SSTs (%d rows)",
                desc.table_id, len(task.input_ssts), task.input_rows, list(task.l0_sub_levels),
                len(outputs), task.target_level, merged.num_rows)
    return outputs


def _read_inputs(store: ObjectStore, desc: StateTableDesc, ssts: Sequence[SstableInfo],
                 io_threads: int) -> list[pa.Table]:
    def load(sst: SstableInfo) -> pa.Table:
        return read_sst(store, sst.path, desc)

    if len(ssts) <= 1 or io_threads <= 1:
        return [load(s) for s in ssts]
    with ThreadPoolExecutor(min(io_threads, len(ssts)), thread_name_prefix="compact-read") as pool:
        return list(pool.map(load, ssts))
