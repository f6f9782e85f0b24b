"""Writing and reading SSTs: immutable Parquet files of one state table.

Layout (`StateTableDesc.sst_schema`), rows sorted by ``(_vnode, pk...)`` ascending then ``_epoch``
descending, so the newest version of a key comes first::

    | _vnode int16 | value columns ... (pk among them) | _epoch int64 | _tombstone bool |

A tombstone row keeps its pk columns; its other value columns may be NULL. Row groups carry min/max
statistics, so a reader can skip the row groups of vnodes it does not need.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from risingspark.chunk import EPOCH, TOMBSTONE, VNODE
from risingspark.errors import InternalError
from risingspark.storage.cache import BlockCache
from risingspark.storage.desc import SstableInfo, StateTableDesc
from risingspark.storage.mvcc import sort_keys, sort_table
from risingspark.storage.object_store import ObjectStore

logger = logging.getLogger(__name__)

DEFAULT_ROW_GROUP_SIZE = 65536


def to_sst_schema(desc: StateTableDesc, table: pa.Table) -> pa.Table:
    """`table`'s columns in SST order and types (a safe cast; missing columns are an error)."""
    schema = desc.sst_schema()
    if table.schema.equals(schema):
        return table
    missing = [n for n in schema.names if n not in table.schema.names]
    if missing:
        raise InternalError(f"rows for table {desc.table_id} lack SST columns {missing}")
    table = table.select(schema.names)
    for name in (VNODE, EPOCH, TOMBSTONE):
        if table.column(name).null_count:
            raise InternalError(f"rows for table {desc.table_id} have NULL {name}")
    try:
        return table.cast(schema, safe=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        raise InternalError(f"rows for table {desc.table_id} do not fit its SST schema: {e}") from e


def sort_sst_rows(desc: StateTableDesc, table: pa.Table) -> pa.Table:
    """Rows in SST column order, sorted by ``(_vnode, pk...)`` then ``_epoch`` descending."""
    return sort_table(to_sst_schema(desc, table), sort_keys(desc))


def sst_info(desc: StateTableDesc, rows: pa.Table, path: str, size_bytes: int, *, level: int,
             sub_level: int) -> SstableInfo:
    """The `SstableInfo` of SST `rows` (in SST schema, non-empty) written at `path`."""
    vnodes = pc.min_max(rows.column(VNODE))
    epochs = pc.min_max(rows.column(EPOCH))
    tombstones = pc.sum(rows.column(TOMBSTONE).cast(pa.int64())).as_py() or 0
    return SstableInfo(path=path, table_id=desc.table_id, level=level, sub_level=sub_level,
                       min_vnode=vnodes["min"].as_py(), max_vnode=vnodes["max"].as_py(),
                       min_epoch=epochs["min"].as_py(), max_epoch=epochs["max"].as_py(),
                       row_count=rows.num_rows, tombstone_count=int(tombstones), size_bytes=size_bytes)


def write_sst(store: ObjectStore, desc: StateTableDesc, rows: pa.Table, path: str, *, level: int,
              sub_level: int, row_group_size: int = DEFAULT_ROW_GROUP_SIZE,
              presorted: bool = False) -> SstableInfo:
    """Write `rows` as one SST at `path` and describe it (``sst_id`` 0 until meta assigns one).

    Args:
        rows: ``_vnode``, the value columns, ``_epoch`` and ``_tombstone``, in any column order.
        presorted: the rows are already in SST order and schema (skips the sort).
    """
    if rows.num_rows == 0:
        raise InternalError(f"refusing to write an empty SST for table {desc.table_id} at {path}")
    rows = to_sst_schema(desc, rows) if presorted else sort_sst_rows(desc, rows)
    sorting = [pq.SortingColumn(i, descending=(name == EPOCH), nulls_first=False)
               for i, name in enumerate(rows.schema.names) if name in {VNODE, EPOCH, *desc.pk_names}]
    order = {name: i for i, (name, _) in enumerate(sort_keys(desc))}
    sorting.sort(key=lambda s: order[rows.schema.names[s.column_index]])
    size = store.write_parquet(path, rows, row_group_size=row_group_size, sorting_columns=sorting,
                               compression="zstd")
    info = sst_info(desc, rows, path, size, level=level, sub_level=sub_level)
    logger.debug("table %d: wrote SST %s (L%d, %d rows, %d tombstones, vnodes %d..%d, %d bytes)",
                 desc.table_id, path, level, info.row_count, info.tombstone_count, info.min_vnode,
                 info.max_vnode, size)
    return info


def _row_groups_for(meta: pq.FileMetaData, vnode_col: int, vnodes: np.ndarray) -> list[int] | None:
    """Row groups whose ``_vnode`` statistics meet `vnodes` (sorted), or None when all do."""
    keep = []
    for rg in range(meta.num_row_groups):
        stats = meta.row_group(rg).column(vnode_col).statistics
        if stats is None or not stats.has_min_max:
            keep.append(rg)
            continue
        i = np.searchsorted(vnodes, stats.min, side="left")
        if i < len(vnodes) and vnodes[i] <= stats.max:
            keep.append(rg)
    return None if len(keep) == meta.num_row_groups else keep


def read_sst(store: ObjectStore, path: str, desc: StateTableDesc, *, cache: BlockCache | None = None,
             vnodes: Iterable[int] | None = None) -> pa.Table:
    """The rows of an SST, in SST schema.

    With a `cache` the whole file is read and kept. Without one, `vnodes` (when given) lets the read
    skip the row groups holding none of them; the result may still hold rows of other vnodes.
    """
    schema = desc.sst_schema()

    def load() -> pa.Table:
        return _conform(store.read_parquet(path), schema, path)

    if cache is not None:
        return cache.get_or_load(f"{store.url}::{path}", load)
    if vnodes is None:
        return load()
    wanted = np.unique(np.fromiter(vnodes, dtype=np.int64))
    with store.filesystem.open_input_file(store.full_path(path)) as f:
        pf = pq.ParquetFile(f)
        groups = _row_groups_for(pf.metadata, pf.schema_arrow.get_field_index(VNODE), wanted)
        table = pf.read() if groups is None else pf.read_row_groups(groups)
    return _conform(table, schema, path)


def _conform(table: pa.Table, schema: pa.Schema, path: str) -> pa.Table:
    if table.schema.equals(schema):
        return table
    try:
        return table.select(schema.names).cast(schema)
    except (KeyError, pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        raise InternalError(f"SST {path} does not match its table's schema: {e}") from e
