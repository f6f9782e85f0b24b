"""The compaction runner: executes a `CompactionTask` picked by meta and writes the SSTs of its
target level.

The inputs are merged by key (`retain_versions`: the newest version of each key, or every version
newer than the task's safe epoch), tombstones are dropped when the task allows it, and the sorted
result is cut into SSTs of about the target size, only between keys (all versions of a key stay in
one SST, so the SSTs of a level have disjoint key ranges). Rows keep their original ``_epoch``. Meta
then swaps inputs for outputs in one version delta; the inputs are deleted once no reader pins them.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa

from meta.compaction.picker import CompactionTask
from risingspark.errors import InternalError
from risingspark.storage.desc import SstableInfo, StateTableDesc
from risingspark.storage.mvcc import retain_versions
from risingspark.storage.object_store import ObjectStore
from risingspark.storage.sst import read_sst, write_ssts

logger = logging.getLogger(__name__)

DEFAULT_TARGET_FILE_ROWS = 262144


def file_rows(task: CompactionTask, target_file_bytes: int | None, target_file_rows: int) -> int:
    """Rows per output SST: `target_file_bytes` at the inputs' bytes per row, at most `target_file_rows`."""
    if not target_file_bytes or not task.input_rows:
        return target_file_rows
    per_row = max(1.0, task.input_bytes / task.input_rows)
    return max(1, min(target_file_rows, int(target_file_bytes / per_row)))


def run_compaction(store: ObjectStore, desc: StateTableDesc, task: CompactionTask, *,
                   target_file_rows: int = DEFAULT_TARGET_FILE_ROWS, target_file_bytes: int | None = None,
                   path_prefix: str = "hummock", io_threads: int = 8) -> list[SstableInfo]:
    """Merge the task's input SSTs into new SSTs of its target level and return their infos, in key
    order.

    An input whose every key is deleted yields no SST. If writing fails, the SSTs already written are
    deleted (best effort) and the error propagates; the inputs are untouched either way.
    """
    if task.table_id != desc.table_id:
        raise InternalError(f"compaction task of table {task.table_id} run with table {desc.table_id}")
    if target_file_rows < 1:
        raise InternalError(f"target_file_rows must be positive, got {target_file_rows}")
    inputs = _read_inputs(store, desc, task.input_ssts, io_threads)
    merged = retain_versions(inputs, desc, task.safe_epoch, drop_tombstones=task.drop_tombstones)
    path = f"{task.output_prefix or f'{path_prefix}/{desc.table_id}/c-{uuid.uuid4().hex}'}-l{task.target_level}.parquet"
    outputs = write_ssts(store, desc, merged, path, level=task.target_level,
                         sub_level=task.output_sub_level if task.target_level == 0 else 0,
                         file_rows=file_rows(task, target_file_bytes, target_file_rows), presorted=True)
    logger.info("table %d: compacted %d SSTs (%d rows, %d bytes, sub-levels %s) into %d L%d SSTs (%d rows)",
                desc.table_id, len(task.input_ssts), task.input_rows, task.input_bytes, list(task.l0_sub_levels),
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
