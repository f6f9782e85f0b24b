"""Functions whose DuckDB results differ from PostgreSQL's at the edges of their domains.

* ``substring(s, start [, count])`` / ``substr``: PostgreSQL takes the characters at positions
  ``start .. start + count - 1`` that exist (``substr('hello', -1, 3)`` is ``h``); DuckDB counts a
  negative start from the end (``o``). A negative count is 22011 in PostgreSQL. A start that is not
  a positive integer literal is clamped here as PostgreSQL clamps it. A quoted literal as the start
  is PostgreSQL's pattern form (it resolves an unknown argument there to text): ``substring(s,
  'a(.)')`` is what the POSIX regular expression's first group matched (or the whole match without
  groups), NULL without a match; DuckDB read it as a position. With a count, a quoted start is an
  integer when the count is not quoted (``substring(s, '2', 3)``), the SQL regular expression form
  when it is (0A000).
* ``sqrt`` of a negative number, ``ln``/``log``/``log10`` of zero or a negative number, ``power``
  of zero to a negative power or of a negative number to a fractional one, and an ``exp`` past
  the double range: PostgreSQL fails (2201F, 2201E, 22003) where DuckDB answers NaN or infinity.

Each check is a ``CASE`` with DuckDB's ``error()``, whose message carries the SQLSTATE back
(`frontend.catalog.composite.udf_error`).
"""

from __future__ import annotations

from sqlglot import exp

from frontend.binder.strings import mandatory_groups
from frontend.catalog.composite import failure_call
from frontend.dialect import PG_NAME
from risingspark.errors import (
    FeatureNotSupported,
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


def _case(checks: list[tuple[exp.Expr, RisingSparkError]], value: exp.Expression) -> exp.Expression:
    return exp.Case(ifs=[exp.If(this=cond, true=failure_call(err)) for cond, err in checks], default=value)


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


_TEXT_TYPES = (exp.DataType.Type.TEXT, exp.DataType.Type.VARCHAR)


def _substring(node: exp.Substring) -> exp.Expression | None:
    start, count = node.args.get("start"), node.args.get("length")
    if isinstance(start, exp.Cast) and isinstance(start.this, exp.Literal) and start.this.is_string and \
            start.to.this in _TEXT_TYPES and count is None:
        start = start.this  # (a pattern written 'a(.)'::text)
    if isinstance(start, exp.Literal) and start.is_string and str(node.meta.get(PG_NAME) or "substring").lower() \
            == "substring":
        if count is None:
            return _pattern_substring(node.this, start.name)
        if isinstance(count, exp.Literal) and count.is_string:
            raise FeatureNotSupported("substring with a SQL regular expression and an escape character is not "
                                      "supported")
        start = exp.Cast(this=start.copy(), to=exp.DataType.build("INT"))
        node = exp.Substring(this=node.this.copy(), start=start, length=count.copy())
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


def _pattern_substring(s: exp.Expression, pattern: str) -> exp.Expression:
    """``substring(s FROM 'pattern')``: what the first capture group matched, or the whole match
    without groups; NULL without a match (DuckDB's ``regexp_extract`` gives ``''``)."""
    group = 1 if mandatory_groups(pattern, "substring of a pattern") else 0
    literal = exp.Literal.string(pattern)
    matches = exp.Anonymous(this="regexp_matches", expressions=[s.copy(), literal])
    extract = exp.Anonymous(this="regexp_extract", expressions=[s.copy(), literal.copy(), exp.Literal.number(group)])
    return exp.Case(ifs=[exp.If(this=matches, true=extract)])
