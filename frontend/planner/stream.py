"""The stream planner: a bound materialized-view query → a stream plan, the MV's columns, its stream
key and its state tables.

Plans, as RisingWave prints them::

    StreamMaterialize                          StreamMaterialize
    └─StreamExchange { dist: HashShard(key) }  └─StreamProject (MV column order)
      └─StreamProject                            └─StreamHashAgg
        └─StreamFilter                             └─StreamExchange { dist: HashShard(group key) }
          └─StreamTableScan                          └─StreamProject (group keys, agg arguments)
                                                       └─StreamFilter
                                                         └─StreamTableScan

Every query block (a subquery, a CTE, a branch of a UNION) is planned into a node whose columns
are the block's output columns followed by hidden stream key columns (``_rw_*``): a block keeps its
input's stream key, an aggregation its group key, a UNION the branch and the branch's key, so every
row has a unique key, as RisingWave's stream key. The MV stores the hidden columns too.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from frontend.arrow_condition import arrow_condition
from frontend.binder import (
    BoundFrom,
    BoundJoin,
    BoundQuery,
    BoundScan,
    BoundSetOp,
    BoundStreamSelect,
    BoundSubquery,
    RowNumber,
    SelectItem,
    numeric_result,
)
from frontend.binder.coercion import comparison_type
from frontend.binder.window import OverWindow
from frontend.expr import AggCallExpr, BinaryOp, BoundExpr, Case, Cast, InputRef, Literal, replace_exprs
from frontend.expr import walk as walk_expr
from frontend.temporal_filter import TemporalCond
from risingspark import arrow_expr
from risingspark.aggregate import (
    agg_state_fields,
    extreme_state_fields,
    input_state_fields,
    needs_input_state,
)
from risingspark.catalog import BackfillType
from risingspark.errors import DuplicateColumn, FeatureNotSupported, UndefinedFunction
from risingspark.functions import FunctionCatalog
from risingspark.storage.desc import StateTableDesc
from risingspark.stream_plan import (
    TEMPORAL_BOUND_FIELDS,
    AggCall,
    StreamChangeLog,
    StreamDynamicFilter,
    StreamExchange,
    StreamFilter,
    StreamHashAgg,
    StreamHashJoin,
    StreamMaterialize,
    StreamNode,
    StreamOverWindow,
    StreamProject,
    StreamTableScan,
    StreamTemporalFilter,
    StreamTopN,
    StreamUnion,
    WindowCall,
    is_append_only,
)
from risingspark.types import INT2, INT4, INT8, DataType, Field, TypeName


@dataclass(frozen=True)
class PlannedMv:
    fields: tuple[Field, ...]
    pk: tuple[int, ...]
    plan: StreamMaterialize
    state_tables: tuple[StateTableDesc, ...]  # the MV's own table first


@dataclass(frozen=True)
class Block:
    """A planned query block: `node`'s first `visible` columns are the block's output, the rest
    hidden key columns; `dist`: the output columns its rows are hash-distributed by, if known."""

    node: StreamNode
    visible: int
    dist: tuple[int, ...] | None = None


def state_tables_needed(bound: BoundQuery) -> int:
    """How many state table ids the plan needs besides the MV's own (one per aggregation, two per
    join, ...): the query planned once with placeholder ids."""
    counter = itertools.count(1)
    _StreamPlanner(counter.__next__, BackfillType.ARRANGEMENT_BACKFILL).query(bound)
    return next(counter) - 1


def plan_mv(bound: BoundQuery, mv_id: int, extra_table_ids: Iterable[int] | None,
            backfill_type: BackfillType, functions: tuple[FunctionCatalog, ...] = ()) -> PlannedMv:
    """`extra_table_ids`: the `state_tables_needed` ids of the state tables (None: zeros, to
    validate a query); `functions`: the user-defined functions the query calls (the binder's)."""
    ids = iter(extra_table_ids) if extra_table_ids is not None else itertools.repeat(0)
    planner = _StreamPlanner(ids.__next__, backfill_type)
    block = planner.query(bound)
    _check_names([f.name for f in block.node.fields[:block.visible]])
    node = block.node
    fields = tuple(f if i < block.visible else Field(f.name, f.type, hidden=True) for i, f in enumerate(node.fields))
    key = node.stream_key
    if block.dist != key:
        node = StreamExchange(fields=node.fields, stream_key=key, input=node, dist_key=key)
    table = StateTableDesc(mv_id, fields, key, key)
    mat = StreamMaterialize(fields=fields, stream_key=key, input=node, table=table, append_only=is_append_only(node),
                            functions=functions)
    for desc in (table, *planner.state_tables):
        _check_key_types(desc)
    _check_join_payloads(mat)
    return PlannedMv(fields, key, mat, (table, *planner.state_tables))


def _check_join_payloads(root: StreamNode) -> None:
    """A hash join matches rows with Arrow's hash join (`compute.executor.hash_join`), which carries
    no struct column: 0A000 at CREATE rather than an epoch that fails."""
    from risingspark.stream_plan import walk

    for node in walk(root):
        if isinstance(node, StreamHashJoin):
            for f in node.fields:
                if f.type.name is TypeName.STRUCT:
                    raise FeatureNotSupported(f'struct column "{f.name}" through a join in a materialized view is '
                                              f"not supported yet; join first, then build the struct with ROW(...)")


def _check_key_types(desc: StateTableDesc) -> None:
    """Intervals are stored as (months, days, microseconds), which equal intervals need not share
    ('1 mon' = '30 days'): a state table keyed by one (GROUP BY, DISTINCT, a join key, a TopN order)
    would hold equal keys apart. 0A000 at CREATE rather than a wrong answer. Structs and jsonb have
    no memcomparable encoding (`risingspark.storage.memcmp`), and jsonb's text is not its equality
    (``1.0`` = ``1``)."""
    for i in desc.pk:
        kind = desc.fields[i].type.name
        if kind in (TypeName.INTERVAL, TypeName.STRUCT, TypeName.JSONB):
            raise FeatureNotSupported(f'{kind.value} column "{desc.fields[i].name}" as a key (GROUP BY, DISTINCT, '
                                      f"join, ORDER BY ... LIMIT, UNION) in a materialized view is not supported yet")


class _StreamPlanner:
    def __init__(self, next_id: Callable[[], int], backfill_type: BackfillType) -> None:
        self.next_id = next_id
        self.backfill_type = backfill_type
        self.state_tables: list[StateTableDesc] = []

    def state_table(self, fields: tuple[Field, ...], pk: tuple[int, ...], dist: tuple[int, ...]) -> StateTableDesc:
        desc = StateTableDesc(self.next_id(), fields, pk, dist)
        self.state_tables.append(desc)
        return desc

    # ---- query blocks -------------------------------------------------------------------------
    def query(self, q: BoundQuery) -> Block:
        if isinstance(q, BoundSetOp):
            return self.set_op(q)
        return self.select(q)

    def select(self, b: BoundStreamSelect) -> Block:
        node = self.from_(_with_rank_limit(b))
        if b.where is not None:
            node = StreamFilter(fields=node.fields, stream_key=node.stream_key, input=node,
                                predicate=b.where.to_spark(), display=b.where.display())
        for cond in b.temporal:
            node = self._temporal_filter(node, cond)
        group_by = b.group_by
        distinct = b.distinct
        if distinct and group_by is None:
            # SELECT DISTINCT is a grouping by the select list, without aggregates.
            group_by = tuple(it.expr for it in b.items)
            distinct = False
        if b.row_number is not None:
            block = self._row_number(b, b.row_number, node)
        elif b.over_window is not None:
            block = self._over_window(b, b.over_window, node)
        elif group_by is None:
            block = self._project(b, node)
        else:
            block = self._agg(b, group_by, node)
        if distinct:
            block = self._distinct(block)
        if b.limit is not None:
            order = tuple((o.index, o.descending, o.nulls_first) for o in b.order_by)
            block = Block(self._top_n(block.node, (), order, b.limit, b.offset, None), block.visible)
        return block

    def _top_n(self, node: StreamNode, group: tuple[int, ...], order: tuple[tuple[int, bool, bool], ...],
               limit: int | None, offset: int, rank: str | None) -> StreamNode:
        """A (group) TopN over `node`, behind an exchange by the group key (a single one without)."""
        exchange = StreamExchange(fields=node.fields, stream_key=node.stream_key, input=node, dist_key=group)
        state = self.state_table(node.fields, _dedup(group + tuple(i for i, _, _ in order) + node.stream_key), group)
        fields = node.fields + ((Field(rank, INT8),) if rank is not None else ())
        return StreamTopN(fields=fields, stream_key=node.stream_key, input=exchange, group_key=group, order=order,
                          limit=limit, offset=offset, rank=rank is not None, state_table=state)

    def _temporal_filter(self, node: StreamNode, cond: TemporalCond) -> StreamNode:
        """A temporal filter over `node`, behind a Single exchange: its state holds the rows keyed by
        the time column (then the stream key), and one small table its last bound."""
        exchange = StreamExchange(fields=node.fields, stream_key=node.stream_key, input=node, dist_key=())
        state = self.state_table(node.fields, _dedup((cond.column.index, *node.stream_key)), ())
        bound = self.state_table(TEMPORAL_BOUND_FIELDS, (0,), ())
        return StreamTemporalFilter(fields=node.fields, stream_key=node.stream_key, input=exchange,
                                    column=cond.column.index, op=cond.op, offset_us=cond.offset_us,
                                    display=cond.display(), state_table=state, bound_table=bound)

    def _row_number(self, b: BoundStreamSelect, rn: RowNumber, node: StreamNode) -> Block:
        """A block with ``ROW_NUMBER() OVER (PARTITION BY p ORDER BY o)``: the other items, p and o
        projected, a group TopN by p numbering the rows, then the items in their order."""
        items = [it for i, it in enumerate(b.items) if i != rn.index]
        extra = [SelectItem(e, f"_rw_partition_{i}") for i, e in enumerate(rn.partition_by)]
        extra += [SelectItem(e, f"_rw_order_{i}") for i, (e, _, _) in enumerate(rn.order_by)]
        pre = self._project(BoundStreamSelect(b.source, tuple(items + extra), None, None, hidden=len(extra)), node)
        inner = pre.node
        group = tuple(range(len(items), len(items) + len(rn.partition_by)))
        first = len(items) + len(rn.partition_by)
        order = tuple((first + i, desc, nf) for i, (_, desc, nf) in enumerate(rn.order_by))
        name = b.items[rn.index].name
        top = self._top_n(inner, group, order, rn.limit, 0, _hidden_name(name, list(inner.fields)))
        # the items in their order, the row number in its place; then the stream key columns
        cols = [*range(rn.index), len(inner.fields), *range(rn.index, len(items))]
        fields = [Field(name if c == len(inner.fields) else top.fields[c].name, top.fields[c].type) for c in cols]
        key: list[int] = []
        for k in top.stream_key:
            if k not in cols:
                cols.append(k)
                fields.append(Field(top.fields[k].name, top.fields[k].type, hidden=True))
            key.append(cols.index(k))
        _check_names([f.name for f in fields])
        project = StreamProject(fields=tuple(fields), stream_key=tuple(key), input=top,
                                exprs=tuple(f"`{top.fields[c].name}`" for c in cols),
                                displays=tuple(top.fields[c].name for c in cols))
        return Block(project, len(b.items) - b.hidden)

    def _over_window(self, b: BoundStreamSelect, ow: OverWindow, node: StreamNode) -> Block:
        """A block with window functions: the other items, the partition, order and argument
        expressions projected, an exchange by the partition key, a StreamOverWindow appending one
        column per call, then the items in their order."""
        at = {c.index: c for c in ow.calls}
        items = [it for i, it in enumerate(b.items) if i not in at]
        extra = [SelectItem(e, f"_rw_partition_{i}") for i, e in enumerate(ow.partition_by)]
        extra += [SelectItem(e, f"_rw_order_{i}") for i, (e, _, _) in enumerate(ow.order_by)]
        args: dict[int, int] = {}  # call index -> its argument's position
        for c in ow.calls:
            if c.arg is not None:
                args[c.index] = len(items) + len(extra)
                extra.append(SelectItem(c.arg, f"_rw_arg_{c.index}"))
        pre = self._project(BoundStreamSelect(b.source, tuple(items + extra), None, None, hidden=len(extra)), node)
        inner = pre.node
        first = len(items)
        group = tuple(range(first, first + len(ow.partition_by)))
        start = first + len(ow.partition_by)
        order = tuple((start + i, desc, nf) for i, (_, desc, nf) in enumerate(ow.order_by))
        exchange = StreamExchange(fields=inner.fields, stream_key=inner.stream_key, input=inner, dist_key=group)
        state = self.state_table(inner.fields, _dedup(group + tuple(i for i, _, _ in order) + inner.stream_key), group)
        calls = tuple(WindowCall(c.kind, args.get(c.index), c.type, c.display, c.offset, c.default, *c.frame)
                      for c in ow.calls)
        outputs = [Field(_hidden_name(f"_rw_window_{c.index}", list(inner.fields)), c.type) for c in ow.calls]
        window = StreamOverWindow(fields=inner.fields + tuple(outputs), stream_key=inner.stream_key, input=exchange,
                                  partition_key=group, order=order, calls=calls, state_table=state)
        # the items in their order, each call's column in its place; then the stream key columns
        cols: list[int] = []
        plain = iter(range(len(items)))
        for i in range(len(b.items)):
            cols.append(len(inner.fields) + ow.calls.index(at[i]) if i in at else next(plain))
        fields = [Field(b.items[i].name, window.fields[c].type) for i, c in enumerate(cols)]
        key: list[int] = []
        for k in window.stream_key:
            if k not in cols:
                cols.append(k)
                fields.append(Field(window.fields[k].name, window.fields[k].type, hidden=True))
            key.append(cols.index(k))
        _check_names([f.name for f in fields])
        project = StreamProject(fields=tuple(fields), stream_key=tuple(key), input=window,
                                exprs=tuple(f"`{window.fields[c].name}`" for c in cols),
                                displays=tuple(window.fields[c].name for c in cols))
        return Block(project, len(b.items) - b.hidden)

    def set_op(self, s: BoundSetOp) -> Block:
        branches = [self.query(s.left), self.query(s.right)]
        n = len(s.fields)
        # hidden key: the branch, then every branch's key columns (NULL in the other branches)
        key_fields: list[Field] = [Field("_rw_branch", INT4)]
        for bi, br in enumerate(branches):
            key_fields += [Field(f"_rw_b{bi}_k{j}", br.node.fields[k].type) for j, k in enumerate(br.node.stream_key)]
        fields = tuple(Field(f.name, f.type) for f in s.fields) + tuple(key_fields)
        inputs: list[StreamNode] = []
        for bi, br in enumerate(branches):
            src = br.node
            exprs: list[BoundExpr] = []
            for i, f in enumerate(s.fields):
                ref: BoundExpr = InputRef(i, src.fields[i].name, src.fields[i].type)
                exprs.append(ref if src.fields[i].type == f.type else Cast(ref, f.type))
            exprs.append(Literal(bi, INT4))
            for bj, other in enumerate(branches):
                for k in other.node.stream_key:
                    t = other.node.fields[k].type
                    exprs.append(InputRef(k, src.fields[k].name, t) if bj == bi else Literal(None, t))
            key = tuple(range(n, len(fields)))
            inputs.append(StreamProject(fields=fields, stream_key=key, input=src, exprs=tuple(e.to_spark() for e in exprs),
                                        displays=tuple(e.display() for e in exprs)))
        union = StreamUnion(fields=fields, stream_key=tuple(range(n, len(fields))), branches=tuple(inputs))
        block = Block(union, n)
        return block if s.all else self._distinct(block)

    # ---- FROM ---------------------------------------------------------------------------------
    def from_(self, src: BoundFrom) -> StreamNode:
        """The FROM tree, joined left-deep. The node's first columns are the FROM's columns as
        bound (every item's, in FROM order; a semi / anti join adds none), so a FROM column's index
        is its index in the output; after them come the hidden stream key columns of subqueries
        (extras), which no expression refers to."""
        if isinstance(src, BoundScan):
            rel = src.relation
            width = len(rel.fields)
            node: StreamNode = StreamTableScan(fields=src.fields[:width], stream_key=rel.pk, upstream_id=rel.id,
                                               upstream_name=rel.name, upstream_desc=rel.table_desc,
                                               backfill_type=self.backfill_type.value, append_only=rel.append_only)
            if src.changelog:
                # the upstream's key, the op and the epoch identify a change (`StreamChangeLog`)
                node = StreamChangeLog(fields=src.fields, stream_key=(*rel.pk, width, width + 2), input=node)
            return _filtered(node, src.filter)
        if isinstance(src, BoundSubquery):
            if src.filter is not None:
                src = _rank_limited(src, _conjuncts(src.filter))
            block = self.query(src.query)
            node = block.node
            # the subquery's columns as the outer query names them (alias.column), then its hidden
            # key columns as extras
            qualified = src.fields[0].name != node.fields[0].name if src.fields else False
            extras = tuple(Field(f"{src.alias}.{f.name}" if qualified else f.name, f.type, hidden=True)
                           for f in node.fields[len(src.fields):])
            fields = src.fields + extras
            if tuple(f.name for f in node.fields) != tuple(f.name for f in fields):
                exprs = tuple(f"`{f.name}`" for f in node.fields)
                node = StreamProject(fields=fields, stream_key=node.stream_key, input=node, exprs=exprs,
                                     displays=tuple(f.name for f in node.fields))
            return _filtered(node, src.filter)
        return self._join(src)

    def _join(self, src: BoundJoin) -> StreamNode:
        if src.kind == "DYNAMIC":
            return self._dynamic_filter(src)
        left = self.from_(src.left)
        right = self.from_(src.right)
        n_left = len(src.left.fields)
        lkey = tuple(k.index for k in src.left_keys)
        rkey = tuple(k.index - n_left for k in src.right_keys)
        key_types = tuple(numeric_result(a.type, b.type) if a.type != b.type and a.type.is_numeric and b.type.is_numeric
                          else a.type for a, b in zip(src.left_keys, src.right_keys, strict=True))
        for a, b in zip(src.left_keys, src.right_keys, strict=True):
            if a.type.name is not b.type.name and not (a.type.is_numeric and b.type.is_numeric):
                raise UndefinedFunction(f"operator does not exist: {a.type.display()} = {b.type.display()}")
        left, lkey = _keys_of_type(left, lkey, key_types, list(right.fields))
        right, rkey = _keys_of_type(right, rkey, key_types, list(left.fields))
        lx = StreamExchange(fields=left.fields, stream_key=left.stream_key, input=left, dist_key=lkey)
        rx = StreamExchange(fields=right.fields, stream_key=right.stream_key, input=right, dist_key=rkey)
        left_state = self.state_table(left.fields, _dedup(lkey + left.stream_key), lkey)
        right_state = self.state_table(right.fields, _dedup(rkey + right.stream_key), rkey)
        if src.kind in ("SEMI", "ANTI"):
            fields, key = left.fields, left.stream_key
        else:
            fields = left.fields + right.fields
            key = left.stream_key + tuple(len(left.fields) + k for k in right.stream_key)
        # an inner join's other conditions filter its output; an outer, semi or anti join tests them
        # while it matches rows (a row failing them is padded, or counts as no match)
        inner = src.kind == "INNER"
        condition = "" if inner or src.residual is None else \
            arrow_expr.dumps(arrow_condition(src.residual, f"a condition of a {src.kind} join"))
        join: StreamNode = StreamHashJoin(fields=fields, stream_key=key, left=lx, right=rx, kind=src.kind,
                                          left_key=lkey, right_key=rkey, key_types=key_types, left_state=left_state,
                                          right_state=right_state,
                                          null_safe=tuple(src.is_null_safe(i) for i in range(len(lkey)))
                                          if any(src.null_safe) else (),
                                          condition=condition,
                                          condition_display=src.residual.display() if condition and src.residual
                                          else "")
        if inner and src.residual is not None:
            join = StreamFilter(fields=fields, stream_key=key, input=join, predicate=src.residual.to_spark(),
                                display=src.residual.display())
        if src.kind in ("SEMI", "ANTI") or len(left.fields) == n_left:
            return join
        # the left side's extras move behind the right side's columns, keeping FROM columns first
        width = len(src.fields)
        order = [*range(n_left), *range(len(left.fields), len(left.fields) + width - n_left),
                 *range(n_left, len(left.fields)), *range(len(left.fields) + width - n_left, len(fields))]
        moved = tuple(fields[i] for i in order)
        position = {old: new for new, old in enumerate(order)}
        return StreamProject(fields=moved, stream_key=tuple(position[k] for k in key), input=join,
                             exprs=tuple(f"`{f.name}`" for f in moved), displays=tuple(f.name for f in moved))

    def _dynamic_filter(self, src: BoundJoin) -> StreamNode:
        """``key op value`` against a one-row side: the left rows with the compared expression as a
        key column (of the comparison's type), the value as the right's, a StreamDynamicFilter over
        both, then the left columns again."""
        cond = src.residual
        assert isinstance(cond, BinaryOp)
        left, right = self.from_(src.left), self.from_(src.right)
        key_type = comparison_type(cond.left.type, cond.right.type)  # both sides in it: a cast never truncates
        key_field = Field(_hidden_name("_rw_dynamic_key", list(left.fields)), key_type)
        key_expr, value_expr = _cast_to(cond.left, key_type), _cast_to(cond.right, key_type)
        keyed = StreamProject(fields=left.fields + (key_field,), stream_key=left.stream_key, input=left,
                              exprs=(*(f"`{f.name}`" for f in left.fields), key_expr.to_spark()),
                              displays=(*(f.name for f in left.fields), key_expr.display()))
        value = StreamProject(fields=(Field("_rw_dynamic_value", key_type),), stream_key=(), input=right,
                              exprs=(value_expr.to_spark(),), displays=(value_expr.display(),))
        key = len(left.fields)
        lx = StreamExchange(fields=keyed.fields, stream_key=keyed.stream_key, input=keyed, dist_key=())
        rx = StreamExchange(fields=value.fields, stream_key=(), input=value, dist_key=())
        state = self.state_table(keyed.fields, _dedup((key, *left.stream_key)), ())
        bound = self.state_table((Field("_rw_key", INT2), Field("_rw_bound", key_type)), (0,), ())
        node = StreamDynamicFilter(fields=keyed.fields, stream_key=keyed.stream_key, left=lx, right=rx, key=key,
                                   op=cond.op, bound=0, display=cond.display(), state_table=state, bound_table=bound)
        return StreamProject(fields=left.fields, stream_key=left.stream_key, input=node,
                             exprs=tuple(f"`{f.name}`" for f in left.fields), displays=tuple(f.name for f in left.fields))

    # ---- projections and aggregations ---------------------------------------------------------
    def _project(self, b: BoundStreamSelect, node: StreamNode) -> Block:
        exprs: list[BoundExpr] = [i.expr for i in b.items]
        fields = [Field(i.name, i.expr.type) for i in b.items]
        visible = len(fields) - b.hidden
        _check_names([f.name for f in fields])
        pk: list[int] = []
        for col in node.stream_key:
            pos = next((j for j, e in enumerate(exprs) if isinstance(e, InputRef) and e.index == col), None)
            if pos is None:
                f = node.fields[col]
                exprs.append(InputRef(col, f.name, f.type))
                fields.append(Field(_hidden_name(f"_rw_{f.name}", fields), f.type, hidden=True))
                pos = len(fields) - 1
            pk.append(pos)
        key = tuple(dict.fromkeys(pk))
        project = StreamProject(fields=tuple(fields), stream_key=key, input=node,
                                exprs=tuple(e.to_spark() for e in exprs), displays=tuple(e.display() for e in exprs))
        return Block(project, visible)

    def _distinct(self, block: Block) -> Block:
        """Rows of `block` without duplicates: a grouping by its output columns, no aggregates."""
        node = block.node
        n = block.visible
        cols = node.fields[:n]
        gkey = tuple(range(n))
        project = StreamProject(fields=cols, stream_key=gkey, input=node, exprs=tuple(f"`{f.name}`" for f in cols),
                                displays=tuple(f.name for f in cols))
        exchange = StreamExchange(fields=cols, stream_key=gkey, input=project, dist_key=gkey)
        state = self.state_table(agg_state_fields(list(cols), []), gkey, gkey)
        agg = StreamHashAgg(fields=cols, stream_key=gkey, input=exchange, group_key=gkey, aggs=(), state_table=state)
        return Block(agg, n, gkey)

    def _agg(self, b: BoundStreamSelect, groups_: tuple[BoundExpr, ...], node: StreamNode) -> Block:
        groups = list(groups_)
        aggs: list[AggCallExpr] = []
        for e in [it.expr for it in b.items] + ([b.having] if b.having is not None else []):
            for x in walk_expr(e):
                if isinstance(x, AggCallExpr) and x not in aggs:
                    aggs.append(x)
        # Project: group keys, then the arguments of the aggregates (and string_agg's ORDER BY columns).
        in_exprs: list[BoundExpr] = list(groups)
        in_fields = [Field(f"_g{i}", g.type) for i, g in enumerate(groups)]
        calls: list[AggCall] = []
        for j, a in enumerate(aggs):
            arg = None
            kind = a.kind
            arg_expr = a.arg
            if a.filter is not None:
                # agg(x) FILTER (WHERE c) is agg(CASE WHEN c THEN x END): NULL inputs are ignored;
                # count(*) FILTER (WHERE c) counts the rows where c holds
                if kind == "count_star":
                    kind, arg_expr = "count", Literal(1, INT4)
                assert arg_expr is not None
                arg_expr = Case(((a.filter, arg_expr),), None, arg_expr.type)
            if arg_expr is not None:
                in_exprs.append(arg_expr)
                in_fields.append(Field(f"_arg{j}", arg_expr.type))
                arg = len(in_fields) - 1
            order = []
            for n, (e, desc, nulls_first) in enumerate(a.order_by):
                in_exprs.append(e)
                in_fields.append(Field(f"_ord{j}_{n}", e.type))
                order.append((len(in_fields) - 1, desc, nulls_first))
            if a.delimiter_arg is not None:  # each row's delimiter rides as the last order column
                in_exprs.append(a.delimiter_arg)
                in_fields.append(Field(f"_delim{j}", a.delimiter_arg.type))
                order.append((len(in_fields) - 1, False, False))
            calls.append(AggCall(kind, arg, a.type, a.display(), a.distinct, tuple(order), a.delimiter,
                                 a.delimiter_arg is not None))
        # min and max keep one input state row per input row, keyed by (group, value, the input's
        # stream key): the input carries its stream key to them (`compute.cache.extreme_cache`)
        # over an append-only input, min and max keep only their value (`risingspark.aggregate`)
        append_only = is_append_only(node)
        row_key: list[int] = []
        if not append_only and any(c.kind in ("min", "max") and not c.distinct for c in calls):
            for n, i in enumerate(node.stream_key):
                in_exprs.append(InputRef(i, node.fields[i].name, node.fields[i].type))
                in_fields.append(Field(f"_sk{n}", node.fields[i].type))
                row_key.append(len(in_fields) - 1)
        k = len(groups)
        gkey = tuple(range(k))
        project = StreamProject(fields=tuple(in_fields), stream_key=gkey, input=node,
                                exprs=tuple(e.to_spark() for e in in_exprs),
                                displays=tuple(e.display() for e in in_exprs))
        exchange = StreamExchange(fields=tuple(in_fields), stream_key=gkey, input=project, dist_key=gkey)
        agg_fields = tuple(in_fields[:k]) + tuple(Field(f"_agg{j}", a.type) for j, a in enumerate(aggs))
        state = self.state_table(agg_state_fields(list(in_fields[:k]),
                                                  [(c.kind, in_fields[c.arg].type if c.arg is not None else None)
                                                   for c in calls], [c.distinct for c in calls], append_only),
                                 gkey, gkey)
        # min, max, string_agg and DISTINCT calls keep their input (value multiplicities) per group
        input_states: list[StateTableDesc | None] = []
        for c in calls:
            if not needs_input_state(c.kind, c.distinct, append_only):
                input_states.append(None)
                continue
            assert c.arg is not None
            if c.kind in ("min", "max") and not c.distinct:
                columns = extreme_state_fields(list(in_fields[:k]), in_fields[c.arg], [in_fields[i] for i in row_key])
                input_states.append(self.state_table(columns, tuple(range(len(columns))), gkey))
                continue
            columns = input_state_fields(list(in_fields[:k]), in_fields[c.arg], [in_fields[o] for o, _, _ in c.order])
            input_states.append(self.state_table(columns, tuple(range(len(columns) - 1)), gkey))
        agg: StreamNode = StreamHashAgg(fields=agg_fields, stream_key=gkey, input=exchange, group_key=gkey,
                                        aggs=tuple(calls), state_table=state, input_states=tuple(input_states),
                                        append_only_input=append_only)
        # Over the aggregate's output, group keys and aggregate calls are columns.
        refs: dict[BoundExpr, BoundExpr] = {g: InputRef(i, f"_g{i}", g.type) for i, g in enumerate(groups)}
        refs.update({a: InputRef(k + j, f"_agg{j}", a.type) for j, a in enumerate(aggs)})
        if b.having is not None:
            having = replace_exprs(b.having, refs)
            agg = StreamFilter(fields=agg_fields, stream_key=gkey, input=agg, predicate=having.to_spark(),
                               display=b.having.display())
        # The block: the select list in order, then the group keys that were not selected (hidden).
        fields: list[Field] = []
        exprs: list[BoundExpr] = []
        for it in b.items:
            fields.append(Field(it.name, it.expr.type))
            exprs.append(replace_exprs(it.expr, refs))
        _check_names([f.name for f in fields])
        pk = []
        for i, g in enumerate(groups):
            pos = next((j for j, e in enumerate(exprs) if e == refs[g]), None)
            if pos is None:
                base = f"_rw_{g.name}" if isinstance(g, InputRef) else f"_rw_group_{i}"
                fields.append(Field(_hidden_name(base, fields), g.type, hidden=True))
                exprs.append(refs[g])
                pos = len(fields) - 1
            pk.append(pos)
        key = tuple(pk)
        out = StreamProject(fields=tuple(fields), stream_key=key, input=agg,
                            exprs=tuple(e.to_spark() for e in exprs), displays=tuple(e.display() for e in exprs))
        return Block(out, len(b.items) - b.hidden, key)


def _with_rank_limit(b: BoundStreamSelect) -> BoundFrom:
    """FROM a subquery numbering rows with ROW_NUMBER(), a WHERE conjunct ``rn <= n`` (``< n``,
    ``= n``) makes the numbering a TopN of n rows per group, as RisingWave plans it. The filter still
    applies above it. (A subquery among several FROM items gets WHERE's conjuncts over it alone as
    its own filter: `_rank_limited` with those, in `from_`.)"""
    if not isinstance(b.source, BoundSubquery) or b.where is None:
        return b.source
    return _rank_limited(b.source, _conjuncts(b.where))


def _rank_limited(src: BoundSubquery, conds: list[BoundExpr]) -> BoundSubquery:
    """`src` with its ROW_NUMBER() limited by the conjuncts ``rn <= n`` among `conds` (over the FROM
    clause's columns)."""
    if not isinstance(src.query, BoundStreamSelect) or src.query.row_number is None:
        return src
    rn = src.query.row_number
    column = src.offset + rn.index
    limit = rn.limit
    for c in conds:
        if not isinstance(c, BinaryOp):
            continue
        op, left, right = c.op, _uncast(c.left), _uncast(c.right)
        if isinstance(left, Literal):
            op, left, right = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "=": "="}.get(op, ""), right, left
        if not (isinstance(left, InputRef) and left.index == column and isinstance(right, Literal)
                and isinstance(right.value, int) and not isinstance(right.value, bool)):
            continue
        n = {"<=": right.value, "=": right.value, "<": right.value - 1}.get(op)
        if n is not None:
            limit = max(n, 0) if limit is None else min(limit, max(n, 0))
    if limit == rn.limit:
        return src
    query = dataclasses.replace(src.query, row_number=dataclasses.replace(rn, limit=limit))
    return dataclasses.replace(src, query=query)


def _cast_to(e: BoundExpr, t: DataType) -> BoundExpr:
    return e if e.type == t else Cast(e, t)


def _filtered(node: StreamNode, predicate: BoundExpr | None) -> StreamNode:
    if predicate is None:
        return node
    return StreamFilter(fields=node.fields, stream_key=node.stream_key, input=node, predicate=predicate.to_spark(),
                        display=predicate.display())


def _conjuncts(e: BoundExpr) -> list[BoundExpr]:
    if isinstance(e, BinaryOp) and e.op == "AND":
        return _conjuncts(e.left) + _conjuncts(e.right)
    return [e]


def _uncast(e: BoundExpr) -> BoundExpr:
    while isinstance(e, Cast):
        e = e.operand
    return e


def _dedup(indices: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(dict.fromkeys(indices))


def _check_names(names: list[str]) -> None:
    seen: set[str] = set()
    for n in names:
        if n in seen:
            raise DuplicateColumn(f'column "{n}" specified more than once',
                                  hint="Give the columns distinct names with AS.")
        seen.add(n)


def _keys_of_type(node: StreamNode, key: tuple[int, ...], types: tuple[DataType, ...],
                  taken: list[Field]) -> tuple[StreamNode, tuple[int, ...]]:
    """A join side whose key columns have the join's key types: a key column of another type (an
    INT joined to a BIGINT, NUMERIC(12,2) to NUMERIC(10,1)) gets a cast copy behind the side's columns
    (an extra, as a subquery's hidden key), and the join is on the copy; the state tables store it,
    so both sides' keys compare as equal values of one type."""
    if all(node.fields[c].type.to_spark() == t.to_spark() for c, t in zip(key, types, strict=True)):
        return node, key
    fields, exprs, displays = list(node.fields), [f"`{f.name}`" for f in node.fields], [f.name for f in node.fields]
    out = []
    for c, t in zip(key, types, strict=True):
        f = node.fields[c]
        if f.type.to_spark() == t.to_spark():  # (VARCHAR(10) and VARCHAR are one type to the executors)
            out.append(c)
            continue
        cast = Cast(InputRef(c, f.name, f.type), t)
        fields.append(Field(_hidden_name(f"_rw_key_{f.name}", [*taken, *fields]), t, hidden=True))
        exprs.append(cast.to_spark())
        displays.append(cast.display())
        out.append(len(fields) - 1)
    project = StreamProject(fields=tuple(fields), stream_key=node.stream_key, input=node, exprs=tuple(exprs),
                            displays=tuple(displays))
    return project, tuple(out)


def _hidden_name(base: str, fields: list[Field]) -> str:
    names = {f.name for f in fields}
    name, i = base, 1
    while name in names:
        i += 1
        name = f"{base}_{i}"
    return name
