"""Stream plan nodes: what the frontend's planner produces and the compute node runs.

A plan is a tree of frozen dataclasses; each node declares its output `fields` and `stream_key`
(indices that identify a row of its change stream). Expressions are Spark SQL strings over the
input's column names (the planner guarantees unique names), plus a ``display`` text for EXPLAIN.

Change-stream invariant every node keeps: within one epoch, a stream key appears at most once as a
before-image (Delete / UpdateDelete) and at most once as an after-image (Insert / UpdateInsert), so
consumers may process an epoch's rows in any order.

>>> from risingspark.types import INT8, Field
>>> d = StreamDml(fields=(Field("id", INT8),), stream_key=(0,), table_id=1)
>>> node_from_json(node_to_json(d)) == d
True
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from risingspark.functions import FunctionCatalog
from risingspark.storage.desc import StateTableDesc
from risingspark.table_kind import ConflictBehavior
from risingspark.types import INT2, INT8, DataType, Field

# A temporal filter's bound table: one row, the bound (microseconds since the Unix epoch) it applied last.
TEMPORAL_BOUND_FIELDS = (Field("_rw_key", INT2), Field("_rw_bound_us", INT8))


@dataclass(frozen=True)
class AggCall:
    """One aggregate: ``kind`` is one of `risingspark.aggregate.AGG_KINDS`; ``arg`` an input column
    index; ``order`` the ORDER BY inside the call as ``(input column, descending, nulls first)``;
    ``delimiter`` string_agg's (a constant); with ``delimiter_in_order`` the last ``order`` column is
    each row's own delimiter instead (ordered last, it only breaks ties)."""

    kind: str
    arg: int | None
    return_type: DataType
    display: str = ""
    distinct: bool = False
    order: tuple[tuple[int, bool, bool], ...] = ()
    delimiter: str | None = None
    delimiter_in_order: bool = False


@dataclass(frozen=True)
class WindowCall:
    """One window function of a StreamOverWindow (`compute.executor.over_window`): ``kind`` is
    row_number, rank, dense_rank, lag, lead, first_value, last_value, sum, count, count_star, avg,
    min or max; ``arg`` an input column index; lag / lead's ``offset`` and constant ``default``; the
    frame as ``frame_mode`` ROWS or RANGE and two bounds, each an offset (None: UNBOUNDED) and a side
    (PRECEDING, CURRENT, FOLLOWING)."""

    kind: str
    arg: int | None
    return_type: DataType
    display: str = ""
    offset: int = 1
    default: Any = None
    frame_mode: str = "RANGE"
    frame_start: int | None = None
    frame_start_side: str = "PRECEDING"
    frame_end: int | None = 0
    frame_end_side: str = "CURRENT"


@dataclass(frozen=True)
class StreamNode:
    fields: tuple[Field, ...]
    stream_key: tuple[int, ...]

    @property
    def inputs(self) -> tuple[StreamNode, ...]:
        child = getattr(self, "input", None)
        return (child,) if child is not None else ()

    @property
    def names(self) -> list[str]:
        return [f.name for f in self.fields]


@dataclass(frozen=True)
class StreamDml(StreamNode):
    """The DML batches of a table for the epoch (the source of a table's job)."""

    table_id: int = 0


@dataclass(frozen=True)
class StreamTableScan(StreamNode):
    """Reads an upstream table or MV: its backfill while the job is creating (snapshot merged with
    the upstream's changes, see `compute.executor.backfill`), then its change log."""

    upstream_id: int = 0
    upstream_name: str = ""
    upstream_desc: StateTableDesc | None = None
    backfill_type: str = "ARRANGEMENT_BACKFILL"
    append_only: bool = False  # the upstream only ever inserts (`is_append_only`)


@dataclass(frozen=True)
class StreamFilter(StreamNode):
    input: StreamNode | None = None
    predicate: str = ""
    display: str = ""


@dataclass(frozen=True)
class StreamProject(StreamNode):
    input: StreamNode | None = None
    exprs: tuple[str, ...] = ()
    displays: tuple[str, ...] = ()


@dataclass(frozen=True)
class StreamExchange(StreamNode):
    """A hash exchange: rows are shuffled by the vnode of `dist_key` (input column indices)."""

    input: StreamNode | None = None
    dist_key: tuple[int, ...] = ()


@dataclass(frozen=True)
class StreamHashAgg(StreamNode):
    """Hash aggregation with retraction. Output: group key columns, then one column per agg call.
    Its intermediate state lives in `state_table` (group key, ``_row_count``, per-call partials);
    min, max, string_agg and DISTINCT calls also keep their inputs in ``input_states[i]`` (None for
    the other calls), as RisingWave's materialized input state (`risingspark.aggregate`); over an
    append-only input, min and max need none."""

    input: StreamNode | None = None
    group_key: tuple[int, ...] = ()
    aggs: tuple[AggCall, ...] = ()
    state_table: StateTableDesc | None = None
    input_states: tuple[StateTableDesc | None, ...] = ()
    append_only_input: bool = False  # min and max then keep their value in the state row


@dataclass(frozen=True)
class StreamHashJoin(StreamNode):
    """An equi-join with retraction, as RisingWave's `HashJoinExecutor`. Output: the left input's
    columns, then the right's; stream key: the left's stream key, then the right's.

    Each side's rows live in its state table, keyed by ``(join key, the side's stream key)`` and
    distributed by the join key; both inputs are shuffled by the vnode of their key cast to
    `key_types` (so equal keys of different declared types meet). ``kind`` is INNER, LEFT, RIGHT
    or FULL, or SEMI / ANTI (output: the left input's columns and stream key; a left row appears
    once while some right row matches it, or while none does); NULL keys never match, but for the
    pairs marked in ``null_safe`` (``IS NOT DISTINCT FROM``: NULL matches NULL). Without key pairs
    the join is a cross join: both sides live in one vnode, every row matches every row."""

    left: StreamNode | None = None
    right: StreamNode | None = None
    kind: str = "INNER"
    left_key: tuple[int, ...] = ()
    right_key: tuple[int, ...] = ()
    key_types: tuple[DataType, ...] = ()
    left_state: StateTableDesc | None = None
    right_state: StateTableDesc | None = None
    null_safe: tuple[bool, ...] = ()
    condition: str = ""  # an outer / semi / anti join's other ON conditions (`risingspark.arrow_expr` JSON)
    condition_display: str = ""

    @property
    def inputs(self) -> tuple[StreamNode, ...]:
        return tuple(n for n in (self.left, self.right) if n is not None)


@dataclass(frozen=True)
class StreamTopN(StreamNode):
    """The first `limit` rows after `offset` of each group of `group_key` in `order`
    (``(input column, descending, nulls first)``), with retraction: ``ORDER BY ... LIMIT`` (no
    group key) or ``ROW_NUMBER() OVER (PARTITION BY ...)`` (``rank``: the row number is appended to
    the input's columns; `limit` None numbers every row). Output: the input's columns and stream
    key. Its state (`state_table`) holds every input row, keyed by group key, order columns and
    stream key (`compute.executor.top_n`)."""

    input: StreamNode | None = None
    group_key: tuple[int, ...] = ()
    order: tuple[tuple[int, bool, bool], ...] = ()
    limit: int | None = None
    offset: int = 0
    rank: bool = False
    state_table: StateTableDesc | None = None


@dataclass(frozen=True)
class StreamOverWindow(StreamNode):
    """Window functions over partitions, as RisingWave's ``StreamOverWindow``: every input row with
    one column per call appended (`compute.executor.over_window`). It follows an exchange by the
    partition key; its state (`state_table`) holds every input row keyed by ``(partition key, order
    columns, stream key)``. Output: the input's columns, then the calls'; the input's stream key."""

    input: StreamNode | None = None
    partition_key: tuple[int, ...] = ()
    order: tuple[tuple[int, bool, bool], ...] = ()
    calls: tuple[WindowCall, ...] = ()
    state_table: StateTableDesc | None = None


@dataclass(frozen=True)
class StreamTemporalFilter(StreamNode):
    """A temporal filter: the input's rows where ``column op now() + offset_us``, now() being the
    epoch's physical time, so rows leave (``>``, ``>=``) or enter (``<``, ``<=``) as time passes
    (RisingWave's ``StreamDynamicFilter`` over a ``StreamNow``). It follows a Single exchange. Its
    state (`state_table`) holds every input row with a non-NULL `column`, keyed by ``(column, stream
    key)`` so the rows between two bounds are one range read; `bound_table` holds the bound it last
    applied (`compute.executor.temporal_filter`). Output: the input's columns and stream key."""

    input: StreamNode | None = None
    column: int = 0
    op: str = ">"
    offset_us: int = 0
    display: str = ""
    state_table: StateTableDesc | None = None
    bound_table: StateTableDesc | None = None


@dataclass(frozen=True)
class StreamDynamicFilter(StreamNode):
    """``left.key op right.bound`` where `right` is a stream of one row (a scalar subquery), as
    RisingWave's ``StreamDynamicFilter``: only rows between the old and the new bound are re-read
    when the value moves (`compute.executor.dynamic_filter`). Both inputs follow a Single exchange.
    State: `state_table` holds the left rows with a non-NULL key, keyed by ``(key, stream key)``;
    `bound_table` the bound last applied. Output: the left input's columns and stream key."""

    left: StreamNode | None = None
    right: StreamNode | None = None
    key: int = 0  # a column of the left input
    op: str = ">"
    bound: int = 0  # a column of the right input
    display: str = ""
    state_table: StateTableDesc | None = None
    bound_table: StateTableDesc | None = None

    @property
    def inputs(self) -> tuple[StreamNode, ...]:
        return tuple(n for n in (self.left, self.right) if n is not None)


@dataclass(frozen=True)
class StreamUnion(StreamNode):
    """``UNION ALL`` of its branches, which have the same columns (each branch's project adds the
    branch number and its stream key, so the union's stream key is unique)."""

    branches: tuple[StreamNode, ...] = ()

    @property
    def inputs(self) -> tuple[StreamNode, ...]:
        return self.branches


# The columns a changelog adds to its upstream's (RisingWave's ``changelog_op`` and
# ``_changelog_row_id``; ``_changelog_epoch`` keeps the stream key unique, see `StreamChangeLog`).
CHANGELOG_OP = "changelog_op"
CHANGELOG_ROW_ID = "_changelog_row_id"
CHANGELOG_EPOCH = "_changelog_epoch"
CHANGELOG_FIELDS = (Field(CHANGELOG_OP, INT2), Field(CHANGELOG_ROW_ID, INT8, hidden=True),
                    Field(CHANGELOG_EPOCH, INT8, hidden=True))


@dataclass(frozen=True)
class StreamChangeLog(StreamNode):
    """``WITH c AS CHANGELOG FROM relation``, as RisingWave's ``StreamChangeLog``: every change of
    its input becomes an inserted row of the input's columns and ``changelog_op`` (1 insert,
    2 delete, 3 update insert, 4 update delete, RisingWave's numbering), so its output is append-only.

    ``_changelog_row_id`` numbers the rows as RisingWave's row ids do (the epoch's milliseconds,
    the partition, a sequence). The stream key is exact without it: within an epoch a key of the
    input appears at most once as a before-image and once as an after-image (the invariant of this
    module), so ``(input stream key, changelog_op, _changelog_epoch)`` identifies a change."""

    input: StreamNode | None = None


@dataclass(frozen=True)
class StreamMaterialize(StreamNode):
    """Writes the job's result into its table. ``conflict``: a table's handling of an insert of an
    existing key (`risingspark.table_kind`); a materialized view's input never conflicts (NoCheck).
    ``append_only``: the job only ever inserts rows (an append-only table, or a view over
    append-only inputs that keeps them so), which its downstream plans rely on."""

    input: StreamNode | None = None
    table: StateTableDesc | None = None
    conflict: ConflictBehavior = ConflictBehavior.NO_CHECK
    append_only: bool = False
    # the user-defined functions the plan's expressions call (as ``rs_udf_<id>``), with their
    # definitions: a compute node registers them before it runs the job (`compute.js_udf`)
    functions: tuple[FunctionCatalog, ...] = ()


_NODES: dict[str, type[StreamNode]] = {
    c.__name__: c
    for c in (StreamDml, StreamTableScan, StreamFilter, StreamProject, StreamExchange, StreamHashAgg,
              StreamHashJoin, StreamTopN, StreamOverWindow, StreamTemporalFilter, StreamDynamicFilter, StreamUnion,
              StreamChangeLog, StreamMaterialize)
}


def node_to_json(node: StreamNode) -> dict[str, Any]:
    out: dict[str, Any] = {"node": type(node).__name__}
    for f in dataclasses.fields(node):
        out[f.name] = _value_to_json(getattr(node, f.name))
    return out


def _value_to_json(v: Any) -> Any:
    if isinstance(v, StreamNode):
        return node_to_json(v)
    if isinstance(v, Field | StateTableDesc | FunctionCatalog):
        return v.to_json()
    if isinstance(v, DataType):
        return v.to_json()
    if isinstance(v, AggCall):
        return {"kind": v.kind, "arg": v.arg, "return_type": v.return_type.to_json(), "display": v.display,
                "distinct": v.distinct, "order": [list(o) for o in v.order], "delimiter": v.delimiter,
                "delimiter_in_order": v.delimiter_in_order}
    if isinstance(v, WindowCall):
        return {**{f.name: getattr(v, f.name) for f in dataclasses.fields(v)}, "return_type": v.return_type.to_json()}
    if isinstance(v, tuple):
        return [_value_to_json(x) for x in v]
    return v


def node_from_json(d: dict[str, Any]) -> StreamNode:
    cls = _NODES[d["node"]]
    kwargs: dict[str, Any] = {}
    if d.get("overwrite"):  # a plan stored before tables had conflict behaviours
        kwargs["conflict"] = ConflictBehavior.OVERWRITE
    for f in dataclasses.fields(cls):
        if f.name not in d:
            continue
        v = d[f.name]
        if f.name == "fields":
            v = tuple(Field.from_json(x) for x in v)
        elif f.name in ("input", "left", "right"):
            v = node_from_json(v) if v is not None else None
        elif f.name == "branches":
            v = tuple(node_from_json(b) for b in v)
        elif f.name == "key_types":
            v = tuple(DataType.from_json(t) for t in v)
        elif f.name in ("upstream_desc", "state_table", "table", "left_state", "right_state", "bound_table"):
            v = StateTableDesc.from_json(v) if v is not None else None
        elif f.name == "aggs":
            v = tuple(AggCall(a["kind"], a["arg"], DataType.from_json(a["return_type"]), a.get("display", ""),
                              a.get("distinct", False), tuple(tuple(o) for o in a.get("order", ())),
                              a.get("delimiter"), a.get("delimiter_in_order", False))
                      for a in v)
        elif f.name == "order":
            v = tuple(tuple(o) for o in v)
        elif f.name == "calls":
            v = tuple(WindowCall(**{**c, "return_type": DataType.from_json(c["return_type"])}) for c in v)
        elif f.name == "conflict":
            v = ConflictBehavior(v)
        elif f.name == "functions":
            v = tuple(FunctionCatalog.from_json(x) for x in v)
        elif f.name == "input_states":
            v = tuple(StateTableDesc.from_json(d) if d is not None else None for d in v)
        elif isinstance(v, list):
            v = tuple(v)
        kwargs[f.name] = v
    return cls(**kwargs)


def walk(node: StreamNode):
    """Pre-order traversal."""
    yield node
    for child in node.inputs:
        yield from walk(child)


def scans(plan: StreamNode) -> list[StreamTableScan]:
    """The scans of a plan in pre-order; a scan's index is its ``scan_id`` (backfill progress is
    kept per scan: a join scans two upstreams, a self-join one upstream twice)."""
    return [n for n in walk(plan) if isinstance(n, StreamTableScan)]


def is_append_only(node: StreamNode) -> bool:
    """Whether a node's change stream only ever inserts, as RisingWave's plan property: a scan of an
    append-only relation, and the filters, projections, exchanges, inner joins and unions of such
    inputs keep it; anything else may retract a row."""
    if isinstance(node, StreamTableScan):
        return node.append_only
    if isinstance(node, StreamChangeLog):
        return True
    if isinstance(node, StreamHashJoin):
        return node.kind == "INNER" and all(is_append_only(c) for c in node.inputs)
    if isinstance(node, StreamFilter | StreamProject | StreamExchange | StreamUnion | StreamMaterialize):
        return bool(node.inputs) and all(is_append_only(c) for c in node.inputs)
    return False


def find(node: StreamNode, cls: type) -> list:
    return [n for n in walk(node) if isinstance(n, cls)]


def explain(node: StreamNode) -> list[str]:
    """The plan as RisingWave prints it, one line per node::

        StreamMaterialize { columns: [customer_id, order_count], stream_key: [customer_id] }
        └─StreamHashAgg { group_key: [customer_id], aggs: [count] }
    """
    lines: list[str] = []

    def visit(n: StreamNode, prefix: str, child_prefix: str) -> None:
        lines.append(prefix + _describe(n))
        for i, c in enumerate(n.inputs):
            last = i == len(n.inputs) - 1
            visit(c, child_prefix + ("└─" if last else "├─"), child_prefix + ("  " if last else "│ "))

    visit(node, "", "")
    return lines


def _describe(n: StreamNode) -> str:
    names = n.names
    if isinstance(n, StreamMaterialize):
        cols = ", ".join(f.name for f in n.fields if not f.hidden)
        key = ", ".join(names[i] for i in n.stream_key)
        marker = " [append_only]" if n.append_only else ""
        udfs = f", udfs: [{', '.join(f'{f.udf_name} = {f.signature}' for f in n.functions)}]" if n.functions else ""
        return (f"StreamMaterialize{marker} {{ columns: [{cols}], stream_key: [{key}], pk_conflict: {n.conflict}"
                f"{udfs} }}")
    if isinstance(n, StreamHashJoin):
        assert n.left is not None and n.right is not None
        on = " AND ".join(f"{n.left.names[a]} {'IS NOT DISTINCT FROM' if i < len(n.null_safe) and n.null_safe[i] else '='} "
                          f"{n.right.names[b]}" for i, (a, b) in enumerate(zip(n.left_key, n.right_key, strict=True)))
        on = on or "true"
        if n.condition_display:
            on = f"{on} AND {n.condition_display}"
        kind = {"INNER": "Inner", "LEFT": "LeftOuter", "RIGHT": "RightOuter", "FULL": "FullOuter",
                "SEMI": "LeftSemi", "ANTI": "LeftAnti"}[n.kind]
        marker = " [in_append_only]" if is_append_only(n.left) and is_append_only(n.right) else ""
        return f"StreamHashJoin{marker} {{ type: {kind}, predicate: {on} }}"
    if isinstance(n, StreamTopN):
        assert n.input is not None
        in_names = n.input.names
        order = ", ".join(f"{in_names[i]} {'DESC' if desc else 'ASC'}" + (" NULLS FIRST" if nf and not desc else
                                                                          " NULLS LAST" if desc and not nf else "")
                          for i, desc, nf in n.order)
        limit = "all" if n.limit is None else n.limit
        if n.group_key or n.rank:
            gk = ", ".join(in_names[i] for i in n.group_key)
            return f"StreamGroupTopN {{ order: [{order}], limit: {limit}, offset: {n.offset}, group_key: [{gk}] }}"
        return f"StreamTopN {{ order: [{order}], limit: {limit}, offset: {n.offset} }}"
    if isinstance(n, StreamTemporalFilter):
        return f"StreamTemporalFilter {{ predicate: {n.display}, output: [{', '.join(names)}] }}"
    if isinstance(n, StreamOverWindow):
        assert n.input is not None
        in_names = n.input.names
        pk = ", ".join(in_names[i] for i in n.partition_key)
        order = ", ".join(f"{in_names[i]} {'DESC' if desc else 'ASC'}" for i, desc, _ in n.order)
        calls = ", ".join(c.display or c.kind for c in n.calls)
        return f"StreamOverWindow {{ window_functions: [{calls}], partition_by: [{pk}], order_by: [{order}] }}"
    if isinstance(n, StreamDynamicFilter):
        return f"StreamDynamicFilter {{ predicate: {n.display}, output: [{', '.join(names)}] }}"
    if isinstance(n, StreamChangeLog):
        return f"StreamChangeLog {{ need_op: true, columns: [{', '.join(names)}] }}"
    if isinstance(n, StreamUnion):
        return f"StreamUnion {{ all: true, columns: [{', '.join(names)}] }}"
    if isinstance(n, StreamHashAgg):
        assert n.input is not None
        in_names = n.input.names
        gk = ", ".join(in_names[i] for i in n.group_key)
        aggs = ", ".join(a.display or a.kind for a in n.aggs)
        marker = " [in_append_only]" if n.append_only_input else ""
        return f"StreamHashAgg{marker} {{ group_key: [{gk}], aggs: [{aggs}] }}"
    if isinstance(n, StreamExchange):
        assert n.input is not None
        dist = ", ".join(n.input.names[i] for i in n.dist_key)
        return f"StreamExchange {{ dist: HashShard({dist}) }}" if dist else "StreamExchange { dist: Single }"
    if isinstance(n, StreamProject):
        return f"StreamProject {{ exprs: [{', '.join(n.displays or n.exprs)}] }}"
    if isinstance(n, StreamFilter):
        return f"StreamFilter {{ predicate: {n.display or n.predicate} }}"
    if isinstance(n, StreamTableScan):
        return f"StreamTableScan {{ table: {n.upstream_name}, columns: [{', '.join(names)}], " \
               f"backfill_type: {n.backfill_type} }}"
    if isinstance(n, StreamDml):
        return f"StreamDml {{ columns: [{', '.join(names)}] }}"
    return type(n).__name__
