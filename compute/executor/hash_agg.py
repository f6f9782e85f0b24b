"""StreamHashAgg: hash aggregation with retraction, as RisingWave's `HashAggExecutor`.

For an epoch's input (``_op``, ``_vnode`` of the group key, input columns) it sums each partial
(row count, non-NULL counts, sums) over signed rows per group, adds the deltas to the group's state
looked up at the previous epoch, and yields per group the before/after images of its output row
(group key, then one value per call), ready for `materialize.emit`. A group whose row count drops
to zero disappears (its state row is tombstoned and its output deleted). Calls with a materialized
input state (min, max, string_agg, DISTINCT) fold their own deltas (`agg_input_state`); the group's
existence still comes from its row count. Over an append-only input, min and max keep their value in
the state row instead, and fold the epoch's extreme into it (`extreme_of`). State layout:
`risingspark.aggregate`.
"""

from __future__ import annotations

import decimal
from collections.abc import Callable
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc

from compute.executor.agg_input_state import InputFold, fold_input, input_deltas
from compute.executor.keyed import left_join
from compute.executor.materialize import AFTER, BEFORE, Pairs, _sst_part
from risingspark.aggregate import (
    ROW_COUNT,
    count_column,
    keeps_value,
    keyed_by_row,
    sum_column,
    sum_state_type,
    true_column,
    value_column,
)
from risingspark.chunk import OP, VNODE, signs
from risingspark.storage.desc import StateTableDesc
from risingspark.types import DataType, TypeName

OLD = "__o"


@dataclass(frozen=True)
class AggCallSpec:
    kind: str  # one of risingspark.aggregate.AGG_KINDS
    arg: str | None  # input column name
    arg_type: DataType | None
    return_type: DataType
    output: str  # output column name
    distinct: bool = False
    order: tuple[tuple[str, bool, bool], ...] = ()  # (input column, descending, nulls first)
    delimiter: str | None = None  # string_agg's
    input_state: StateTableDesc | None = None  # the materialized input state, when the call keeps one
    delimiter_in_order: bool = False  # string_agg's delimiter is each row's own: the last order column

    @property
    def keeps_value(self) -> bool:
        """Whether the call keeps its value in the state row (min and max over an append-only
        input: `risingspark.aggregate`)."""
        return keeps_value(self.kind, self.input_state is not None)

    @property
    def row_key(self) -> tuple[str, ...]:
        """The input's stream key columns, for a call whose input state keeps one row per input row
        (min and max: `risingspark.aggregate.extreme_state_fields`)."""
        if self.input_state is None or not keyed_by_row(self.input_state) or self.arg is None:
            return ()
        names = self.input_state.names
        return tuple(names[names.index(self.arg) + 1:])


@dataclass(frozen=True)
class HashAggSpec:
    group_key: tuple[str, ...]  # input column names, also the output's first columns
    calls: tuple[AggCallSpec, ...]
    state: StateTableDesc

    @property
    def output_names(self) -> list[str]:
        return [*self.group_key, *(c.output for c in self.calls)]

    @property
    def input_calls(self) -> list[int]:
        """The indices of the calls that keep a materialized input state."""
        return [i for i, c in enumerate(self.calls) if c.input_state is not None]


@dataclass(frozen=True)
class AggOutput:
    state_rows: pa.Table  # SST rows of the state table
    pairs: Pairs  # before/after images of the output rows, keyed by (_vnode, group key)
    input_state_rows: dict[int, pa.Table] = field(default_factory=dict)  # per input-state call: its SST rows


def deltas(spec: HashAggSpec, rows: pa.Table) -> pa.Table:
    """Per group: the signed sum of every partial over the epoch's input."""
    sign = signs(rows.column(OP))
    cols: dict[str, pa.Array] = {VNODE: rows.column(VNODE)}
    for g in spec.group_key:
        cols[g] = rows.column(g)
    cols[ROW_COUNT] = sign
    for i, c in enumerate(spec.calls):
        if c.kind == "count_star" or c.input_state is not None:
            continue
        assert c.arg is not None and c.arg_type is not None
        x = rows.column(c.arg)
        cols[count_column(i)] = pc.multiply(sign, pc.cast(pc.is_valid(x), pa.int64()))
        if c.kind in ("sum", "avg"):
            x = pc.cast(x, sum_state_type(c.kind, c.arg_type).to_arrow())
            cols[sum_column(i)] = pc.if_else(pc.greater(sign, 0), x, pc.negate(x))
        if c.kind in ("bool_and", "bool_or"):
            cols[true_column(i)] = pc.multiply(sign, pc.cast(pc.fill_null(x, False), pa.int64()))
    t = pa.table(cols)
    partials = [n for n in t.column_names if n not in (VNODE, *spec.group_key)]
    keys = [VNODE, *spec.group_key]
    grouped = t.group_by(keys, use_threads=False).aggregate([(p, "sum") for p in partials])
    grouped = grouped.rename_columns([n[:-4] if n.endswith("_sum") and n[:-4] in partials else n
                                      for n in grouped.column_names])
    for i, c in enumerate(spec.calls):
        if c.keeps_value:
            assert c.arg is not None
            inserted = rows.filter(pc.greater(sign, 0))
            values = inserted.select(keys).append_column(value_column(i), inserted.column(c.arg))
            grouped = _with_group_extreme(grouped, values, keys, value_column(i), c.kind)
    return grouped


def _with_group_extreme(grouped: pa.Table, values: pa.Table, keys: list[str], name: str, kind: str) -> pa.Table:
    """`grouped` with column `name`: per group, the min or max (`kind`) of `values`' column `name`,
    NaN the greatest value as in PostgreSQL."""
    col = values.column(name)
    aggs = [(name, kind)]
    if pa.types.is_floating(col.type):
        values = values.append_column("__nan", pc.fill_null(pc.is_nan(col), False))
        aggs.append(("__nan", "any"))
    ext = values.group_by(keys, use_threads=False).aggregate(aggs)
    value = ext.column(f"{name}_{kind}")
    if pa.types.is_floating(col.type):
        nan = ext.column("__nan_any")
        fix = nan if kind == "max" else pc.and_(nan, pc.is_null(value))
        value = pc.if_else(fix, pa.scalar(float("nan"), value.type), value)
    ext = ext.select(keys).append_column(name, value)
    joined = left_join(grouped, ext, keys, right_suffix="__x")
    return joined.select(grouped.column_names).append_column(name, joined.column(f"{name}__x"))


def extreme_of(kind: str, a: pa.Array | pa.ChunkedArray, b: pa.Array | pa.ChunkedArray) -> pa.Array:
    """Element-wise min or max (`kind`) of two value columns, NULLs ignored, NaN the greatest value
    (Arrow's kernels skip NaN; PostgreSQL's max of a NaN is NaN)."""
    out = pc.max_element_wise(a, b, skip_nulls=True) if kind == "max" else pc.min_element_wise(a, b, skip_nulls=True)
    if not pa.types.is_floating(a.type):
        return out
    nan = pc.or_(pc.fill_null(pc.is_nan(a), False), pc.fill_null(pc.is_nan(b), False))
    fix = nan if kind == "max" else pc.and_(nan, pc.is_null(out))
    return pc.if_else(fix, pa.scalar(float("nan"), out.type), out)


def all_input_deltas(spec: HashAggSpec, rows: pa.Table) -> dict[int, pa.Table]:
    """Per input-state call: `agg_input_state.input_deltas` of the epoch's input rows."""
    return {i: input_deltas(spec.group_key, spec.calls[i], rows, rows.column(OP)) for i in spec.input_calls}


def apply(spec: HashAggSpec, rows: pa.Table, old_state: pa.Table, epoch: int,
          old_inputs: dict[int, pa.Table] | None = None) -> AggOutput:
    """Fold an epoch's input rows into the state (`old_state`: `_vnode` + state columns of the
    groups the input touches, as stored at the previous epoch; `old_inputs`: per input-state call,
    the rows of its input state table of those groups)."""
    return fold(spec, deltas(spec, rows), old_state, epoch, all_input_deltas(spec, rows), old_inputs)


# The sign of a row as Spark SQL (op 0 weighs nothing: the seed row that makes a global
# aggregate's one group exist).
SPARK_SIGN = (f"CASE WHEN `{OP}` IN (1, 4) THEN CAST(1 AS BIGINT) WHEN `{OP}` IN (2, 3) THEN CAST(-1 AS BIGINT) "
              f"ELSE CAST(0 AS BIGINT) END")


def spark_partials(spec: HashAggSpec) -> list[tuple[str, str]]:
    """The partials of `deltas` as Spark SQL aggregate expressions ``(name, expression)``, so an
    epoch round can pre-aggregate its input in Spark (grouped by ``_vnode`` and the group key) and
    hand `fold` one row per group instead of every input row."""
    sign = SPARK_SIGN
    out = [(ROW_COUNT, f"sum({sign})")]
    for i, c in enumerate(spec.calls):
        if c.kind == "count_star" or c.input_state is not None:
            continue
        assert c.arg is not None and c.arg_type is not None
        out.append((count_column(i), f"sum(CASE WHEN `{c.arg}` IS NULL THEN CAST(0 AS BIGINT) ELSE {sign} END)"))
        if c.kind in ("sum", "avg"):
            t = sum_state_type(c.kind, c.arg_type).to_spark()
            x = f"CAST(`{c.arg}` AS {t})"
            out.append((sum_column(i), f"CAST(sum(CASE WHEN {sign} > 0 THEN {x} ELSE -{x} END) AS {t})"))
        if c.kind in ("bool_and", "bool_or"):
            out.append((true_column(i), f"sum(CASE WHEN `{c.arg}` THEN {sign} ELSE CAST(0 AS BIGINT) END)"))
        if c.keeps_value:  # (Spark's min and max order NaN as PostgreSQL does: greatest)
            out.append((value_column(i), f"{c.kind}(CASE WHEN {sign} > 0 THEN `{c.arg}` END)"))
    return out


def fold(spec: HashAggSpec, delta: pa.Table, old_state: pa.Table, epoch: int,
         input_deltas: dict[int, pa.Table] | None = None, old_inputs: dict[int, pa.Table] | None = None,
         input_fold: Callable[[int, pa.Table], InputFold] | None = None) -> AggOutput:
    """Add per-group partials (`deltas`' shape) to the groups' state and derive the outputs; calls
    with an input state fold `input_deltas[i]` into `old_inputs[i]` (see `apply`), or, when given,
    with `input_fold(i, groups)` (the groups: ``_vnode`` + group key, in output order)."""
    keys = [VNODE, *spec.group_key]
    joined = left_join(delta, old_state, keys, right_suffix=OLD)
    partials = [f.name for f in spec.state.fields if f.name not in spec.group_key]
    new: dict[str, pa.Array] = {}
    old: dict[str, pa.Array] = {}
    values = {value_column(i): c.kind for i, c in enumerate(spec.calls) if c.keeps_value}
    for p in partials:
        o = joined.column(f"{p}{OLD}")
        if p in values:
            old[p] = o
            new[p] = extreme_of(values[p], o, pc.cast(joined.column(p), o.type))
            continue
        d = pc.fill_null(joined.column(p), pa.scalar(0, o.type).cast(joined.column(p).type))
        old[p] = pc.fill_null(o, pa.scalar(0, o.type))
        new[p] = _add(old[p], pc.cast(d, o.type))
    has_before = joined.column(f"__present{OLD}")
    # A group exists while it has rows; a global aggregate's one group always exists (count 0,
    # sum NULL over an empty input, as Postgres).
    has_after = pa.array([True] * joined.num_rows, pa.bool_()) if not spec.group_key \
        else pc.greater(new[ROW_COUNT], 0)

    state_values = pa.table({**{g: joined.column(g) for g in spec.group_key}, **new})
    tombstones = pa.table({**{g: joined.column(g) for g in spec.group_key},
                           **{p: pa.nulls(joined.num_rows, new[p].type) for p in partials}})
    vnode = joined.column(VNODE)
    dele = pc.and_(has_before, pc.invert(has_after))
    state_rows = pa.concat_tables([
        _sst_part(state_values.filter(has_after), vnode.filter(has_after), epoch, False),
        _sst_part(tombstones.filter(dele), vnode.filter(dele), epoch, True),
    ])

    pairs = {VNODE: vnode, **{g: joined.column(g) for g in spec.group_key}}
    for g in spec.group_key:
        pairs[f"{g}{BEFORE}"] = joined.column(g)
        pairs[f"{g}{AFTER}"] = joined.column(g)
    groups = joined.select([VNODE, *spec.group_key])
    input_rows: dict[int, pa.Table] = {}
    for i, c in enumerate(spec.calls):
        if c.input_state is not None:
            if input_fold is not None:
                f = input_fold(i, groups)
            else:
                assert input_deltas is not None and old_inputs is not None
                f = fold_input(spec.group_key, c, groups, input_deltas[i], old_inputs[i], epoch)
            input_rows[i] = f.state_rows
            pairs[f"{c.output}{BEFORE}"] = f.before
            pairs[f"{c.output}{AFTER}"] = f.after
            continue
        pairs[f"{c.output}{BEFORE}"] = _output(c, i, old)
        pairs[f"{c.output}{AFTER}"] = _output(c, i, new)
    pairs[f"__present{BEFORE}"] = has_before
    pairs[f"__present{AFTER}"] = has_after
    return AggOutput(state_rows, Pairs(pa.table(pairs)), input_rows)


def _add(a: pa.Array, b: pa.Array) -> pa.Array:
    """a + b keeping a's type. Arrow widens decimal sums past precision 38, so decimals add in
    decimal256 and narrow back (which raises on a real overflow)."""
    if pa.types.is_decimal(a.type):
        wide = pa.decimal256(a.type.precision, a.type.scale)
        return pc.cast(pc.add(pc.cast(a, wide), pc.cast(b, wide)), a.type)
    return pc.add(a, b)


def _output(call: AggCallSpec, i: int, partials: dict[str, pa.Array]) -> pa.Array:
    target = call.return_type.to_arrow()
    if call.kind == "count_star":
        return partials[ROW_COUNT]
    count = partials[count_column(i)]
    if call.kind == "count":
        return count
    if call.keeps_value:
        return pc.cast(partials[value_column(i)], target)
    if call.kind in ("bool_and", "bool_or"):
        trues = partials[true_column(i)]
        value = pc.equal(trues, count) if call.kind == "bool_and" else pc.greater(trues, 0)
        return pc.if_else(pc.greater(count, 0), value, pa.scalar(None, pa.bool_()))
    total = partials[sum_column(i)]
    nonzero = pc.greater(count, 0)
    if call.kind == "sum":
        return pc.if_else(nonzero, pc.cast(total, target), pa.scalar(None, target))
    # avg
    if call.return_type.name is TypeName.DOUBLE:
        quotient = pc.divide(pc.cast(total, pa.float64()), pc.cast(pc.max_element_wise(count, 1), pa.float64()))
        return pc.if_else(nonzero, quotient, pa.scalar(None, pa.float64()))
    return _decimal_avg(total, count, target)


def _decimal_avg(total: pa.Array, count: pa.Array, target: pa.DataType) -> pa.Array:
    """sum / count for decimals, rounded half away from zero to the result's scale (Arrow's
    decimal division overflows its precision, so this divides with Python's decimal)."""
    quantum = decimal.Decimal(1).scaleb(-target.scale)
    ctx = decimal.Context(prec=60, rounding=decimal.ROUND_HALF_UP)
    out: list[decimal.Decimal | None] = []
    for s, n in zip(total.to_pylist(), count.to_pylist(), strict=True):
        if not n or s is None:
            out.append(None)
        else:
            out.append(ctx.divide(decimal.Decimal(s), decimal.Decimal(n)).quantize(quantum, context=ctx))
    return pa.array(out, target)
