"""Functions whose DuckDB results differ from PostgreSQL's at the edges of their domains.

* ``substring(s, start [, count])`` / ``substr``: PostgreSQL takes the characters at positions
  ``start .. start + count - 1`` that exist (``substr('hello', -1, 3)`` is ``h``); DuckDB counts a
  negative start from the end (``o``). A negative count is 22011 in PostgreSQL. A start that is not
  a positive integer literal is clamped here as PostgreSQL clamps it.
* ``sqrt`` of a negative number, ``ln``/``log``/``log10`` of zero or a negative number, ``power``
  of zero to a negative power or of a negative number to a fractional one, and an ``exp`` past
  the double range: PostgreSQL fails (2201F, 2201E, 22003) where DuckDB answers NaN or infinity.

Each check is a ``CASE`` with DuckDB's ``error()``, whose message carries the SQLSTATE back
(`frontend.catalog.composite.udf_error`).
"""

from __future__ import annotations

from sqlglot import exp

from frontend.catalog.composite import udf_failure
from risingspark.errors import (
    InvalidArgumentForLogarithm,
    InvalidArgumentForPowerFunction,
    NumericValueOutOfRange,
    RisingSparkError,
    SubstringError,
)


def strict_functions(query: exp.Expression, ctx: object = None) -> exp.Expression:
    for node in list(query.find_all(exp.Substring, exp.Sqrt, exp.Ln, exp.Log, exp.Pow, exp.Exp)):
        out = _strict(node)
        if out is not None:
            node.replace(out)
    return query


def _error(e: RisingSparkError) -> exp.Expression:
    return exp.Anonymous(this="error", expressions=[exp.Literal.string(str(udf_failure(e)))])


def _case(checks: list[tuple[exp.Expr, RisingSparkError]], value: exp.Expression) -> exp.Expression:
    return exp.Case(ifs=[exp.If(this=cond, true=_error(err)) for cond, err in checks], default=value)


def _positive_int(e: exp.Expression | None) -> bool:
    return isinstance(e, exp.Literal) and e.is_int and int(e.name) >= 1


def _strict(node: exp.Expr) -> exp.Expression | None:
    if isinstance(node, exp.Substring):
        return _substring(node)
    x = node.this
    zero = exp.Literal.number(0)
    if isinstance(node, exp.Sqrt):
        return _case([(exp.LT(this=x.copy(), expression=zero), InvalidArgumentForPowerFunction(
            "cannot take square root of a negative number"))], node.copy())
    if isinstance(node, exp.Ln) or (isinstance(node, exp.Log) and node.expression is None):
        return _log_checks(x, node.copy())
    if isinstance(node, exp.Log):  # log(b, x)
        return _log_checks(node.expression, _log_checks(x, node.copy()))
    if isinstance(node, exp.Pow):
        y = node.expression
        return _case([(exp.and_(exp.EQ(this=x.copy(), expression=zero), exp.LT(this=y.copy(), expression=zero)),
                       InvalidArgumentForPowerFunction("zero raised to a negative power is undefined")),
                      (exp.and_(exp.LT(this=x.copy(), expression=zero),
                                exp.NEQ(this=exp.Floor(this=y.copy()), expression=y.copy())),
                       InvalidArgumentForPowerFunction(
                           "a negative number raised to a non-integer power yields a complex result"))], node.copy())
    if isinstance(node, exp.Exp):
        big = exp.GT(this=x.copy(), expression=exp.Literal.number("709.782712893384"))
        return _case([(big, NumericValueOutOfRange("value out of range: overflow"))], node.copy())
    return None


def _log_checks(x: exp.Expression, value: exp.Expression) -> exp.Expression:
    zero = exp.Literal.number(0)
    return _case([(exp.EQ(this=x.copy(), expression=zero), InvalidArgumentForLogarithm("cannot take logarithm of zero")),
                  (exp.LT(this=x.copy(), expression=zero),
                   InvalidArgumentForLogarithm("cannot take logarithm of a negative number"))], value)


def _substring(node: exp.Substring) -> exp.Expression | None:
    start, count = node.args.get("start"), node.args.get("length")
    if start is None or (_positive_int(start) and (count is None or (isinstance(count, exp.Literal) and count.is_int
                                                                      and int(count.name) >= 0))):
        return None
    one = exp.Literal.number(1)

    def clamped(e: exp.Expression) -> exp.Expression:  # e below 1 is 1 (NULL stays NULL)
        return exp.Case(ifs=[exp.If(this=exp.LT(this=e.copy(), expression=one), true=one)], default=e.copy())

    first = clamped(start)
    if count is None:
        return exp.Substring(this=node.this.copy(), start=first)
    end = clamped(exp.Add(this=exp.Paren(this=start.copy()), expression=exp.Paren(this=count.copy())))
    out = exp.Substring(this=node.this.copy(), start=first, length=exp.Sub(this=end, expression=first.copy()))
    negative = exp.LT(this=count.copy(), expression=exp.Literal.number(0))
    return _case([(negative, SubstringError("negative substring length not allowed"))], out)
