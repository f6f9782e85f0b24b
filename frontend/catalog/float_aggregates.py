"""Overflow of ``sum``, ``avg``, the variances and standard deviations of reals and doubles, as
PostgreSQL fails, in batch queries.

PostgreSQL adds with its checked arithmetic (``src/include/utils/float.h``, ``float.c``):

* ``sum`` of doubles is ``float8pl`` row by row: a running sum that turns infinite while neither it
  nor the row was is 22003 ``value out of range: overflow``; ``sum`` of reals the same in real
  arithmetic (``float4pl``: past 3.4e38).
* ``avg`` of doubles is ``float8_accum``, which keeps the sum and, by the Youngs-Cramer algorithm,
  the sum of squared deviations: either turning infinite from finite rows is 22003 (``avg`` of
  1e200 and -1e200 fails). So are ``variance``, ``var_samp``, ``var_pop``, ``stddev``,
  ``stddev_samp`` and ``stddev_pop`` of doubles (`_ACCUM`: the same transition, the same check).
  Of reals they keep doubles (``float4_accum``): they never overflow.

DuckDB answers infinity (and sums reals as doubles). Where the text shows the argument is a real or
a double (`frontend.catalog.operand_types`), the aggregate ``agg(x)`` (with its DISTINCT, FILTER and
OVER) is wrapped in a check::

    CASE WHEN NOT bool_or(isinf(x)) AND isinf(sum(x)) THEN error('...overflow') ELSE sum(x) END

where a sum of reals is tested against the least sum a real rounds to infinity (2^128 - 2^103), and
an average, a variance or a standard deviation also fails when the sum of squared deviations
(``var_pop(x) * count(x)``) is infinite. An infinite row stops the checks, as PostgreSQL's (its sum
stays infinite or NaN after it).

PostgreSQL checks each running value, in the rows' order: a sum that overflows and comes back (1e308,
1e308, -1e308) fails there, and is infinite here too (DuckDB adds in order as well); what depends on
the order (an infinite row after an overflow, an average's deviations past 1.3e154 whose total is
finite) is answered as before. An aggregate in a window's PARTITION BY or ORDER BY is left, as in
`frontend.catalog.float_overflow`, and so is one with an ORDER BY of its own.

>>> import sqlglot
>>> float_aggregates(sqlglot.parse_one("SELECT sum(x::float8) FROM t", read="risingwave")).sql("duckdb")
"SELECT CASE WHEN NOT BOOL_OR(CAST(ISINF(CAST(x AS DOUBLE)) AS BOOLEAN)) AND ISINF(SUM(CAST(x AS DOUBLE))) THEN ERROR('[rs:22003] value out of range: overflow') ELSE SUM(CAST(x AS DOUBLE)) END FROM t"
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from sqlglot import exp

from frontend.catalog.composite import failure_call
from frontend.catalog.float_overflow import in_window_spec, isinf_call
from frontend.catalog.operand_types import FLOATS, OperandTypes
from risingspark.errors import NumericValueOutOfRange

if TYPE_CHECKING:
    from frontend.catalog.rewrite import RewriteContext

_REAL_INFINITY = 2.0 ** 128 - 2.0 ** 103  # (the least sum round-to-nearest makes an infinite real)
# the aggregates whose transition is ``float8_accum`` (sum and sum of squared deviations, both checked)
_ACCUM = (exp.Avg, exp.Variance, exp.VariancePop, exp.Stddev, exp.StddevSamp, exp.StddevPop)


def float_aggregates(query: exp.Expression, ctx: RewriteContext | None = None) -> exp.Expression:
    types: OperandTypes | None = None
    for node in reversed(list(query.find_all(exp.Sum, *_ACCUM))):  # (an inner aggregate's check first)
        values = aggregate_values(node)
        if values is None or in_window_spec(node):
            continue
        types = types or OperandTypes.of(query, ctx)
        kind = types.kind(values)
        if kind not in FLOATS or (isinstance(node, _ACCUM) and kind == "real"):
            continue
        call = aggregate_call(node)
        over = _over(call, node)
        if isinstance(node, exp.Sum) and kind == "real":
            overflow: exp.Expr = exp.GTE(this=exp.Abs(this=over(node.copy())),
                                               expression=exp.Literal.number(repr(_REAL_INFINITY)))
        else:
            overflow = isinf_call(over(exp.Sum(this=node.this.copy())))
        if isinstance(node, _ACCUM):  # (float8_accum's sum of squared deviations)
            squares = exp.Mul(this=over(exp.VariancePop(this=node.this.copy())),
                              expression=over(exp.Count(this=node.this.copy())))
            overflow = exp.or_(overflow, isinf_call(squares))
        finite = exp.Not(this=over(exp.LogicalOr(this=isinf_call(values))))
        check = exp.If(this=exp.and_(finite, overflow),
                       true=failure_call(NumericValueOutOfRange("value out of range: overflow")))
        call.replace(exp.Case(ifs=[check], default=call.copy()))
    return query


def aggregate_values(node: exp.Expr) -> exp.Expression | None:
    """The aggregate's argument, under its DISTINCT; None with an ORDER BY or several arguments."""
    arg = node.this
    if isinstance(arg, exp.Distinct):
        return arg.expressions[0] if len(arg.expressions) == 1 else None
    return arg if isinstance(arg, exp.Expression) and not isinstance(arg, exp.Order) else None


def aggregate_call(node: exp.Expr) -> exp.Expr:
    """The aggregate with its FILTER and OVER: the expression around it whose value is the call's."""
    while isinstance(node.parent, exp.Filter | exp.Window) and node.parent.this is node:
        node = node.parent
    return node


def _over(call: exp.Expr, node: exp.Expr) -> Callable[[exp.Expr], exp.Expr]:
    """A function that puts an aggregate in `node`'s place in a copy of `call` (under the same FILTER
    and OVER)."""
    depth, e = 0, node
    while e is not call and e.parent is not None:
        depth, e = depth + 1, e.parent

    def over(aggregate: exp.Expr) -> exp.Expr:
        if depth == 0:
            return aggregate
        top = call.copy()
        holder = top
        for _ in range(depth - 1):
            holder = holder.this
        holder.set("this", aggregate)
        return top
    return over
