"""The materialized input state of min, max, string_agg, array_agg and DISTINCT aggregates, as
RisingWave's `MaterializedInputState`: such a call cannot retract a value from a partial sum, so it
keeps every distinct non-NULL input of each group with its multiplicity::

    | group key ... | value | order column ... | _count |

keyed by ``(group key, value, order columns)`` and distributed by the group key (so its ``_vnode`` is
the group's). An epoch's input becomes per-key signed counts (`input_deltas`, or pre-aggregated in
Spark), which `fold_input` adds to the stored counts of the groups the epoch touches (read with one
prefix lookup per group); it writes the changed keys (a count of zero is a tombstone) and computes
each touched group's result before and after the epoch from the values whose count is positive:

* min / max: the least / greatest value;
* count(DISTINCT) / sum(DISTINCT) / avg(DISTINCT): over the distinct values;
* string_agg: the values, each repeated by its count (once with DISTINCT), in the call's ORDER BY
  order (ties broken by the value, then input order), joined by the delimiter — or, when the
  delimiter is not a constant, each value but the first preceded by its own row's delimiter (kept
  as the last order column of the state);
* array_agg: the same values as an array; its NULL inputs are kept too (a NULL element, ordered
  after every value as Postgres' NULLS LAST).

A group without values gives NULL (0 for count). NULL inputs are not kept (Postgres ignores them),
except array_agg's.
"""

from __future__ import annotations

import decimal
from dataclasses import dataclass
from operator import itemgetter
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from compute.executor.keyed import left_join
from compute.executor.materialize import _sst_part
from risingspark.aggregate import VALUE_COUNT, keeps_nulls
from risingspark.chunk import VNODE, signs
from risingspark.types import TypeName

if TYPE_CHECKING:
    from compute.executor.hash_agg import AggCallSpec, HashAggSpec

OLD = "__io"
# The epoch round hands the fold the group partials (tag -1) and each call's value counts (tag i) as
# rows of one table, a call's columns renamed apart (`input_delta_column`).
INPUT_TAG = "_agg_input"


def input_delta_column(call: int, name: str) -> str:
    return f"_agg{call}_{name}"


def split_tagged(spec: HashAggSpec, rows: pa.Table) -> tuple[pa.Table, dict[int, pa.Table]]:
    """The epoch round's tagged rows → the group partials and, per call, its value counts."""
    tag = rows.column(INPUT_TAG)
    partials = [f.name for f in spec.state.fields if f.name not in spec.group_key]
    main = rows.filter(pc.equal(tag, -1)).select([VNODE, *spec.group_key, *partials])
    group_key = spec.group_key
    calls = spec.input_calls
    specs = spec.calls
    per_call = {}
    for i in calls:
        names = value_columns(specs[i])
        t = rows.filter(pc.equal(tag, i))
        per_call[i] = pa.table({**{n: t.column(n) for n in (VNODE, *group_key)},
                                **{n: t.column(input_delta_column(i, n)) for n in names},
                                VALUE_COUNT: t.column(VALUE_COUNT)})
    return main, per_call


@dataclass(frozen=True)
class InputFold:
    state_rows: pa.Table  # SST rows of the call's input state table
    before: pa.Array  # the call's result per group, aligned with the groups given to `fold_input`
    after: pa.Array


def value_columns(call: AggCallSpec) -> list[str]:
    """The input columns a call keeps: its argument, then its ORDER BY columns (min and max: then
    the input's stream key)."""
    assert call.arg is not None
    return [call.arg, *(name for name, _, _ in call.order), *call.row_key]


def input_deltas(group_key: tuple[str, ...], call: AggCallSpec, rows: pa.Table, op: pa.Array) -> pa.Table:
    """Per ``(_vnode, group key, value, order columns)``: the signed count of the epoch's inputs with
    a non-NULL value (any value for array_agg); keys whose count sums to zero are dropped."""
    assert call.arg is not None
    cols = [VNODE, *group_key, *value_columns(call)]
    t = rows.select(cols).append_column(VALUE_COUNT, signs(op))
    if not keeps_nulls(call.kind):
        t = t.filter(pc.is_valid(rows.column(call.arg)))
    grouped = t.group_by(cols, use_threads=False).aggregate([(VALUE_COUNT, "sum")])
    grouped = grouped.rename_columns([VALUE_COUNT if n == f"{VALUE_COUNT}_sum" else n for n in grouped.column_names])
    return grouped.filter(pc.not_equal(grouped.column(VALUE_COUNT), 0)).select([*cols, VALUE_COUNT])


def fold_input(group_key: tuple[str, ...], call: AggCallSpec, groups: pa.Table, delta: pa.Table, old: pa.Table,
               epoch: int) -> InputFold:
    """Add `delta` (`input_deltas`' shape) to `old` (the stored rows of the touched groups, read
    shape) and compute the call's result before and after for each row of `groups` (``_vnode`` +
    group key)."""
    assert call.input_state is not None
    desc = call.input_state
    keys = [VNODE, *group_key, *value_columns(call)]
    old = old.select([*keys, VALUE_COUNT])
    delta = delta.select([*keys, VALUE_COUNT]).cast(old.schema)
    # the changed keys: their new counts, written as rows (tombstones where the count is zero)
    joined = left_join(delta, old, keys, right_suffix=OLD)
    new_count = pc.add(pc.fill_null(joined.column(f"{VALUE_COUNT}{OLD}"), 0), joined.column(VALUE_COUNT))
    changed = joined.select(keys).append_column(VALUE_COUNT, new_count)
    values = changed.select(desc.names)
    live = pc.not_equal(new_count, 0)
    dead = pc.invert(live)
    nulls = pa.table({n: (values.column(n) if n != VALUE_COUNT else pa.nulls(values.num_rows, pa.int64()))
                      for n in desc.names})
    state_rows = pa.concat_tables([
        _sst_part(values.filter(live), changed.column(VNODE).filter(live), epoch, False),
        _sst_part(nulls.filter(dead), changed.column(VNODE).filter(dead), epoch, True),
    ])
    # after: the untouched old keys plus the changed keys with their new counts
    untouched = old.filter(pc.invert(_member(old, changed, keys)))
    after_rows = pa.concat_tables([untouched, changed.cast(old.schema)])
    return InputFold(state_rows, _results(group_key, call, groups, old), _results(group_key, call, groups, after_rows))


def _member(table: pa.Table, keys_table: pa.Table, keys: list[str]) -> pa.Array:
    """Whether each row of `table` has its key in `keys_table` (NULL equal to NULL)."""
    marked = keys_table.select(keys).append_column("__hit", pa.array([True] * keys_table.num_rows, pa.bool_()))
    joined = left_join(table.append_column("__pos", pa.array(range(table.num_rows), pa.int64())), marked, keys,
                       right_suffix="__m")
    joined = joined.sort_by("__pos")
    return pc.fill_null(joined.column("__hit__m"), False).combine_chunks()


def _norm(v: Any) -> Any:
    return "__nan__" if isinstance(v, float) and v != v else v


def _results(group_key: tuple[str, ...], call: AggCallSpec, groups: pa.Table, rows: pa.Table) -> pa.Array:
    """The call's result for each row of `groups` over `rows` (values with a positive count)."""
    rows = rows.filter(pc.greater(rows.column(VALUE_COUNT), 0))
    gcols = [VNODE, *group_key]
    per_group: dict[tuple, list[tuple]] = {}
    key_lists = [rows.column(n).to_pylist() for n in gcols]
    value_lists = [rows.column(n).to_pylist() for n in (*value_columns(call), VALUE_COUNT)]
    for i, key in enumerate(zip(*key_lists, strict=True)):
        per_group.setdefault(tuple(_norm(k) for k in key), []).append(tuple(c[i] for c in value_lists))
    out: list[Any] = []
    for key in zip(*(groups.column(n).to_pylist() for n in gcols), strict=True):
        out.append(_result(call, per_group.get(tuple(_norm(k) for k in key), [])))
    return pa.array(out, call.return_type.to_arrow())


def _pg_order(v: Any) -> tuple[bool, Any]:
    """Postgres orders NaN above every other float."""
    nan = isinstance(v, float) and v != v
    return (nan, 0.0 if nan else v)


def _result(call: AggCallSpec, rows: list[tuple]) -> Any:
    """One group's result from its ``(value, order values..., count)`` rows, counts positive."""
    kind = call.kind
    if kind == "count":
        return len({_norm(r[0]) for r in rows})
    if not rows:
        return None
    if kind == "min":
        return min((r[0] for r in rows), key=_pg_order)
    if kind == "max":
        return max((r[0] for r in rows), key=_pg_order)
    if kind in ("sum", "avg"):
        return _sum_or_avg(call, sorted({_norm(r[0]): r[0] for r in rows}.values(), key=repr))
    if kind == "string_agg" and call.delimiter_in_order:
        ordered = _ordered_rows(call, rows)
        return ordered[0][0] + "".join((r[-2] or "") + r[0] for r in ordered[1:])
    if kind == "string_agg":
        return (call.delimiter or "").join(_ordered_values(call, rows))
    if kind == "array_agg":
        return _ordered_values(call, rows)
    raise AssertionError(f"{kind} keeps no input state")


def _sum_or_avg(call: AggCallSpec, values: list[Any]) -> Any:
    assert call.arg_type is not None
    if call.kind == "sum" and call.return_type.name is not TypeName.NUMERIC:
        return sum(values)
    if call.return_type.name in (TypeName.DOUBLE, TypeName.REAL):
        return sum(float(v) for v in values) / len(values) if call.kind == "avg" else sum(values)
    total = sum(decimal.Decimal(v) for v in values)
    if call.kind == "sum":
        return total
    scale = call.return_type.to_arrow().scale
    ctx = decimal.Context(prec=60, rounding=decimal.ROUND_HALF_UP)
    return ctx.divide(total, decimal.Decimal(len(values))).quantize(decimal.Decimal(1).scaleb(-scale), context=ctx)


def _ordered_values(call: AggCallSpec, rows: list[tuple]) -> list[Any]:
    """The values of string_agg / array_agg, each repeated by its count (once with DISTINCT), in the
    call's ORDER BY order."""
    return [r[0] for r in _ordered_rows(call, rows)]


def _ordered_rows(call: AggCallSpec, rows: list[tuple]) -> list[tuple]:
    """The ``(value, order values..., count)`` rows of `_ordered_values`, each repeated by its count."""
    # stable sorts from the last key to the first: the value breaks ties (NULLs last), then each
    # ORDER BY column (Postgres' default null placement: NULLS LAST ascending, NULLS FIRST descending)
    ordered = sorted(rows, key=lambda r: (r[0] is None, _pg_order(r[0]) if r[0] is not None else (False, 0)))
    for k in reversed(range(len(call.order))):
        _, desc, nulls_first = call.order[k]
        present = [r for r in ordered if r[1 + k] is not None]
        missing = [r for r in ordered if r[1 + k] is None]
        present.sort(key=itemgetter(1 + k), reverse=desc)
        ordered = missing + present if nulls_first else present + missing
    parts: list[tuple] = []
    seen: set[Any] = set()
    for r in ordered:
        if call.distinct:
            if _norm(r[0]) not in seen:
                seen.add(_norm(r[0]))
                parts.append(r)
        else:
            parts.extend([r] * r[-1])
    return parts
