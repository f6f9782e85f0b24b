"""``GROUP BY GROUPING SETS / ROLLUP / CUBE`` with ``grouping()``, and ``SELECT DISTINCT ON``, as
rewrites into queries the stream planner maintains already.

**Grouping sets.** PostgreSQL's result is the union of one grouping per set, where a grouping column
outside the set reads NULL and ``grouping(a, b, ...)`` is a bit mask (leftmost argument the highest
bit) of the arguments outside the set. RisingWave plans it with an Expand operator; here each set is a
branch of a UNION ALL: the block grouped by the set's expressions, the other grouping expressions
replaced by typed NULLs (outside aggregate calls), ``grouping(...)`` by its constant. ``ROLLUP(a, b)``
is the sets ``(a, b), (a), ()``; ``CUBE(a, b)`` every subset; items of a GROUP BY list multiply.
An empty set is a grouping without keys: one row, also over no input (as PostgreSQL).

**DISTINCT ON (e, ...)** keeps the first row of each group of ``e`` in the ORDER BY order: a group
TopN of one row, ``ROW_NUMBER() OVER (PARTITION BY e ORDER BY <ORDER BY>)`` = 1. Without ORDER BY,
PostgreSQL keeps an arbitrary row of each group; so does this (the numbering breaks ties by the row's
key).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import TYPE_CHECKING, cast

from sqlglot import exp

from frontend.binder.expression import bind_expr, output_name
from frontend.binder.relation import ident
from risingspark.errors import FeatureNotSupported, InvalidColumnReference

if TYPE_CHECKING:
    from frontend.binder.bound import Scope
    from frontend.binder.query import QueryBinder

MAX_SETS = 64


def _expressions(node: exp.Expression) -> list[exp.Expression]:
    """The expressions of one element of a set: ``(a, b)`` or ``a``."""
    if isinstance(node, exp.Tuple):
        return list(node.expressions)
    if isinstance(node, exp.Paren):
        return _expressions(node.this)
    return [node]


def _sets_of(node: exp.Expression) -> list[list[exp.Expression]]:
    """The grouping sets one GROUP BY element stands for."""
    if isinstance(node, exp.Rollup):
        items = [_expressions(e) for e in node.expressions]
        return [[x for item in items[:n] for x in item] for n in range(len(items), -1, -1)]
    if isinstance(node, exp.Cube):
        items = [_expressions(e) for e in node.expressions]
        return [[x for i, item in enumerate(items) if mask >> (len(items) - 1 - i) & 1 for x in item]
                for mask in range(2 ** len(items) - 1, -1, -1)]
    if isinstance(node, exp.GroupingSets):
        out: list[list[exp.Expression]] = []
        for e in node.expressions:
            if isinstance(e, exp.Rollup | exp.Cube | exp.GroupingSets):
                out += _sets_of(e)
            else:
                out.append(_expressions(e))
        return out
    return [[node]]


def has_grouping_sets(query: exp.Select) -> bool:
    group = query.args.get("group")
    return group is not None and any(isinstance(e, exp.Rollup | exp.Cube | exp.GroupingSets)
                                     for e in group.expressions)


def expand_grouping_sets(query: exp.Select, scope: Scope) -> exp.Expression:
    """The UNION ALL of one grouping per set (see the module doc). `scope`: the block's FROM, to type
    the NULLs of the expressions a set leaves out."""
    for arg in ("limit", "offset", "distinct"):
        if query.args.get(arg):
            raise FeatureNotSupported(f"{arg.upper()} together with GROUPING SETS, ROLLUP or CUBE in a materialized "
                                      f"view is not supported yet")
    sets: list[list[exp.Expression]] = [[]]
    for element in query.args["group"].expressions:
        sets = [a + b for a, b in itertools.product(sets, _sets_of(element))]
        if len(sets) > MAX_SETS:
            raise FeatureNotSupported(f"more than {MAX_SETS} grouping sets in a materialized view")
    every: list[exp.Expression] = []
    for s in sets:
        for e in s:
            if isinstance(e, exp.Literal) and not e.is_string:
                raise FeatureNotSupported("GROUP BY positions inside GROUPING SETS, ROLLUP or CUBE are not supported; "
                                          "name the expressions")
            if e not in every:
                every.append(e)
    types = {i: exp.DataType.build(bind_expr(e, scope, allow_agg=False).type.display(), dialect="postgres")
             for i, e in enumerate(every)}
    branches = []
    for s in sets:
        missing = [i for i, e in enumerate(every) if e not in s]

        def replace(node: exp.Expression, s: list[exp.Expression] = s, missing: list[int] = missing) -> exp.Expression:
            return _replace_outside_aggregates(node, lambda n: _in_set(n, s, every, missing, types))

        branch = query.copy()
        branch.set("group", exp.Group(expressions=[e.copy() for e in s]))
        branch.set("order", None)
        branch.set("expressions", [_named(replace(item.copy()), item) for item in query.expressions])
        if query.args.get("having"):
            branch.set("having", exp.Having(this=replace(query.args["having"].this.copy())))
        branches.append(branch)
    union: exp.Expression = branches[0]
    for b in branches[1:]:
        union = exp.union(union, b, distinct=False)
    return union


def _named(new: exp.Expression, old: exp.Expression) -> exp.Expression:
    """`new` under the output name `old` had."""
    if isinstance(old, exp.Alias | exp.Star) or (isinstance(old, exp.Column) and isinstance(old.this, exp.Star)):
        return new
    return cast(exp.Expression, exp.alias_(new, output_name(old), quoted=True))


def _in_set(node: exp.Expression, s: list[exp.Expression], every: list[exp.Expression], missing: list[int],
            types: dict[int, exp.DataType]) -> exp.Expression | None:
    """The replacement of `node` in the branch of set `s` (None: keep it)."""
    if isinstance(node, exp.Grouping):
        mask = 0
        for arg in node.expressions:
            if arg not in every:
                raise FeatureNotSupported("arguments to GROUPING must be grouping expressions of the associated query "
                                          "level")
            mask = mask << 1 | (1 if arg not in s else 0)
        return exp.Literal.number(mask)
    for i in missing:
        if node == every[i]:
            return exp.Cast(this=exp.Null(), to=types[i].copy())
    return None


def _replace_outside_aggregates(node: exp.Expression,
                                fn: Callable[[exp.Expression], exp.Expression | None]) -> exp.Expression:
    if isinstance(node, exp.AggFunc) and not isinstance(node, exp.Grouping):
        return node
    if isinstance(node, exp.Filter | exp.WithinGroup) and isinstance(node.this, exp.AggFunc):
        return node  # an aggregate's FILTER (WHERE ...) reads the input rows too
    new = fn(node)
    if new is not None:
        return new
    for key, value in list(node.args.items()):
        if isinstance(value, exp.Expression):
            node.set(key, _replace_outside_aggregates(value, fn))
        elif isinstance(value, list):
            node.set(key, [_replace_outside_aggregates(v, fn) if isinstance(v, exp.Expression) else v for v in value])
    return node


def replace_grouping_calls(query: exp.Select) -> exp.Select:
    """``grouping(...)`` with a plain GROUP BY: every argument is grouped, so it is 0."""
    if query.find(exp.Grouping) is None:
        return query
    group = query.args.get("group")
    keys = list(group.expressions) if group is not None else []
    q = query.copy()
    for g in list(q.find_all(exp.Grouping)):
        if any(a not in keys for a in g.expressions):
            raise FeatureNotSupported("arguments to GROUPING must be grouping expressions of the associated query level")
        g.replace(exp.Literal.number(0))
    return q


def distinct_on(binder: QueryBinder, query: exp.Select, outer: Scope | None) -> exp.Select:
    """``SELECT DISTINCT ON (e) ...`` as a TopN of one row per ``e`` (see the module doc)."""
    on = query.args["distinct"].args["on"]
    keys = list(on.expressions) if isinstance(on, exp.Tuple) else [on]
    for arg in ("group", "having", "limit", "offset"):
        if query.args.get(arg):
            raise FeatureNotSupported(f"DISTINCT ON together with {arg.upper()} in a materialized view is not "
                                      f"supported yet; put the grouping in a subquery")
    aliases = {ident(e.args["alias"]): e.this for e in query.expressions if isinstance(e, exp.Alias)}

    def from_columns(e: exp.Expression, clause: str) -> exp.Expression:
        """An ORDER BY / DISTINCT ON item naming an output column, as its expression."""
        if isinstance(e, exp.Column) and not e.args.get("table") and ident(e.this) in aliases:
            return aliases[ident(e.this)].copy()
        if isinstance(e, exp.Literal) and not e.is_string and str(e.this).isdigit():
            position = int(e.this)
            if not 1 <= position <= len(query.expressions):
                raise InvalidColumnReference(f"{clause} position {position} is not in select list")
            item = query.expressions[position - 1]
            return (item.this if isinstance(item, exp.Alias) else item).copy()
        return e.copy()

    order = query.args.get("order")
    ordered = [exp.Ordered(this=from_columns(o.this, "ORDER BY"), desc=o.args.get("desc"),
                           nulls_first=o.args.get("nulls_first"))
               for o in order.expressions] if order else [exp.Ordered(this=from_columns(k, "DISTINCT ON"))
                                                          for k in keys]
    inner = query.copy()
    inner.set("distinct", None)
    inner.set("order", None)
    rn = exp.Window(this=exp.RowNumber(), partition_by=[from_columns(k, "DISTINCT ON") for k in keys],
                    order=exp.Order(expressions=ordered))
    names = [f.name for f in binder.select(inner, outer).fields]
    inner.set("expressions", [*inner.expressions, exp.alias_(rn, "_rw_first")])
    cols = [f"_rw_c{i}" for i in range(len(names))]
    return exp.select(*[exp.alias_(exp.column(c), n, quoted=True) for c, n in zip(cols, names, strict=True)]) \
        .from_(exp.Subquery(this=inner, alias=exp.TableAlias(this=exp.to_identifier("_rw_distinct_on"),
                                                             columns=[exp.to_identifier(c) for c in
                                                                      [*cols, "_rw_first"]]))) \
        .where(exp.EQ(this=exp.column("_rw_first"), expression=exp.Literal.number(1)))
