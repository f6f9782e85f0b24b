"""Overflow and underflow of ``+ - * / ^`` of reals and doubles, as PostgreSQL fails, in batch queries.

PostgreSQL checks the result of float arithmetic (``float8_pl``, ``float8_mul``, ``float8_div`` and
their ``float4`` twins in ``src/include/utils/float.h``): an infinite result of finite operands is
22003 ``value out of range: overflow`` (``1e308::float8 * 10``, ``3e38::real + 3e38::real``); a zero
product or quotient of operands that are not zero (nor an infinite divisor) is 22003 ``value out of
range: underflow`` (``1e-308::float8 * 1e-308::float8``). A sum or difference never underflows, and
an infinite operand is no overflow (``'Infinity'::float8 * 2`` is Infinity). ``a ^ b`` and
``power(a, b)`` of doubles (``dpow`` in ``src/backend/utils/adt/float.c``) overflow the same way and
underflow when the result is zero and ``a`` is not, both finite (``0.5 ^ 'Infinity'`` is 0);
its domain errors come first (`frontend.catalog.strict_functions`). DuckDB answers infinity and
zero. Division by zero stays DuckDB's own error (22012, `frontend.batch_errors`).

Where the text shows the arithmetic is of a real or a double (`frontend.catalog.operand_types`: a
cast, a catalog column, a literal with one of those...), it is wrapped in a check::

    CASE WHEN isinf(a * b) AND NOT isinf(a) AND NOT isinf(b) THEN error('...overflow')
         WHEN a * b = 0 AND a <> 0 AND b <> 0 THEN error('...underflow') ELSE a * b END

The checks read the operands as written, without the checks of their own arithmetic (so a chain of
n operations grows by n², not 3ⁿ), and only fire when those operands are finite (an operand that
overflowed fails in the ELSE, by its own check, first, as PostgreSQL evaluates it first). A divisor
of zero is NULL in the checks, so that the ELSE fails with its operands' errors or division by zero.
Arithmetic of an operand whose type the text does not show (most calls, a column of a set operation)
is left to DuckDB, and so is arithmetic in a window's PARTITION BY or ORDER BY (DuckDB refuses
``error()`` there: it is volatile) and, in a SELECT with GROUP BY, arithmetic outside an aggregate's
argument (an expression there must match a GROUP BY expression, which the checks' bare operands
would not): those overflow to infinity as before.

>>> import sqlglot
>>> float_overflow(sqlglot.parse_one("SELECT x::float8 + 1, 1 + 2", read="risingwave")).sql("duckdb")
"SELECT CASE WHEN ISINF(CAST(x AS DOUBLE) + 1) AND NOT ISINF(CAST(x AS DOUBLE)) AND NOT ISINF(1) THEN ERROR('[rs:22003] value out of range: overflow') ELSE CAST(x AS DOUBLE) + 1 END, 1 + 2"
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlglot import exp

from frontend.catalog.composite import failure_call
from frontend.catalog.operand_types import ARITHMETIC, FLOATS, OperandTypes
from risingspark.errors import NumericValueOutOfRange

if TYPE_CHECKING:
    from frontend.catalog.rewrite import RewriteContext


def float_overflow(query: exp.Expression, ctx: RewriteContext | None = None) -> exp.Expression:
    types = OperandTypes.of(query, ctx)
    nodes = [n for n in map(_expression, query.find_all(*ARITHMETIC, exp.Pow))
             if types.kind(n) in FLOATS and _checkable(n)]
    raw = {id(n): (n.this.copy(), n.expression.copy()) for n in nodes}  # (before any check is added)
    for node in reversed(nodes):  # (an operand's check first: find_all goes parents first)
        a, b = raw[id(node)]
        node.replace(exp.Case(ifs=[exp.If(this=cond, true=_error(message)) for cond, message in _checks(node, a, b)],
                              default=node.copy()))
    return query


def _checkable(node: exp.Expression) -> bool:
    """Whether a check may wrap `node`: not in a window's PARTITION BY or ORDER BY (DuckDB takes no
    volatile expression there, and ``error()`` is one), and, in a SELECT with GROUP BY, only inside
    an aggregate's argument (elsewhere an expression must match a GROUP BY expression, and the checks
    read its operands bare)."""
    if in_window_spec(node):
        return False
    parent, in_aggregate = node.parent, False
    while parent is not None and not isinstance(parent, exp.Select):
        in_aggregate = in_aggregate or isinstance(parent, exp.AggFunc)
        parent = parent.parent
    return parent is None or in_aggregate or not parent.args.get("group")


def in_window_spec(node: exp.Expr) -> bool:
    """Whether `node` is in a window's PARTITION BY or ORDER BY (of its own SELECT), where DuckDB
    takes no volatile expression, so no ``error()`` check."""
    child: exp.Expr = node
    parent = node.parent
    while parent is not None and not isinstance(parent, exp.Select):
        if isinstance(parent, exp.Window) and child is not parent.this:
            return True
        child, parent = parent, parent.parent
    return False


def _checks(node: exp.Expr, a: exp.Expression, b: exp.Expression) -> list[tuple[exp.Expr, str]]:
    """The conditions PostgreSQL fails `node`'s result on, of its operands `a` and `b` as written."""
    divisor = exp.Nullif(this=b.copy(), expression=_zero()) if isinstance(node, exp.Div) else b.copy()
    result = type(node)(this=a.copy(), expression=divisor)  # (an operand in parentheses keeps them)
    finite = [_not_inf(a)] if isinstance(node, exp.Div) else [_not_inf(a), _not_inf(b)]
    checks: list[tuple[exp.Expr, str]] = [(exp.and_(isinf_call(result), *finite), "overflow")]
    if isinstance(node, exp.Mul | exp.Div | exp.Pow):
        second = exp.NEQ(this=b.copy(), expression=_zero()) if isinstance(node, exp.Mul) else _not_inf(b)
        first = [_not_inf(a)] if isinstance(node, exp.Pow) else []  # ('Infinity' ^ -1 is 0)
        checks.append((exp.and_(exp.EQ(this=result.copy(), expression=_zero()),
                                exp.NEQ(this=a.copy(), expression=_zero()), *first, second), "underflow"))
    return checks


def _expression(e: exp.Expr) -> exp.Expression:
    assert isinstance(e, exp.Expression)
    return e


def isinf_call(e: exp.Expr) -> exp.Expression:
    """DuckDB's ``isinf(e)``."""
    return exp.Anonymous(this="isinf", expressions=[e.copy()])


def _not_inf(e: exp.Expr) -> exp.Expression:
    return exp.Not(this=isinf_call(e))


def _zero() -> exp.Expression:
    return exp.Literal.number(0)


def _error(kind: str) -> exp.Expression:
    return failure_call(NumericValueOutOfRange(f"value out of range: {kind}"))
