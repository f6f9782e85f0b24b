"""StreamOverWindow: window functions over partitions (``f(...) OVER (PARTITION BY p ORDER BY o
[frame])``), with retraction, as RisingWave's `OverWindowExecutor`.

State: every input row, keyed by ``(partition key, order columns, the input's stream key)`` and
distributed by the partition key — the layout of the group TopN (`compute.executor.top_n`), whose
sort it shares. For an epoch's input (every row of a partition lands in one task), the executor reads
the partitions the epoch touched, applies the epoch's images, computes every call for each row of the
old and of the new partition, and emits the difference per stream key: a row whose results did not
change emits nothing. Partitions the epoch did not touch are never read.

A touched partition costs its rows (RisingWave narrows the recomputation to the rows whose frames the
change reaches; here a partition is recomputed whole, as the TopN ranks a touched group whole).

Calls, as PostgreSQL computes them, over the partition sorted by the ORDER BY (ties broken by the
stream key, so the answer is deterministic; PostgreSQL's order among ties is arbitrary):

* ``row_number``, ``rank``, ``dense_rank`` (peers: rows equal in every ORDER BY column);
* ``lag`` / ``lead`` (x, offset, default) within the partition;
* ``first_value``, ``last_value``, ``sum``, ``count``, ``avg``, ``min``, ``max`` over the frame:
  ``ROWS`` between offsets (or unbounded) of the current row, or ``RANGE`` from the partition's
  start (or current row's peers) to the current row's last peer (or the end) — the default frame
  with an ORDER BY is ``RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW``, without one the whole
  partition. Aggregates skip NULLs; an empty frame gives NULL (count: 0).
"""

from __future__ import annotations

import decimal
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from compute.executor.materialize import apply_pairs, diff_outputs, emit, pairs_from_changes
from compute.executor.top_n import TopNSpec, _of_groups, sort_groups, touched_groups
from risingspark.chunk import OP, VNODE
from risingspark.storage.desc import StateTableDesc
from risingspark.stream_plan import WindowCall
from risingspark.types import DataType, TypeName

UNBOUNDED = None  # a frame bound without an offset


@dataclass(frozen=True)
class OverWindowSpec:
    state: StateTableDesc  # fields: the input's columns
    partition: tuple[str, ...]
    order: tuple[tuple[str, bool, bool], ...]  # (column, descending, nulls first)
    calls: tuple[WindowCall, ...]
    args: tuple[str | None, ...]  # each call's argument column
    outputs: tuple[str, ...]  # each call's output column
    output_key: tuple[str, ...]  # the input's (and output's) stream key

    @property
    def output_names(self) -> list[str]:
        return [*self.state.names, *self.outputs]


@dataclass(frozen=True)
class OverWindowOutput:
    state_rows: pa.Table
    changes: pa.Table  # _op, _vnode (0: the next exchange assigns it), output columns


def over_window_epoch(spec: OverWindowSpec, rows: pa.Table, state: pa.Table, epoch: int) -> OverWindowOutput:
    """One epoch. `rows`: the input changes (``_op``, ``_vnode``, input columns); `state`: the state
    rows (``_vnode`` + input columns) at the previous epoch of (at least) the touched partitions."""
    names = spec.state.names
    pairs = pairs_from_changes(spec.state, rows.select([OP, VNODE, *names]))
    state_rows = emit(spec.state, pairs, epoch).sst_rows
    sort = _sort_spec(spec)
    old = _of_groups(state.select([VNODE, *names]), touched_groups(sort, rows))
    new = apply_pairs(old, pairs, spec.state)
    return OverWindowOutput(state_rows, diff_outputs(spec.output_names, spec.output_key, compute(spec, old),
                                                     compute(spec, new)))


def _sort_spec(spec: OverWindowSpec) -> TopNSpec:
    return TopNSpec(spec.state, spec.partition, spec.order, None, 0, spec.output_key)


def compute(spec: OverWindowSpec, rows: pa.Table) -> pa.Table:
    """`rows` (input columns) with every call's result appended, in partition order."""
    ordered, group, position = sort_groups(_sort_spec(spec), rows)
    n = ordered.num_rows
    starts = np.flatnonzero(np.r_[True, group[1:] != group[:-1]]) if n else np.zeros(0, dtype=np.int64)
    ends = np.r_[starts[1:], n] if n else starts  # exclusive end of each partition
    first = starts[group] if n else np.zeros(0, dtype=np.int64)
    last = ends[group] - 1 if n else np.zeros(0, dtype=np.int64)
    peer_first, peer_last = _peers(spec, ordered, group)
    for call, arg, out in zip(spec.calls, spec.args, spec.outputs, strict=True):
        values = ordered.column(arg).to_pylist() if arg is not None else [None] * n
        result = _call(call, values, position, first, last, peer_first, peer_last)
        ordered = ordered.append_column(out, pa.array(result, call.return_type.to_arrow()))
    return ordered


def _peers(spec: OverWindowSpec, ordered: pa.Table, group: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each row, the first and last index of its peers (same partition, equal ORDER BY values)."""
    n = ordered.num_rows
    if n == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    keys = [ordered.column(c).to_pylist() for c, _, _ in spec.order]
    new_peer = np.ones(n, dtype=bool)
    for i in range(1, n):
        new_peer[i] = group[i] != group[i - 1] or any(_key(k[i]) != _key(k[i - 1]) for k in keys)
    peer_id = np.cumsum(new_peer) - 1
    firsts = np.flatnonzero(new_peer)
    lasts = np.r_[firsts[1:], n] - 1
    return firsts[peer_id], lasts[peer_id]


def _key(v: Any) -> Any:
    return ("nan",) if isinstance(v, float) and v != v else v


def _call(call: WindowCall, values: list[Any], position: np.ndarray, first: np.ndarray, last: np.ndarray,
          peer_first: np.ndarray, peer_last: np.ndarray) -> list[Any]:
    n = len(values)
    kind = call.kind
    if kind == "row_number":
        return [int(p) + 1 for p in position]
    if kind == "rank":
        return [int(peer_first[i] - first[i]) + 1 for i in range(n)]
    if kind == "dense_rank":
        out, rank = [], 0
        for i in range(n):
            if i == first[i]:
                rank = 0
            if i == peer_first[i]:
                rank += 1
            out.append(rank)
        return out
    if kind in ("lag", "lead"):
        step = -call.offset if kind == "lag" else call.offset
        default = _default(call)
        return [values[i + step] if first[i] <= i + step <= last[i] else default for i in range(n)]
    out = []
    for i in range(n):
        lo, hi = _frame(call, i, first[i], last[i], peer_first[i], peer_last[i])
        out.append(_aggregate(call, values[lo:hi + 1] if lo <= hi else []))
    return out


def _frame(call: WindowCall, i: int, first: int, last: int, peer_first: int, peer_last: int) -> tuple[int, int]:
    """The inclusive index range of row `i`'s frame."""
    if call.frame_mode == "ROWS":
        lo = first if call.frame_start is UNBOUNDED and call.frame_start_side == "PRECEDING" else \
            i - (call.frame_start or 0) if call.frame_start_side == "PRECEDING" else i + (call.frame_start or 0)
        if call.frame_start is UNBOUNDED and call.frame_start_side == "FOLLOWING":
            lo = last + 1
        hi = last if call.frame_end is UNBOUNDED and call.frame_end_side == "FOLLOWING" else \
            i + (call.frame_end or 0) if call.frame_end_side == "FOLLOWING" else i - (call.frame_end or 0)
        if call.frame_end is UNBOUNDED and call.frame_end_side == "PRECEDING":
            hi = first - 1
        return max(lo, first), min(hi, last)
    # RANGE without offsets: CURRENT ROW means the row's peers
    lo = first if call.frame_start_side == "PRECEDING" else peer_first
    hi = last if call.frame_end_side == "FOLLOWING" else peer_last
    return lo, hi


def _aggregate(call: WindowCall, frame: list[Any]) -> Any:
    kind = call.kind
    if kind == "first_value":
        return frame[0] if frame else None
    if kind == "last_value":
        return frame[-1] if frame else None
    if kind == "count_star":
        return len(frame)
    present = [v for v in frame if v is not None]
    if kind == "count":
        return len(present)
    if not present:
        return None
    if kind == "min":
        return min(present, key=_order_key)
    if kind == "max":
        return max(present, key=_order_key)
    t = call.return_type
    if kind == "sum":
        return _sum(present, t)
    if kind == "avg":
        return _avg(present, t)
    raise AssertionError(f"window function {kind}")


def _order_key(v: Any) -> tuple[bool, Any]:
    nan = isinstance(v, float) and v != v  # NaN is above every number, as in PostgreSQL
    return (nan, 0.0 if nan else v)


def _sum(values: list[Any], t: DataType) -> Any:
    if t.name in (TypeName.DOUBLE, TypeName.REAL):
        return float(sum(float(v) for v in values))
    if t.name is TypeName.NUMERIC:
        return sum(decimal.Decimal(v) for v in values)
    return sum(values)


def _avg(values: list[Any], t: DataType) -> Any:
    if t.name in (TypeName.DOUBLE, TypeName.REAL):
        return sum(float(v) for v in values) / len(values)
    scale = t.to_arrow().scale
    ctx = decimal.Context(prec=60, rounding=decimal.ROUND_HALF_UP)
    total = sum(decimal.Decimal(v) for v in values)
    return ctx.divide(total, decimal.Decimal(len(values))).quantize(decimal.Decimal(1).scaleb(-scale), context=ctx)


def _default(call: WindowCall) -> Any:
    if call.default is None:
        return None
    t = call.return_type
    if t.name is TypeName.NUMERIC:
        return decimal.Decimal(call.default)
    return call.default
