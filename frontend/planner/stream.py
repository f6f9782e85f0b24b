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

An MV keeps the upstream's stream key (as hidden ``_rw_*`` columns when not selected), or the group
key for an aggregation, so every row it stores has a unique key, as RisingWave's stream key.
"""

from __future__ import annotations

from dataclasses import dataclass

from frontend.binder import BoundFrom, BoundScan, BoundStreamSelect, numeric_result
from frontend.expr import AggCallExpr, BoundExpr, Case, InputRef, Literal, replace_exprs
from frontend.expr import walk as walk_expr
from risingspark.aggregate import agg_state_fields, input_state_fields, needs_input_state
from risingspark.catalog import BackfillType
from risingspark.errors import DuplicateColumn, UndefinedFunction
from risingspark.storage.desc import StateTableDesc
from risingspark.stream_plan import (
    AggCall,
    StreamExchange,
    StreamFilter,
    StreamHashAgg,
    StreamHashJoin,
    StreamMaterialize,
    StreamNode,
    StreamProject,
    StreamTableScan,
)
from risingspark.types import INT4, Field


@dataclass(frozen=True)
class PlannedMv:
    fields: tuple[Field, ...]
    pk: tuple[int, ...]
    plan: StreamMaterialize
    state_tables: tuple[StateTableDesc, ...]  # the MV's own table first


def state_tables_needed(bound: BoundStreamSelect) -> int:
    """How many state table ids the plan needs besides the MV's own: one per aggregation and one
    more per aggregate call with a materialized input state (min, max, string_agg, DISTINCT), two
    per join (one per side)."""
    joins = len(bound.relations) - 1
    if bound.group_by is None:
        return 2 * joins
    inputs = sum(1 for a in _agg_calls(bound) if needs_input_state(a.kind, a.distinct))
    return 1 + inputs + 2 * joins


def _agg_calls(bound: BoundStreamSelect) -> list[AggCallExpr]:
    """The distinct aggregate calls of the select list and HAVING, in order of appearance."""
    aggs: list[AggCallExpr] = []
    for e in [it.expr for it in bound.items] + ([bound.having] if bound.having is not None else []):
        for x in walk_expr(e):
            if isinstance(x, AggCallExpr) and x not in aggs:
                aggs.append(x)
    return aggs


def plan_mv(bound: BoundStreamSelect, mv_id: int, extra_table_ids: list[int] | None,
            backfill_type: BackfillType) -> PlannedMv:
    """`extra_table_ids`: `state_tables_needed` ids (None: zeros, to validate a query)."""
    ids = list(extra_table_ids) if extra_table_ids is not None else [0] * state_tables_needed(bound)
    node = _plan_from(bound.source, backfill_type, ids)
    if bound.where is not None:
        node = StreamFilter(fields=node.fields, stream_key=node.stream_key, input=node,
                            predicate=bound.where.to_spark(), display=bound.where.display())
    _check_names([i.name for i in bound.items])
    if bound.group_by is None:
        return _plan_project(bound, node, mv_id)
    return _plan_agg(bound, node, mv_id, ids)


def _plan_from(src: BoundFrom, backfill_type: BackfillType, ids: list[int]) -> StreamNode:
    """Scans of the FROM relations, joined left-deep. Every scan's columns appear, in FROM order,
    in the output of the tree, so a FROM column's index is its index in the output."""
    if isinstance(src, BoundScan):
        rel = src.relation
        return StreamTableScan(fields=src.fields, stream_key=rel.pk, upstream_id=rel.id, upstream_name=rel.name,
                               upstream_desc=rel.table_desc, backfill_type=backfill_type.value)
    left = _plan_from(src.left, backfill_type, ids)
    right = _plan_from(src.right, backfill_type, ids)
    n_left = len(left.fields)
    lkey = tuple(k.index for k in src.left_keys)
    rkey = tuple(k.index - n_left for k in src.right_keys)
    key_types = tuple(numeric_result(a.type, b.type) if a.type != b.type and a.type.is_numeric and b.type.is_numeric
                      else a.type for a, b in zip(src.left_keys, src.right_keys, strict=True))
    for a, b in zip(src.left_keys, src.right_keys, strict=True):
        if a.type.name is not b.type.name and not (a.type.is_numeric and b.type.is_numeric):
            raise UndefinedFunction(f"operator does not exist: {a.type.display()} = {b.type.display()}")
    lx = StreamExchange(fields=left.fields, stream_key=left.stream_key, input=left, dist_key=lkey)
    rx = StreamExchange(fields=right.fields, stream_key=right.stream_key, input=right, dist_key=rkey)
    left_state = StateTableDesc(ids.pop(0), left.fields, _dedup(lkey + left.stream_key), lkey)
    right_state = StateTableDesc(ids.pop(0), right.fields, _dedup(rkey + right.stream_key), rkey)
    fields = left.fields + right.fields
    key = left.stream_key + tuple(n_left + k for k in right.stream_key)
    join: StreamNode = StreamHashJoin(fields=fields, stream_key=key, left=lx, right=rx, kind=src.kind, left_key=lkey,
                                      right_key=rkey, key_types=key_types, left_state=left_state,
                                      right_state=right_state)
    if src.residual is not None:
        join = StreamFilter(fields=fields, stream_key=key, input=join, predicate=src.residual.to_spark(),
                            display=src.residual.display())
    return join


def _dedup(indices: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(dict.fromkeys(indices))


def _plan_project(bound: BoundStreamSelect, node: StreamNode, mv_id: int) -> PlannedMv:
    exprs: list[BoundExpr] = [i.expr for i in bound.items]
    fields = [Field(i.name, i.expr.type) for i in bound.items]
    pk: list[int] = []
    for col in node.stream_key:
        pos = next((j for j, e in enumerate(exprs) if isinstance(e, InputRef) and e.index == col), None)
        if pos is None:
            f = node.fields[col]
            exprs.append(InputRef(col, f.name, f.type))
            fields.append(Field(_hidden_name(f"_rw_{f.name}", fields), f.type, hidden=True))
            pos = len(fields) - 1
        pk.append(pos)
    key = tuple(pk)
    project = StreamProject(fields=tuple(fields), stream_key=key, input=node,
                            exprs=tuple(e.to_spark() for e in exprs), displays=tuple(e.display() for e in exprs))
    exchange = StreamExchange(fields=tuple(fields), stream_key=key, input=project, dist_key=key)
    table = StateTableDesc(mv_id, tuple(fields), key, key)
    mat = StreamMaterialize(fields=tuple(fields), stream_key=key, input=exchange, table=table)
    return PlannedMv(tuple(fields), key, mat, (table,))


def _plan_agg(bound: BoundStreamSelect, node: StreamNode, mv_id: int, ids: list[int]) -> PlannedMv:
    assert bound.group_by is not None
    state_id = ids.pop(0)
    groups = list(bound.group_by)
    aggs = _agg_calls(bound)
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
        calls.append(AggCall(kind, arg, a.type, a.display(), a.distinct, tuple(order), a.delimiter))
    k = len(groups)
    gkey = tuple(range(k))
    project = StreamProject(fields=tuple(in_fields), stream_key=gkey, input=node,
                            exprs=tuple(e.to_spark() for e in in_exprs),
                            displays=tuple(e.display() for e in in_exprs))
    exchange = StreamExchange(fields=tuple(in_fields), stream_key=gkey, input=project, dist_key=gkey)
    agg_fields = tuple(in_fields[:k]) + tuple(Field(f"_agg{j}", a.type) for j, a in enumerate(aggs))
    state = StateTableDesc(state_id, agg_state_fields(list(in_fields[:k]),
                                                      [(c.kind, in_fields[c.arg].type if c.arg is not None else None)
                                                       for c in calls], [c.distinct for c in calls]), gkey, gkey)
    input_states: list[StateTableDesc | None] = []
    for c in calls:
        if not needs_input_state(c.kind, c.distinct):
            input_states.append(None)
            continue
        assert c.arg is not None
        columns = input_state_fields(list(in_fields[:k]), in_fields[c.arg], [in_fields[o] for o, _, _ in c.order])
        input_states.append(StateTableDesc(ids.pop(0), columns, tuple(range(len(columns) - 1)), gkey))
    agg: StreamNode = StreamHashAgg(fields=agg_fields, stream_key=gkey, input=exchange, group_key=gkey,
                                    aggs=tuple(calls), state_table=state, input_states=tuple(input_states))
    # Over the aggregate's output, group keys and aggregate calls are columns.
    refs: dict[BoundExpr, BoundExpr] = {g: InputRef(i, f"_g{i}", g.type) for i, g in enumerate(groups)}
    refs.update({a: InputRef(k + j, f"_agg{j}", a.type) for j, a in enumerate(aggs)})
    if bound.having is not None:
        having = replace_exprs(bound.having, refs)
        agg = StreamFilter(fields=agg_fields, stream_key=gkey, input=agg, predicate=having.to_spark(),
                           display=bound.having.display())
    # The MV: the select list in order, then the group keys that were not selected (hidden).
    fields: list[Field] = []
    exprs: list[BoundExpr] = []
    for it in bound.items:
        fields.append(Field(it.name, it.expr.type))
        exprs.append(replace_exprs(it.expr, refs))
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
    table = StateTableDesc(mv_id, tuple(fields), key, key)
    mat = StreamMaterialize(fields=tuple(fields), stream_key=key, input=out, table=table)
    return PlannedMv(tuple(fields), key, mat, (table, state, *(d for d in input_states if d is not None)))


def _check_names(names: list[str]) -> None:
    seen: set[str] = set()
    for n in names:
        if n in seen:
            raise DuplicateColumn(f'column "{n}" specified more than once',
                                  hint="Give the columns distinct names with AS.")
        seen.add(n)


def _hidden_name(base: str, fields: list[Field]) -> str:
    names = {f.name for f in fields}
    name, i = base, 1
    while name in names:
        i += 1
        name = f"{base}_{i}"
    return name
