"""StreamTopN / StreamGroupTopN: the first rows of each group in an order, with retraction, as
RisingWave's `TopNExecutor` and `GroupTopNExecutor`.

``ORDER BY o LIMIT n OFFSET m`` in a materialized view keeps rows ``m .. m + n - 1`` of its input
in that order (one group: the whole input); ``ROW_NUMBER() OVER (PARTITION BY g ORDER BY o)``
numbers the rows of each group, and a filter ``rn <= n`` over it becomes the limit (the rank is
then an output column).

State: every input row, keyed by ``(group key, order columns, the input's stream key)`` and
distributed by the group key, as RisingWave's managed TopN state. For an epoch's input (all rows of
a group land in one task), the executor reads the rows of the groups the epoch touched, applies the
epoch's images, ranks the old and the new rows of each group (ties broken by the stream key, so the
answer is deterministic) and diffs the two selections per stream key: only rows entering, leaving or
changing rank are emitted. Groups the epoch did not touch are never read.

A touched group costs its rows: the worker's state cache holds groups whole (`compute.cache`), so a
hot group is read from storage once; a group too big for the cache is read every epoch it changes.
RisingWave caches only each group's top rows, which needs the state key ordered by the TopN's
ORDER BY, descending columns included; here the state key orders every column ascending.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from compute.executor.keyed import distinct_keys, filter_by_keys, same_key_as_previous
from compute.executor.materialize import apply_pairs, diff_outputs, emit, pairs_from_changes
from risingspark.chunk import OP, VNODE
from risingspark.storage.desc import StateTableDesc


@dataclass(frozen=True)
class TopNSpec:
    state: StateTableDesc  # fields: the input's columns
    group_key: tuple[str, ...]  # () for a plain TopN
    order: tuple[tuple[str, bool, bool], ...]  # (column, descending, nulls first)
    limit: int | None  # None: every row (row numbers only)
    offset: int
    output_key: tuple[str, ...]  # the input's (and output's) stream key
    rank_column: str | None = None  # the row number, appended to the input's columns

    @property
    def output_names(self) -> list[str]:
        return [*self.state.names, *([self.rank_column] if self.rank_column else [])]


@dataclass(frozen=True)
class TopNOutput:
    state_rows: pa.Table
    changes: pa.Table  # _op, _vnode (0: the next exchange assigns it), output columns


def touched_groups(spec: TopNSpec, rows: pa.Table) -> pa.Table:
    return distinct_keys([rows.select([VNODE, *spec.group_key])], [VNODE, *spec.group_key])


def top_n_epoch(spec: TopNSpec, rows: pa.Table, state: pa.Table, epoch: int) -> TopNOutput:
    """One epoch. `rows`: the input changes (``_op``, ``_vnode``, input columns); `state`: the state
    rows (``_vnode`` + input columns) at the previous epoch of (at least) the touched groups."""
    names = spec.state.names
    pairs = pairs_from_changes(spec.state, rows.select([OP, VNODE, *names]))
    state_rows = emit(spec.state, pairs, epoch).sst_rows
    groups = touched_groups(spec, rows)
    old = _of_groups(state.select([VNODE, *names]), groups)
    new = apply_pairs(old, pairs, spec.state)
    return TopNOutput(state_rows, diff_outputs(spec.output_names, spec.output_key, rank(spec, old), rank(spec, new)))


def _of_groups(state: pa.Table, groups: pa.Table) -> pa.Table:
    """The rows of `state` in one of `groups` (``_vnode`` + group key; a NULL group key is a group)."""
    if state.num_rows == 0:
        return state
    return filter_by_keys(state, groups, groups.column_names, keep=True)


def rank(spec: TopNSpec, rows: pa.Table) -> pa.Table:
    """The selected rows of each group (output columns, no ``_vnode``), with their row numbers."""
    ordered, _, position = sort_groups(spec, rows)
    keep = position >= spec.offset
    if spec.limit is not None:
        keep &= position < spec.offset + spec.limit
    selected = ordered.filter(pa.array(keep, pa.bool_()))
    if spec.rank_column:
        selected = selected.append_column(spec.rank_column, pa.array(position[keep] + 1, pa.int64()))
    return selected


def sort_groups(spec: TopNSpec, rows: pa.Table) -> tuple[pa.Table, np.ndarray, np.ndarray]:
    """`rows` (without ``_vnode``) sorted by group, order columns and stream key; each row's group
    number and its position in the group."""
    rows = rows.drop_columns([VNODE]) if VNODE in rows.column_names else rows
    n = rows.num_rows
    keys: list[tuple[str, str]] = []
    helpers: dict[str, pa.Array] = {}
    for g in spec.group_key:
        keys += _null_first(rows, g, helpers, nulls_first=True)
        keys.append((g, "ascending"))
    for col, desc, nulls_first in spec.order:
        keys += _null_first(rows, col, helpers, nulls_first=nulls_first)
        c = rows.column(col)
        if pa.types.is_floating(c.type):  # NaN sorts above every number, as in Postgres
            flag = f"__nan_{len(helpers)}"
            helpers[flag] = pc.fill_null(pc.is_nan(c), False)
            keys.append((flag, "descending" if desc else "ascending"))
        keys.append((col, "descending" if desc else "ascending"))
    keys += [(k, "ascending") for k in spec.output_key]
    work = rows
    for name, arr in helpers.items():
        work = work.append_column(name, arr)
    order = pc.sort_indices(work, sort_keys=keys) if n else pa.array([], pa.uint64())
    ordered = rows.take(order)
    if spec.group_key and n:
        start = np.asarray(pc.invert(same_key_as_previous(ordered, list(spec.group_key))))
    else:
        start = np.zeros(n, dtype=bool)
        start[:1] = True
    group = np.cumsum(start) - 1
    position = np.arange(n) - np.flatnonzero(start)[group] if n else np.zeros(0, dtype=np.int64)
    return ordered, group, position


def _null_first(rows: pa.Table, col: str, helpers: dict[str, pa.Array], *, nulls_first: bool) -> list[tuple[str, str]]:
    """A sort key placing `col`'s NULLs first or last, whatever the direction of the column's own key."""
    flag = f"__null_{len(helpers)}"
    helpers[flag] = pc.is_null(rows.column(col))
    return [(flag, "descending" if nulls_first else "ascending")]
