"""Vectorized helpers over Arrow tables keyed by ``(_vnode, key columns)``.

SQL joins never match NULL keys, but a group key may be NULL and a NULL group is one group: these
helpers join and deduplicate with NULL equal to NULL.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from risingspark.chunk import VNODE

_NULL_FLAG = "__null_"
_FILLED = "__key_"


def _zero(t: pa.DataType) -> pa.Scalar:
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return pa.scalar("", t)
    if pa.types.is_boolean(t):
        return pa.scalar(False, t)
    if pa.types.is_timestamp(t) or pa.types.is_date(t):
        return pa.scalar(0, pa.int64()).cast(t) if pa.types.is_timestamp(t) else pa.scalar(0, pa.int32()).cast(t)
    return pa.scalar(0, t)


def join_keys(table: pa.Table, keys: list[str]) -> tuple[pa.Table, list[str]]:
    """Add NULL-safe join columns for `keys`; returns the table and the names to join on."""
    names = []
    for k in keys:
        col = table.column(k)
        if col.null_count == 0 and k == VNODE:
            names.append(k)
            continue
        flag, filled = f"{_NULL_FLAG}{k}", f"{_FILLED}{k}"
        table = table.append_column(flag, pc.is_null(col))
        table = table.append_column(filled, pc.fill_null(col, _zero(col.type)))
        names += [flag, filled]
    return table, names


def drop_join_keys(table: pa.Table) -> pa.Table:
    return table.drop_columns([n for n in table.column_names if n.startswith((_NULL_FLAG, _FILLED))])


PRESENT = "__present"


def left_join(left: pa.Table, right: pa.Table, keys: list[str], *, right_suffix: str = "__r") -> pa.Table:
    """Left outer join on `keys` with NULL matching NULL. The right side must have at most one row
    per key; its columns (keys included) get `right_suffix`, and ``__present{suffix}`` tells
    whether a left row found a match."""
    right = right.append_column(PRESENT, pa.array([True] * right.num_rows, pa.bool_()))
    if _has_nested(left) or _has_nested(right):
        return _left_join_by_position(left, right, keys, right_suffix)
    lt, lk = join_keys(left, keys)
    rt, rk = join_keys(right, keys)
    rt = rt.rename_columns([c if c in rk else f"{c}{right_suffix}" for c in rt.column_names])
    joined = lt.join(rt, keys=lk, join_type="left outer", coalesce_keys=True)
    present = f"{PRESENT}{right_suffix}"
    joined = joined.set_column(joined.column_names.index(present), present,
                               pc.fill_null(joined.column(present), False))
    return drop_join_keys(joined)


def _has_nested(table: pa.Table) -> bool:
    return any(pa.types.is_nested(f.type) for f in table.schema)


_LEFT_POS, _RIGHT_POS = "__lpos", "__rpos"


def _left_join_by_position(left: pa.Table, right: pa.Table, keys: list[str], right_suffix: str) -> pa.Table:
    """`left_join` of tables with list columns (array_agg results), which Arrow's hash join cannot
    carry: the join matches row positions only, then every column is taken by position."""
    lt, lk = join_keys(left.select(keys).append_column(_LEFT_POS, pa.array(range(left.num_rows), pa.int64())), keys)
    rt, _ = join_keys(right.select(keys).append_column(_RIGHT_POS, pa.array(range(right.num_rows), pa.int64())),
                      keys)
    joined = lt.select([*lk, _LEFT_POS]).join(rt.select([*lk, _RIGHT_POS]), keys=lk, join_type="left outer")
    joined = joined.sort_by(_LEFT_POS)
    out = left.take(joined.column(_LEFT_POS))
    rpos = joined.column(_RIGHT_POS)
    for name in right.column_names:
        column = right.column(name).take(rpos)
        out = out.append_column(f"{name}{right_suffix}", column)
    present = f"{PRESENT}{right_suffix}"
    return out.set_column(out.column_names.index(present), present, pc.fill_null(out.column(present), False))


def filter_by_keys(table: pa.Table, keys_table: pa.Table, keys: list[str], *, keep: bool) -> pa.Table:
    """The rows of `table` whose key is (`keep`) or is not in `keys_table`, NULL equal to NULL
    (a semi / anti join that also carries list columns)."""
    if table.num_rows == 0:
        return table
    lt, lk = join_keys(table.select(keys).append_column(_LEFT_POS, pa.array(range(table.num_rows), pa.int64())),
                       keys)
    rt, _ = join_keys(keys_table.select(keys).cast(table.select(keys).schema), keys)
    hits = lt.select([*lk, _LEFT_POS]).join(rt.select(lk), keys=lk, join_type="left semi" if keep else "left anti")
    return table.take(pa.array(np.sort(hits.column(_LEFT_POS).to_numpy()), pa.int64()))


def distinct_keys(tables: list[pa.Table], keys: list[str]) -> pa.Table:
    """The distinct keys appearing in any of `tables`."""
    parts = [t.select(keys) for t in tables if t.num_rows]
    if not parts:
        return tables[0].select(keys).slice(0, 0)
    return first_per_key(pa.concat_tables(parts), keys)


def same_key_as_previous(table: pa.Table, keys: list[str]) -> pa.Array:
    """For a table sorted by `keys`: True where a row has the same key as the row before it."""
    n = table.num_rows
    if n == 0:
        return pa.array([], pa.bool_())
    same = pa.array([True] * (n - 1), pa.bool_())
    for k in keys:
        col = table.column(k).combine_chunks()
        same = pc.and_(same, _equal(col.slice(1), col.slice(0, n - 1)))
    return pa.concat_arrays([pa.array([False]), same])


def _equal(x: pa.Array | pa.ChunkedArray, y: pa.Array | pa.ChunkedArray) -> pa.Array:
    """Element-wise ``x = y`` with NULL equal to NULL and NaN equal to NaN (as Postgres compares keys,
    and as Arrow's hash joins and group-bys match them)."""
    if pa.types.is_nested(x.type):  # arrays (array_agg): Arrow has no equality kernel for lists
        return pa.array([a == b for a, b in zip(x.to_pylist(), y.to_pylist(), strict=True)], pa.bool_())
    same = pc.and_(pc.is_null(x), pc.is_null(y))
    if pa.types.is_floating(x.type):
        same = pc.or_(same, pc.fill_null(pc.and_(pc.is_nan(x), pc.is_nan(y)), False))
    return pc.or_(pc.fill_null(pc.equal(x, y), False), same)


def last_per_key(table: pa.Table, keys: list[str], order: str) -> pa.Table:
    """The row with the greatest `order` value of each key."""
    if table.num_rows == 0:
        return table
    sort = [(k, "ascending", "at_start") for k in keys] + [(order, "descending", "at_start")]
    t = table.take(pc.sort_indices(table, sort_keys=sort))
    return t.filter(pc.invert(same_key_as_previous(t, keys)))


def first_per_key(table: pa.Table, keys: list[str]) -> pa.Table:
    """One (arbitrary) row per key."""
    if table.num_rows == 0:
        return table
    t = table.take(pc.sort_indices(table, sort_keys=[(k, "ascending", "at_start") for k in keys]))
    return t.filter(pc.invert(same_key_as_previous(t, keys)))


def rows_equal(a: pa.Table, b: pa.Table, columns: list[str]) -> pa.Array:
    """Row-wise equality of two aligned tables over `columns`, NULL equal to NULL, NaN to NaN."""
    n = a.num_rows
    eq = pa.array([True] * n, pa.bool_())
    for c in columns:
        eq = pc.and_(eq, _equal(a.column(c), b.column(c)))
    return eq
