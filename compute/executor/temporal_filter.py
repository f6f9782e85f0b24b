"""StreamTemporalFilter: ``column op now() + offset`` in a materialized view, as RisingWave's
`DynamicFilterExecutor` fed by a `NowExecutor`.

now() is the physical time of the epoch (`risingspark.epoch`), so the bound ``B(e) = now(e) +
offset`` moves forward every epoch: with ``>`` / ``>=`` rows leave the output, with ``<`` / ``<=``
they enter it, also in epochs without any input (the job runs every epoch; `compute.stream.dataflow`
seeds a weightless row so it does).

State, one vnode (the filter follows a Single exchange)::

    state table  | _vnode = 0 | column | stream key ... | other input columns |   key (column, stream key)
    bound table  | _vnode = 0 | _rw_key = 0 | _rw_bound_us |                      the bound applied last

Rows whose column is NULL never pass and are not kept. Per epoch, with the last bound ``B0`` (none
before the first epoch: the state is then empty) and the new bound ``B1``:

1. the epoch's input changes update the state (before and after images per state key);
2. a row can change its status only if its key changed this epoch or its column lies between
   ``B0`` and ``B1``: those state rows are one range read of the key's leading column;
3. over these candidates, the output before is the rows (before this epoch's changes) passing at
   ``B0``, the output after is the rows (after them) passing at ``B1``; the executor emits the
   difference per stream key (a row whose column changed is an update, not a delete and insert).

The work per epoch is proportional to the epoch's input and the rows crossing the bound, not to the
state.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from compute.executor.materialize import (
    apply_pairs,
    diff_outputs,
    emit,
    pairs_from_changes,
    with_before_images,
)
from risingspark.chunk import OP, VNODE, Op
from risingspark.epoch import Epoch
from risingspark.storage.desc import StateTableDesc

BOUND_COLUMN = "_rw_bound_us"


@dataclass(frozen=True)
class TemporalFilterSpec:
    state: StateTableDesc  # the input's columns, key (column, stream key), one vnode
    bound_table: StateTableDesc  # TEMPORAL_BOUND_FIELDS
    column: str
    op: str  # ">", ">=", "<", "<="
    offset_us: int
    output_key: tuple[str, ...]  # the input's (and output's) stream key


@dataclass(frozen=True)
class TemporalFilterOutput:
    state_rows: pa.Table  # SST rows of the state table
    bound_rows: pa.Table  # SST rows of the bound table
    changes: pa.Table  # _op, _vnode (0: the next exchange assigns it), the input's columns


def bound_at(spec: TemporalFilterSpec, epoch: int) -> int:
    """``now() + offset`` at `epoch`, in microseconds since the Unix epoch (now() has the epoch's
    millisecond precision, as in RisingWave)."""
    return Epoch(epoch).unix_ms * 1000 + spec.offset_us


def range_to_read(old_bound: int | None, new_bound: int) -> tuple[int, int] | None:
    """The values of the column whose rows may change status between the two bounds (inclusive)."""
    if old_bound is None:
        return None
    return min(old_bound, new_bound), max(old_bound, new_bound)


def passes(spec: TemporalFilterSpec, rows: pa.Table, bound: int) -> pa.Array:
    """``column op bound`` per row, NULL as False."""
    micros = pc.cast(rows.column(spec.column), pa.int64())
    fn = {">": pc.greater, ">=": pc.greater_equal, "<": pc.less, "<=": pc.less_equal}[spec.op]
    return pc.fill_null(fn(micros, pa.scalar(bound, pa.int64())), False)


def temporal_filter_epoch(spec: TemporalFilterSpec, rows: pa.Table, in_range: pa.Table, old_bound: int | None,
                          new_bound: int, epoch: int) -> TemporalFilterOutput:
    """One epoch. `rows`: the input changes (``_op``, ``_vnode``, input columns; weightless seed
    rows, op 0, are ignored); `in_range`: the state rows at the previous epoch (read shape) whose
    column lies in `range_to_read` (empty when it is None)."""
    names = spec.state.names
    rows = rows.filter(pc.and_(pc.not_equal(rows.column(OP), 0), pc.is_valid(rows.column(spec.column))))
    rows = rows.select([OP, VNODE, *names])
    rows = rows.set_column(1, pa.field(VNODE, pa.int16(), nullable=False), pa.array([0] * rows.num_rows, pa.int16()))
    pairs = pairs_from_changes(spec.state, rows)
    state_rows = emit(spec.state, pairs, epoch).sst_rows
    shape = pa.schema([pa.field(VNODE, pa.int16()), *spec.state.value_schema()])
    old = with_before_images(in_range.select([VNODE, *names]).cast(shape), pairs, spec.state)
    new = apply_pairs(old, pairs, spec.state)
    before = old.filter(passes(spec, old, old_bound)) if old_bound is not None else old.slice(0, 0)
    after = new.filter(passes(spec, new, new_bound))
    changes = diff_outputs(names, spec.output_key, before.drop_columns([VNODE]), after.drop_columns([VNODE]))
    return TemporalFilterOutput(state_rows, bound_rows(spec, new_bound, epoch), changes)


def bound_rows(spec: TemporalFilterSpec, bound: int, epoch: int) -> pa.Table:
    """The bound table's SST rows recording `bound` at `epoch`."""
    row = pa.table({OP: pa.array([int(Op.INSERT)], pa.int8()), VNODE: pa.array([0], pa.int16()),
                    "_rw_key": pa.array([0], pa.int16()), BOUND_COLUMN: pa.array([bound], pa.int64())})
    return emit(spec.bound_table, pairs_from_changes(spec.bound_table, row), epoch).sst_rows


def last_bound(bound_state: pa.Table) -> int | None:
    """The bound recorded in the bound table's rows (read shape), None before the first epoch."""
    return bound_state.column(BOUND_COLUMN)[0].as_py() if bound_state.num_rows else None

