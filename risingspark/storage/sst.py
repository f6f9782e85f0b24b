"""Writing and reading SSTs: immutable Parquet files of one state table.

Layout (`file_schema`: `StateTableDesc.sst_schema` and the key), rows sorted by ``(_vnode, pk...)``
ascending then ``_epoch`` descending, so the newest version of a key comes first::

    | _vnode int16 | value columns ... (pk among them) | _epoch int64 | _tombstone bool | _key binary |

``_key`` is the memcomparable encoding of ``(_vnode, pk...)`` (`risingspark.storage.memcmp`): its
byte order is the rows' order, so one binary search finds a key. A tombstone row keeps its pk
columns; its other value columns may be NULL. The file is cut into **blocks** (Parquet row groups of
`DEFAULT_BLOCK_ROWS` rows, compressed with LZ4, which decodes several times faster than zstd for a
small block) and carries its index in the footer (`risingspark.storage.sst_meta`): the first key of
every block and a bloom filter of key prefixes. ``_vnode`` has row-group statistics, so a reader of
whole vnodes (a snapshot split in Spark) skips the row groups of the others.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from risingspark.chunk import EPOCH, KEY, TOMBSTONE, VNODE
from risingspark.errors import InternalError
from risingspark.storage.bloom import BloomFilter
from risingspark.storage.cache import BlockCache
from risingspark.storage.desc import SstableInfo, StateTableDesc
from risingspark.storage.memcmp import encode_keys
from risingspark.storage.mvcc import sort_keys, sort_table
from risingspark.storage.object_store import ObjectStore
from risingspark.storage.sst_meta import META_KEY, encode_meta

logger = logging.getLogger(__name__)

DEFAULT_BLOCK_ROWS = 1024
DEFAULT_ROW_GROUP_SIZE = DEFAULT_BLOCK_ROWS
BLOOM_BITS_PER_KEY = 10
# A checkpoint's SSTs are cut at about this many rows (about the size compaction cuts its outputs
# at), so a big write — a backfill epoch, a bulk load — forms an L0 sub-level of many key-disjoint
# SSTs that compaction can move down a few at a time (`meta.compaction.l0_picker`).
FLUSH_FILE_ROWS = 262144


def file_schema(desc: StateTableDesc) -> pa.Schema:
    """The columns of an SST file: the SST schema and ``_key``."""
    return desc.sst_schema().append(pa.field(KEY, pa.binary(), nullable=False))


def bloom_prefix(desc: StateTableDesc) -> int:
    """How many pk columns the bloom filter's keys hold: the distribution key when it leads the pk
    (a join side, an aggregation's input state and a TopN are looked up by it, as RisingWave's
    prefix bloom filter on the distribution key), else the whole pk."""
    n = len(desc.dist_key)
    if 0 < n < len(desc.pk) and tuple(desc.pk[:n]) == tuple(desc.dist_key):
        return n
    return len(desc.pk)


def encode_row_keys(desc: StateTableDesc, rows: pa.Table, prefix: int | None = None) -> pa.Array:
    """The memcomparable ``_key`` of `rows` (``_vnode`` + pk columns), or of their first `prefix`
    pk columns."""
    names = desc.pk_names if prefix is None else desc.pk_names[:prefix]
    return encode_keys(rows.column(VNODE), [rows.column(n) for n in names])


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
    keys = rows.column(KEY) if KEY in rows.schema.names else None
    bounds = {} if keys is None else {"min_key": keys[0].as_py(), "max_key": keys[rows.num_rows - 1].as_py()}
    return SstableInfo(path=path, table_id=desc.table_id, level=level, sub_level=sub_level,
                       min_vnode=vnodes["min"].as_py(), max_vnode=vnodes["max"].as_py(),
                       min_epoch=epochs["min"].as_py(), max_epoch=epochs["max"].as_py(),
                       row_count=rows.num_rows, tombstone_count=int(tombstones), size_bytes=size_bytes, **bounds)


def write_sst(store: ObjectStore, desc: StateTableDesc, rows: pa.Table, path: str, *, level: int,
              sub_level: int, row_group_size: int = DEFAULT_BLOCK_ROWS,
              presorted: bool = False) -> SstableInfo:
    """Write `rows` as one SST at `path` and describe it (``sst_id`` 0 until meta assigns one).

    Args:
        rows: ``_vnode``, the value columns, ``_epoch`` and ``_tombstone``, in any column order.
        row_group_size: rows per block.
        presorted: the rows are already in SST order and schema (skips the sort); a ``_key`` column
            among them (a compaction's merged rows) is kept as it is.
    """
    if rows.num_rows == 0:
        raise InternalError(f"refusing to write an empty SST for table {desc.table_id} at {path}")
    if row_group_size < 1:
        raise InternalError(f"an SST block needs at least one row, got {row_group_size}")
    key = rows.column(KEY) if presorted and KEY in rows.schema.names else None
    rows = to_sst_schema(desc, rows) if presorted else sort_sst_rows(desc, rows)
    if key is None:
        key = encode_row_keys(desc, rows)
    rows = rows.append_column(file_schema(desc).field(KEY), key)
    prefix = bloom_prefix(desc)
    bloom_keys = key if prefix == len(desc.pk) else encode_row_keys(desc, rows, prefix)
    bloom = BloomFilter.build(bloom_keys, bits_per_key=BLOOM_BITS_PER_KEY)
    firsts = key.take(pa.array(range(0, rows.num_rows, row_group_size)))
    index = encode_meta(rows.num_rows, row_group_size, firsts, key[rows.num_rows - 1].as_py(), bloom, prefix)
    sorting = [pq.SortingColumn(i, descending=(name == EPOCH), nulls_first=False)
               for i, name in enumerate(rows.schema.names) if name in {VNODE, EPOCH, *desc.pk_names}]
    order = {name: i for i, (name, _) in enumerate(sort_keys(desc))}
    sorting.sort(key=lambda s: order[rows.schema.names[s.column_index]])
    size = store.write_parquet(path, rows, row_group_size=row_group_size, sorting_columns=sorting,
                               compression="lz4", write_statistics=[VNODE],
                               use_dictionary=[n for n in rows.schema.names if n != KEY],
                               key_value_metadata={META_KEY: index})
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


def split_at_keys(same_as_previous: np.ndarray, target_rows: int) -> list[tuple[int, int]]:
    """Cut sorted rows into ``[start, end)`` ranges of about `target_rows` rows, cutting only where
    a new key starts (`same_as_previous` is False), so a key's versions stay in one range.

    >>> split_at_keys(np.array([False, True, False, False, True, True, False]), 2)
    [(0, 2), (2, 6), (6, 7)]
    """
    n = len(same_as_previous)
    if n == 0:
        return []
    starts = np.flatnonzero(~same_as_previous)  # rows where a key starts (row 0 among them)
    ranges, start = [], 0
    while start < n:
        i = int(np.searchsorted(starts, start + max(1, target_rows), side="left"))
        end = int(starts[i]) if i < len(starts) else n
        ranges.append((start, end))
        start = end
    return ranges


def write_ssts(store: ObjectStore, desc: StateTableDesc, rows: pa.Table, path: str, *, level: int,
               sub_level: int, file_rows: int = FLUSH_FILE_ROWS, presorted: bool = False) -> list[SstableInfo]:
    """Write `rows` as SSTs of about `file_rows` rows each (cut only between keys, so the SSTs have
    disjoint key ranges), at `path` with ``-0``, ``-1``... before its suffix when there are several.
    Returns their infos in key order. `presorted` as `write_sst`. If a write fails, the SSTs already
    written are deleted (best effort) and the error propagates."""
    if rows.num_rows == 0:
        return []
    if rows.num_rows <= file_rows:
        return [write_sst(store, desc, rows, path, level=level, sub_level=sub_level, presorted=presorted)]
    key = rows.column(KEY) if presorted and KEY in rows.schema.names else None
    rows = to_sst_schema(desc, rows) if presorted else sort_sst_rows(desc, rows)
    if key is None:
        key = encode_row_keys(desc, rows)
    rows = rows.append_column(file_schema(desc).field(KEY), key)
    n = rows.num_rows
    same = np.zeros(n, dtype=bool)
    same[1:] = pc.equal(key.slice(1), key.slice(0, n - 1)).to_numpy(zero_copy_only=False)
    ranges = split_at_keys(same, file_rows)
    stem, dot, suffix = path.rpartition(".")
    out: list[SstableInfo] = []
    try:
        for i, (start, end) in enumerate(ranges):
            part = f"{stem}-{i}{dot}{suffix}" if dot else f"{path}-{i}"
            out.append(write_sst(store, desc, rows.slice(start, end - start), part, level=level,
                                 sub_level=sub_level, presorted=True))
    except BaseException:
        store.delete(o.path for o in out)
        raise
    return out


def read_sst(store: ObjectStore, path: str, desc: StateTableDesc, *, cache: BlockCache | None = None,
             vnodes: Iterable[int] | None = None, with_key: bool = False) -> pa.Table:
    """The rows of an SST, in SST schema (`file_schema` with `with_key`; a file written without
    ``_key`` gets it computed).

    With a `cache` the whole file is read and kept. Without one, `vnodes` (when given) lets the read
    skip the row groups holding none of them; the result may still hold rows of other vnodes.
    """
    schema = file_schema(desc) if with_key else desc.sst_schema()

    def load() -> pa.Table:
        table = store.read_parquet(path)
        if with_key and KEY not in table.schema.names:
            table = _conform(table, desc.sst_schema(), path)
            table = table.append_column(schema.field(KEY), encode_row_keys(desc, table))
        return _conform(table, schema, path)

    if cache is not None:
        return cache.get_or_load(f"{store.url}::{path}{'::key' if with_key else ''}", load)
    if vnodes is None:
        return load()
    wanted = np.unique(np.fromiter(vnodes, dtype=np.int64))
    with store.filesystem.open_input_file(store.full_path(path)) as f:
        pf = pq.ParquetFile(f)
        groups = _row_groups_for(pf.metadata, pf.schema_arrow.get_field_index(VNODE), wanted)
        table = pf.read() if groups is None else pf.read_row_groups(groups)
    if with_key and KEY not in table.schema.names:
        table = _conform(table, desc.sst_schema(), path)
        table = table.append_column(schema.field(KEY), encode_row_keys(desc, table))
    return _conform(table, schema, path)


def _conform(table: pa.Table, schema: pa.Schema, path: str) -> pa.Table:
    if table.schema.equals(schema):
        return table
    try:
        return table.select(schema.names).cast(schema)
    except (KeyError, pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        raise InternalError(f"SST {path} does not match its table's schema: {e}") from e
