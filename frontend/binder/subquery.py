"""Scalar subqueries in WHERE and HAVING, as joins (RisingWave's subquery unnesting).

A scalar subquery is a value, so in a stream it becomes a join that brings the value to each row:

- **Uncorrelated** (``WHERE x > (SELECT avg(y) FROM t)``): the subquery must return exactly one row,
  which RisingWave proves from its plan — here, an aggregate without GROUP BY or HAVING (one row
  even over no input). A conjunct ``expr op (subquery)`` with ``<``, ``<=``, ``>``, ``>=`` is a
  dynamic filter (kind DYNAMIC: when the value moves, only the rows between the old and the new
  value are read, `compute.executor.dynamic_filter`); ``column = (subquery)`` is a semi join on the
  value (a change reads the rows of the old and of the new value). Elsewhere the subquery is cross-joined to the
  FROM (`BoundJoin` without keys: a change of the value re-reads the rows it meets) and the
  condition reads its column.
- **Correlated by equalities** (``WHERE ps.cost = (SELECT min(cost) FROM partsupp WHERE p.key =
  partkey)``): the subquery is rewritten as a grouping by its correlated columns,
  ``SELECT partkey, min(cost) FROM partsupp GROUP BY partkey``, LEFT-joined on them; a row with no
  group reads NULL, as the aggregate over no rows. Its value must be an aggregate expression whose
  value over no rows is NULL (not count: that would be 0), without GROUP BY, HAVING or LIMIT of its
  own; correlated conditions other than ``inner = outer`` fail with 0A000.
- **In HAVING** (``HAVING sum(v) > (SELECT ...)``): the block is planned without that conjunct,
  the conjunct's other side added to its output, and the comparison moves to a WHERE over the block
  (so the value joins the groups, not the rows they are made of).

A subquery used as an expression anywhere else fails with 0A000.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

from sqlglot import exp

from frontend.binder.bound import BoundFrom, BoundJoin, BoundStreamSelect, BoundSubquery, Scope
from frontend.binder.coercion import coerce, common_type, comparison_type
from frontend.binder.expression import bind_expr, strip_cast
from frontend.expr import AggCallExpr, BinaryOp, BoundExpr, Cast, InputRef, UnaryOp, walk
from risingspark.errors import FeatureNotSupported, SyntaxError_, UndefinedColumn, UndefinedTable
from risingspark.types import BOOL, TypeName

if TYPE_CHECKING:
    from frontend.binder.query import QueryBinder

VALUE = "_rw_value"
_COMPARISONS = (exp.EQ, exp.NEQ, exp.LT, exp.LTE, exp.GT, exp.GTE)


def scalar_subqueries(node: exp.Expression) -> list[exp.Subquery]:
    """The scalar subqueries in `node` (not those of IN / EXISTS, which are joins of their own, nor
    any inside another subquery, which belong to it)."""
    out: list[exp.Subquery] = []

    def visit(n: exp.Expression) -> None:
        if isinstance(n, exp.Subquery):
            out.append(n)
            return
        if isinstance(n, exp.Exists | exp.Select):
            return
        for child in n.iter_expressions():
            if isinstance(n, exp.In) and child is n.args.get("query"):
                continue
            visit(child)

    visit(node)
    return out


@dataclass
class Unnested:
    source: BoundFrom
    scope: Scope
    condition: exp.Expression | None  # the conjunct over the subqueries' columns (None: applied already)


def unnest_scalars(binder: QueryBinder, c: exp.Expression, src: BoundFrom, scope: Scope) -> Unnested:
    """Joins the scalar subqueries of WHERE conjunct `c` to `src`; the conjunct reads their values."""
    dynamic = _dynamic_filter(binder, c, src, scope)
    if dynamic is not None:
        return Unnested(dynamic, scope, None)
    c = c.copy()
    for sub in scalar_subqueries(c):
        query = sub.this
        if not isinstance(query, exp.Select):
            raise FeatureNotSupported("a scalar subquery over a set operation in a materialized view is not "
                                      "supported yet")
        alias = binder.alias("__sq")
        try:
            bound = binder.query(query)
        except (UndefinedColumn, UndefinedTable):
            src, right = _correlated(binder, query, src, scope, alias)
        else:
            _check_one_row(bound)
            right = binder._subquery(bound, alias, len(src.fields), True,
                                     exp.TableAlias(this=exp.to_identifier(alias),
                                                    columns=[exp.to_identifier(VALUE)]))
            src = BoundJoin(src, right, "INNER", (), (), None)
        scope = scope.with_item(right)
        sub.replace(exp.column(VALUE, table=alias))
    return Unnested(src, scope, c)


_FLIP: dict[type, str] = {exp.LT: ">", exp.LTE: ">=", exp.GT: "<", exp.GTE: "<=", exp.EQ: "="}
_OPS: dict[type, str] = {exp.LT: "<", exp.LTE: "<=", exp.GT: ">", exp.GTE: ">=", exp.EQ: "="}


def _dynamic_filter(binder: QueryBinder, c: exp.Expression, src: BoundFrom, scope: Scope) -> BoundFrom | None:
    """``expr op (one-row subquery)`` with a range comparison, as a dynamic filter (`BoundJoin` of
    kind DYNAMIC: the residual compares the left side's expression with the subquery's value); with
    ``=`` and a column, a semi join on the value; None for any other shape."""
    inner = c.this if isinstance(c, exp.Paren) else c
    if not isinstance(inner, exp.LT | exp.LTE | exp.GT | exp.GTE | exp.EQ):
        return None
    left, right = cast(exp.Expression, inner.left), cast(exp.Expression, inner.right)
    op = _OPS[type(inner)]
    if isinstance(left, exp.Subquery) and not isinstance(right, exp.Subquery):
        left, right, op = right, left, _FLIP[type(inner)]
    if not isinstance(right, exp.Subquery) or scalar_subqueries(left) or not isinstance(right.this, exp.Select):
        return None
    try:
        bound = binder.query(right.this)
    except (UndefinedColumn, UndefinedTable):
        return None  # correlated: a join on its correlation
    _check_one_row(bound)
    alias = binder.alias("__sq")
    item = binder._subquery(bound, alias, len(src.fields), True,
                            exp.TableAlias(this=exp.to_identifier(alias), columns=[exp.to_identifier(VALUE)]))
    value = InputRef(item.offset, item.fields[0].name, item.fields[0].type)
    key, bound_value, compared = common_type(bind_expr(left, scope, allow_agg=False), value, op)
    if compared.name in (TypeName.REAL, TypeName.DOUBLE):
        return None  # NaN orders above every number in PostgreSQL: the filter over Spark's comparison has it
    column = strip_cast(key)
    if op == "=":
        # a join on the value: a change of it reads the rows of the old and of the new value only
        if not isinstance(column, InputRef) or not (column.type.name is value.type.name or
                                                    (column.type.is_numeric and value.type.is_numeric)):
            return None
        return BoundJoin(src, item, "SEMI", (column,), (value,), None)
    return BoundJoin(src, item, "DYNAMIC", (), (), BinaryOp(op, key, bound_value, BOOL))


def _check_one_row(q: object) -> None:
    if not isinstance(q, BoundStreamSelect):
        raise FeatureNotSupported("a scalar subquery over a set operation in a materialized view is not supported yet")
    if len(q.fields) != 1:
        raise SyntaxError_("subquery must return only one column")
    if q.group_by != () or q.having is not None or q.limit is not None or q.row_number is not None:
        raise FeatureNotSupported("a scalar subquery in a materialized view must return exactly one row: an "
                                  "aggregate without GROUP BY or HAVING (RisingWave: the subquery might produce "
                                  "more than one row)")


def _correlated(binder: QueryBinder, sub: exp.Select, src: BoundFrom, outer: Scope,
                alias: str) -> tuple[BoundFrom, BoundSubquery]:
    """A scalar subquery correlated by equalities, as a grouping LEFT-joined on them."""
    for arg in ("group", "having", "limit", "offset", "distinct", "with", "with_", "order"):
        if sub.args.get(arg):
            raise FeatureNotSupported(f"a correlated scalar subquery with {arg.upper()} in a materialized view is "
                                      f"not supported yet")
    if len(sub.expressions) != 1:
        raise SyntaxError_("subquery must return only one column")
    _, inner, _ = binder.from_(sub, None)
    local: list[exp.Expression] = []
    keys: list[tuple[InputRef, exp.Expression]] = []  # (outer column, inner column's AST)
    where = sub.args.get("where")
    from frontend.binder.query import conjuncts

    for c in conjuncts(where.this) if where else []:
        try:
            coerce(bind_expr(c, inner, allow_agg=False), BOOL, "WHERE")
            local.append(c)
            continue
        except (UndefinedColumn, UndefinedTable):
            pass
        pair = _correlation(c, inner, outer)
        if pair is None:
            raise FeatureNotSupported("a correlated subquery in a materialized view may refer to the outer query "
                                      "only in equalities (inner.col = outer.col) joined by AND")
        keys.append(pair)
    value = sub.expressions[0]
    value = value.this if isinstance(value, exp.Alias) else value
    bound_value = bind_expr(value, inner, allow_agg=True)
    aggs = [x for x in walk(bound_value) if isinstance(x, AggCallExpr)]
    if not aggs:
        raise FeatureNotSupported("a correlated scalar subquery in a materialized view must compute an aggregate")
    if not _null_over_no_rows(bound_value):
        raise FeatureNotSupported(f"a correlated scalar subquery whose value over no rows is not NULL "
                                  f"({bound_value.display()}) in a materialized view is not supported yet")
    grouped = sub.copy()
    grouped.set("where", exp.Where(this=exp.and_(*local)) if local else None)
    grouped.set("expressions", [exp.alias_(k.copy(), f"_rw_k{i}") for i, (_, k) in enumerate(keys)]
                + [exp.alias_(value.copy(), VALUE)])
    grouped.set("group", exp.Group(expressions=[k.copy() for _, k in keys]))
    q = binder.query(grouped)
    right = binder._subquery(q, alias, len(src.fields), True, None)
    rkeys = tuple(InputRef(right.offset + i, right.fields[i].name, right.fields[i].type) for i in range(len(keys)))
    return BoundJoin(src, right, "LEFT", tuple(o for o, _ in keys), rkeys, None), right


_STRICT_BINARY = {"+", "-", "*", "/", "%", "=", "<>", "<", ">", "<=", ">=", "||"}


def _null_over_no_rows(e: BoundExpr) -> bool:
    """Whether `e` is surely NULL when its group has no rows: the LEFT join that stands for the
    subquery gives NULL there. An aggregate other than count is NULL over no rows, and so is a strict
    operator (arithmetic, comparison, cast, negation) of such a value; anything else (count, coalesce,
    CASE, a constant) may not be."""
    if isinstance(e, AggCallExpr):
        return e.kind not in ("count", "count_star")
    if isinstance(e, BinaryOp) and e.op in _STRICT_BINARY:
        return _null_over_no_rows(e.left) or _null_over_no_rows(e.right)
    if isinstance(e, UnaryOp) and e.op == "NEG" or isinstance(e, Cast):
        return _null_over_no_rows(e.children()[0])
    return False


def _correlation(c: exp.Expression, inner: Scope, outer: Scope) -> tuple[InputRef, exp.Expression] | None:
    """``inner.col = outer.col`` (either way round) as (outer column, the inner column's AST)."""
    if not isinstance(c, exp.EQ) or not isinstance(c.left, exp.Column) or not isinstance(c.right, exp.Column):
        return None
    for a, b in ((c.left, c.right), (c.right, c.left)):
        try:
            inner.column(a)
        except (UndefinedColumn, UndefinedTable):
            continue
        try:
            o = outer.column(b)
        except (UndefinedColumn, UndefinedTable):
            return None
        return (o, a) if isinstance(o, InputRef) else None  # (a FULL join's merged column is no column)
    return None


def having_subqueries(query: exp.Select) -> tuple[exp.Select, list[exp.Expression]] | None:
    """For a block whose HAVING compares with scalar subqueries: the block without those conjuncts,
    their other sides added to its select list as ``_rw_having_<i>``, and the comparisons over those
    columns (to go in a WHERE over the block); None when HAVING has no scalar subquery."""
    having = query.args.get("having")
    if having is None:
        return None
    from frontend.binder.query import conjuncts

    parts = conjuncts(having.this)
    moved = [p for p in parts if scalar_subqueries(p)]
    if not moved:
        return None
    for arg in ("limit", "offset", "distinct"):
        if query.args.get(arg):
            raise FeatureNotSupported(f"{arg.upper()} together with a scalar subquery in HAVING in a materialized "
                                      f"view is not supported yet")
    inner = query.copy()
    kept = [p for p in parts if p not in moved]
    inner.set("having", exp.Having(this=exp.and_(*[k.copy() for k in kept])) if kept else None)
    inner.set("order", None)
    conditions: list[exp.Expression] = []
    for i, p in enumerate(moved):
        p = p.this if isinstance(p, exp.Paren) else p
        if not isinstance(p, _COMPARISONS):
            raise FeatureNotSupported("a scalar subquery in HAVING in a materialized view is supported only as a "
                                      "side of a comparison joined by AND")
        sides: list[exp.Expression] = [cast(exp.Expression, p.left), cast(exp.Expression, p.right)]
        plain = [s for s in sides if not scalar_subqueries(s)]
        if len(plain) != 1:
            raise FeatureNotSupported("a scalar subquery in HAVING in a materialized view is supported only as a "
                                      "side of a comparison joined by AND")
        name = f"_rw_having_{i}"
        inner.expressions.append(exp.alias_(plain[0].copy(), name))
        cond = p.copy()
        (cond.left if plain[0] is p.left else cond.right).replace(exp.column(name))
        conditions.append(cond)
    return inner, conditions


def singleton_dynamic_filter(src: BoundFrom, used: list[BoundExpr]) -> BoundFrom:
    """``FROM t, (SELECT max(x) AS m FROM s) q WHERE t.v > q.m``: a cross join with a one-row side
    whose column only a range comparison reads (`used`: every expression of the block outside the
    FROM) is the dynamic filter RisingWave plans for it. Only the last join of the FROM qualifies (a
    dynamic filter outputs its left side's columns: a later item's columns would move)."""
    if not isinstance(src, BoundJoin) or src.kind != "INNER" or src.left_keys or src.residual is None \
            or not isinstance(src.right, BoundSubquery):
        return src
    q = src.right.query
    if not isinstance(q, BoundStreamSelect) or len(q.fields) != 1 or q.group_by != () or q.having is not None \
            or q.limit is not None:
        return src
    width = len(src.left.fields)
    value = InputRef(width, src.right.fields[0].name, src.right.fields[0].type)

    def reads_value(e: BoundExpr) -> bool:
        return any(isinstance(x, InputRef) and x.index >= width for x in walk(e))

    if any(reads_value(e) for e in used):
        return src
    parts = _conjuncts_of(src.residual)
    ranges = [p for p in parts if isinstance(p, BinaryOp) and p.op in _RANGE_FLIP and reads_value(p)]
    if len(ranges) != 1 or any(reads_value(p) for p in parts if p is not ranges[0]):
        return src
    cmp = ranges[0]
    assert isinstance(cmp, BinaryOp)
    if strip_cast(cmp.right) == value and not reads_value(cmp.left):
        condition = cmp
    elif strip_cast(cmp.left) == value and not reads_value(cmp.right):
        condition = BinaryOp(_RANGE_FLIP[cmp.op], cmp.right, cmp.left, BOOL)
    else:
        return src
    if len(parts) > 1:  # (other conditions at this join: the cross join stays)
        return src
    if comparison_type(condition.left.type, condition.right.type).name in (TypeName.REAL, TypeName.DOUBLE):
        return src  # NaN orders above every number in PostgreSQL, as Spark's comparison has it
    return BoundJoin(src.left, src.right, "DYNAMIC", (), (), condition)


_RANGE_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}


def _conjuncts_of(e: BoundExpr) -> list[BoundExpr]:
    if isinstance(e, BinaryOp) and e.op == "AND":
        return _conjuncts_of(e.left) + _conjuncts_of(e.right)
    return [e]
