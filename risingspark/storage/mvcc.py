"""The MVCC merge of SST rows and vectorized key comparisons.

Keys are ``(_vnode, pk...)`` ordered as the SSTs are sorted: every pk column ascending, NULL after
every value (and NaN after every number, before NULL), as Postgres orders ``ASC NULLS LAST``.
For the same key, versions are ordered by ``_epoch`` descending, so the first one is the newest.

>>> import pyarrow as pa
>>> from risingspark.types import Field, INT8
>>> desc = StateTableDesc(1, (Field("k", INT8), Field("v", INT8)), pk=(0,))
>>> rows = pa.table({"_vnode": pa.array([0, 0], pa.int16()), "k": [1, 1], "v": [10, 11],
...                  "_epoch": [1, 2], "_tombstone": [False, False]})
>>> merge_versions([rows], desc, None).column("v").to_pylist()
[11]
>>> merge_versions([rows], desc, 1).column("v").to_pylist()
[10]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeAlias

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from risingspark.chunk import EPOCH, TOMBSTONE, VNODE
from risingspark.errors import InternalError
from risingspark.storage.desc import StateTableDesc
from risingspark.vnode import VNODE_COUNT

Column: TypeAlias = pa.Array | pa.ChunkedArray


def key_names(desc: StateTableDesc) -> list[str]:
    """The key columns of SST rows: ``_vnode`` then the pk columns."""
    return [VNODE, *desc.pk_names]


def sort_keys(desc: StateTableDesc, *, with_epoch: bool = True) -> list[tuple[str, str]]:
    """Arrow sort keys of the SST order: ``(_vnode, pk...)`` ascending, then ``_epoch`` descending."""
    keys = [(name, "ascending") for name in key_names(desc)]
    return keys + [(EPOCH, "descending")] if with_epoch else keys


def sort_table(table: pa.Table, keys: list[tuple[str, str]]) -> pa.Table:
    """`table` sorted (stably) by `keys`, NULLs last."""
    if table.num_rows <= 1:
        return table
    idx = pc.sort_indices(table, sort_keys=keys)  # NULLs go last by default
    return table.take(idx)


def _to_bool(arr: Column) -> np.ndarray:
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks != 1 else arr.chunk(0)
    if arr.null_count:
        arr = pc.fill_null(arr, False)
    return arr.to_numpy(zero_copy_only=False).astype(bool, copy=False)


def _classes(col: Column) -> np.ndarray:
    """0 for a value, 1 for NaN, 2 for NULL: the order of the classes in a sort."""
    cls = np.zeros(len(col), dtype=np.int8)
    if pa.types.is_floating(col.type):
        cls[_to_bool(pc.is_nan(col))] = 1
    if col.null_count:
        cls[_to_bool(pc.is_null(col))] = 2
    return cls


def compare_columns(left: Column, right: Column) -> tuple[np.ndarray, np.ndarray]:
    """Element-wise ``(left > right, left == right)`` in sort order (NaN and NULL last), as numpy."""
    cls_l, cls_r = _classes(left), _classes(right)
    values = (cls_l == 0) & (cls_r == 0)
    gt = (cls_l > cls_r) | (values & _to_bool(pc.greater(left, right)))
    eq = (cls_l == cls_r) & ((cls_l != 0) | _to_bool(pc.equal(left, right)))
    return gt, eq


def compare_rows(left: Sequence[Column], right: Sequence[Column], length: int
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Element-wise lexicographic ``(left > right, left == right)`` of `length` rows given as
    columns (no columns: every row is equal)."""
    n = length
    gt = np.zeros(n, dtype=bool)
    eq = np.ones(n, dtype=bool)
    for lcol, rcol in zip(left, right, strict=True):
        col_gt, col_eq = compare_columns(lcol, rcol)
        gt |= eq & col_gt
        eq &= col_eq
    return gt, eq


def same_key_as_previous(table: pa.Table, names: Sequence[str]) -> np.ndarray:
    """For rows sorted by `names`: whether each row has the same key as the row before it."""
    n = table.num_rows
    same = np.zeros(n, dtype=bool)
    if n > 1:
        cols = [table.column(c).combine_chunks() for c in names]
        _, eq = compare_rows([c.slice(1) for c in cols], [c.slice(0, n - 1) for c in cols], n - 1)
        same[1:] = eq
    return same


def vnode_array(table: pa.Table) -> np.ndarray:
    """The ``_vnode`` column as an int64 numpy array."""
    col = table.column(VNODE)
    if col.num_chunks == 1:
        return col.chunk(0).to_numpy(zero_copy_only=False).astype(np.int64)
    if col.num_chunks == 0:
        return np.zeros(0, dtype=np.int64)
    return col.to_numpy().astype(np.int64)


def compare_to_positions(table: pa.Table, desc: StateTableDesc,
                         positions: pa.Table) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Compare each row's pk with the position of its vnode.

    Args:
        table: rows with ``_vnode`` and the pk columns.
        positions: at most one row per vnode: ``_vnode`` and the pk columns.

    Returns:
        ``(has_position, gt, eq)`` numpy masks; `gt`/`eq` are False where the vnode has no position.
    """
    n = table.num_rows
    if n == 0 or positions.num_rows == 0:
        return np.zeros(n, dtype=bool), np.zeros(n, dtype=bool), np.zeros(n, dtype=bool)
    row_vnodes = vnode_array(table)
    pos_vnodes = vnode_array(positions)
    lut = np.full(max(VNODE_COUNT, int(row_vnodes.max()) + 1, int(pos_vnodes.max()) + 1), -1, np.int64)
    lut[pos_vnodes] = np.arange(len(pos_vnodes))
    slot = lut[row_vnodes]
    has = slot >= 0
    take = pa.array(np.where(has, slot, 0))
    names = desc.pk_names
    broadcast = [positions.column(c).take(take) for c in names]
    gt, eq = compare_rows([table.column(c) for c in names], broadcast, n)
    return has, gt & has, eq & has


def positions_table(desc: StateTableDesc, positions: Mapping[int, tuple | None]) -> pa.Table:
    """The started positions (``_vnode`` + pk columns) of a ``vnode -> pk tuple | None`` mapping."""
    schema = desc.sst_schema()
    started = sorted((v, p) for v, p in positions.items() if p is not None)
    npk = len(desc.pk)
    for v, p in started:
        if len(p) != npk:
            raise InternalError(f"position {p!r} of vnode {v} has {len(p)} values, the pk has {npk}")
    cols = {VNODE: pa.array([v for v, _ in started], pa.int16())}
    for i, name in enumerate(desc.pk_names):
        cols[name] = pa.array([p[i] for _, p in started], schema.field(name).type)
    return pa.table(cols)


def keys_after(table: pa.Table, desc: StateTableDesc, positions_by_vnode: Mapping[int, tuple | None]
               ) -> pa.BooleanArray:
    """Rows whose pk is strictly after the position of their vnode.

    A vnode mapped to None, or absent from the mapping, has not started: all its rows are after.
    """
    has, gt, _ = compare_to_positions(table, desc, positions_table(desc, positions_by_vnode))
    return pa.array(gt | ~has, pa.bool_())


def keys_at_or_before(table: pa.Table, desc: StateTableDesc,
                      positions_by_vnode: Mapping[int, tuple | None]) -> pa.BooleanArray:
    """Rows whose pk is at or before the position of their vnode (none for a vnode not started)."""
    has, gt, _ = compare_to_positions(table, desc, positions_table(desc, positions_by_vnode))
    return pa.array(has & ~gt, pa.bool_())


def concat_sst_tables(tables: Sequence[pa.Table], desc: StateTableDesc) -> pa.Table:
    """Concatenate tables in SST schema (cast to it where a table differs)."""
    schema = desc.sst_schema()
    parts = []
    for t in tables:
        if not t.schema.equals(schema):
            missing = [n for n in schema.names if n not in t.schema.names]
            if missing:
                raise InternalError(f"rows of table {desc.table_id} lack SST columns {missing}")
            t = t.select(schema.names).cast(schema)
        parts.append(t)
    if not parts:
        return schema.empty_table()
    return pa.concat_tables(parts) if len(parts) > 1 else parts[0]


def merge_versions(tables: Sequence[pa.Table], desc: StateTableDesc, epoch: int | None, *,
                   keep_tombstones: bool = False) -> pa.Table:
    """The newest version of every key as of `epoch`, sorted by ``(_vnode, pk)``, in SST schema.

    Args:
        tables: rows in SST schema, from any number of files and levels (keys may repeat).
        epoch: ignore versions written after this epoch (None: read everything).
        keep_tombstones: keep keys whose newest version is a tombstone (dropped by default).

    Two versions of one key with the same epoch should not exist; if they do, the one from the
    earlier table wins (the sort is stable).
    """
    table = concat_sst_tables(tables, desc)
    if epoch is not None and table.num_rows:
        table = table.filter(pc.less_equal(table.column(EPOCH), pa.scalar(epoch, pa.int64())))
    table = sort_table(table, sort_keys(desc))
    if table.num_rows > 1:
        first = ~same_key_as_previous(table, key_names(desc))
        if not first.all():
            table = table.filter(pa.array(first))
    if not keep_tombstones and table.num_rows:
        tomb = table.column(TOMBSTONE)
        if pc.any(tomb).as_py():
            table = table.filter(pc.invert(tomb))
    return table


def retain_versions(tables: Sequence[pa.Table], desc: StateTableDesc, safe_epoch: int | None, *,
                    drop_tombstones: bool) -> pa.Table:
    """The versions a compaction keeps, sorted by ``(_vnode, pk, _epoch desc)``, in SST schema.

    Every version newer than `safe_epoch` is kept (a reader may still read at those epochs), plus the
    newest version at or below it; with `safe_epoch` None only the newest version of each key is kept.
    With `drop_tombstones` (the task holds every older version of its keys) that oldest kept version
    is dropped when it is a tombstone, since it hides nothing any more.
    """
    if safe_epoch is None:
        return merge_versions(tables, desc, None, keep_tombstones=not drop_tombstones)
    table = sort_table(concat_sst_tables(tables, desc), sort_keys(desc))
    if table.num_rows == 0:
        return table
    same = same_key_as_previous(table, key_names(desc))
    epochs = table.column(EPOCH).to_numpy()
    below = epochs <= safe_epoch
    prev_above = np.ones(len(below), dtype=bool)
    prev_above[1:] = ~below[:-1]
    oldest_kept = below & (~same | prev_above)
    keep = ~below | oldest_kept
    if drop_tombstones:
        keep &= ~(oldest_kept & _to_bool(table.column(TOMBSTONE)))
    return table.filter(pa.array(keep))
