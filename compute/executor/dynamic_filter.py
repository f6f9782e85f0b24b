"""StreamDynamicFilter: ``key op bound`` where the bound is the one value of another stream (a
scalar subquery: ``WHERE amount > (SELECT avg(amount) FROM t)``), as RisingWave's
`DynamicFilterExecutor`. `compute.executor.temporal_filter` is the same algorithm with now() as the
bound.

A cross join with the one-row side and a filter would re-read every row whenever the value moves;
here only the rows between the old and the new value can change their status, and they are one
range read of the state, keyed by the compared value:

    state table  | _vnode = 0 | key | stream key ... | other input columns |   key (key, stream key)
    bound table  | _vnode = 0 | _rw_key = 0 | _rw_bound |                    the bound applied last

Both inputs follow a Single exchange (one task). Per epoch, with the last bound ``B0`` (NULL before
the first value, or when the value is NULL: nothing passes) and the new bound ``B1`` (the right
input's after-image this epoch, else ``B0``):

1. the left input's changes update the state (rows whose key is NULL never pass and are not kept);
2. a row can change its status only if it changed this epoch or its key lies between ``B0`` and
   ``B1`` — with one of them NULL, on the passing side of the other: one range read;
3. over these candidates, the output before is the rows (before this epoch's changes) passing at
   ``B0``, the output after is the rows (after them) passing at ``B1``; the difference per stream key
   is emitted.

The work per epoch is proportional to the epoch's changes and the rows crossing the bound, never to
the state.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from compute.executor.materialize import (
    apply_pairs,
    diff_outputs,
    emit,
    pairs_from_changes,
    with_before_images,
)
from risingspark.chunk import OP, VNODE, Op, is_insert_op
from risingspark.storage.desc import StateTableDesc

BOUND_COLUMN = "_rw_bound"
SIDE = "_side"
_COMPARE = {">": pc.greater, ">=": pc.greater_equal, "<": pc.less, "<=": pc.less_equal}


@dataclass(frozen=True)
class DynamicFilterSpec:
    state: StateTableDesc  # the left input's columns, key (key column, stream key), one vnode
    bound_table: StateTableDesc  # (_rw_key SMALLINT, _rw_bound <key type>)
    key: str  # the compared column of the left input
    op: str  # ">", ">=", "<", "<=": key op bound
    bound: str  # the right input's value column
    output_key: tuple[str, ...]  # the left input's (and output's) stream key


@dataclass(frozen=True)
class DynamicFilterOutput:
    state_rows: pa.Table  # SST rows of the state table
    bound_rows: pa.Table  # SST rows of the bound table (empty when the bound did not change)
    changes: pa.Table  # _op, _vnode (0: the next exchange assigns it), the left input's columns


def new_bound(spec: DynamicFilterSpec, right: pa.Table, old: Any) -> tuple[Any, bool]:
    """The bound after the right input's changes of the epoch (``_op`` + the value column): its
    last inserted value, NULL when its row was only deleted, else unchanged; and whether it changed."""
    if right.num_rows == 0:
        return old, False
    inserted = right.filter(is_insert_op(right.column(OP)))
    value = inserted.column(spec.bound)[-1].as_py() if inserted.num_rows else None
    return value, True


def range_to_read(spec: DynamicFilterSpec, old: Any, new: Any) -> tuple[bool, Any, Any]:
    """Whether to read, and the key range ``[lo, hi]`` (None: unbounded) of the rows that may change
    status between bounds `old` and `new`."""
    if old == new or (old is None and new is None):
        return False, None, None
    if old is not None and new is not None:
        return True, min(old, new), max(old, new)
    b = old if old is not None else new
    return (True, b, None) if spec.op in (">", ">=") else (True, None, b)


def passes(spec: DynamicFilterSpec, rows: pa.Table, bound: Any) -> pa.Array:
    """``key op bound`` per row, NULL as False."""
    if bound is None or rows.num_rows == 0:
        return pa.array([False] * rows.num_rows, pa.bool_())
    col = rows.column(spec.key)
    return pc.fill_null(_COMPARE[spec.op](col, pa.scalar(bound, col.type)), False)


def dynamic_filter_epoch(spec: DynamicFilterSpec, rows: pa.Table, in_range: pa.Table, old_bound: Any, bound: Any,
                         bound_changed: bool, epoch: int) -> DynamicFilterOutput:
    """One epoch. `rows`: the left input's changes (``_op``, ``_vnode``, its columns); `in_range`:
    the state rows at the previous epoch (read shape) in `range_to_read`."""
    names = spec.state.names
    rows = rows.filter(pc.is_valid(rows.column(spec.key))).select([OP, VNODE, *names])
    rows = rows.set_column(1, pa.field(VNODE, pa.int16(), nullable=False), pa.array([0] * rows.num_rows, pa.int16()))
    pairs = pairs_from_changes(spec.state, rows)
    state_rows = emit(spec.state, pairs, epoch).sst_rows
    shape = pa.schema([pa.field(VNODE, pa.int16()), *spec.state.value_schema()])
    old = with_before_images(in_range.select([VNODE, *names]).cast(shape), pairs, spec.state)
    new = apply_pairs(old, pairs, spec.state)
    before = old.filter(passes(spec, old, old_bound))
    after = new.filter(passes(spec, new, bound))
    changes = diff_outputs(names, spec.output_key, before.drop_columns([VNODE]), after.drop_columns([VNODE]))
    bound_rows = _bound_rows(spec, bound, epoch) if bound_changed else _empty_bound_rows(spec, epoch)
    return DynamicFilterOutput(state_rows, bound_rows, changes)


def _bound_rows(spec: DynamicFilterSpec, bound: Any, epoch: int) -> pa.Table:
    value_type = spec.bound_table.fields[1].type.to_arrow()
    row = pa.table({OP: pa.array([int(Op.INSERT)], pa.int8()), VNODE: pa.array([0], pa.int16()),
                    "_rw_key": pa.array([0], pa.int16()), BOUND_COLUMN: pa.array([bound], value_type)})
    return emit(spec.bound_table, pairs_from_changes(spec.bound_table, row), epoch).sst_rows


def _empty_bound_rows(spec: DynamicFilterSpec, epoch: int) -> pa.Table:
    return _bound_rows(spec, None, epoch).slice(0, 0)


def last_bound(bound_state: pa.Table) -> Any:
    """The bound recorded in the bound table's rows (read shape), None before the first epoch."""
    return bound_state.column(BOUND_COLUMN)[0].as_py() if bound_state.num_rows else None
