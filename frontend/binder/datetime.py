"""Date, timestamp and interval arithmetic and comparison, with PostgreSQL's operators and types.

The operators PostgreSQL defines (``pg_operator``) and what they return:

==========================================  =================  ======================================
operands                                     result             Spark SQL (session time zone UTC)
==========================================  =================  ======================================
date ± integer, integer + date               date               ``try_add`` / ``try_subtract``
date - date                                  integer (days)     ``datediff``
timestamp[tz] ± interval, interval + ts      the timestamp's    ``try_add(ts, make_interval(...))``
date ± interval, interval + date             timestamp          the date at midnight, then as above
timestamp[tz] - timestamp[tz], with dates    interval           microseconds apart, split into days
interval ± interval, - interval              interval           field by field
interval <op> interval                       boolean            by span (months as 30 days)
==========================================  =================  ======================================

Adding an interval adds its months first (a day past the end of the month clamps to its last day:
Jan 31 + 1 month = Feb 29 in 2024), then its days, then its microseconds; subtracting adds the
negated interval (Mar 31 - 1 month = Feb 29). Spark's ``timestamp + make_interval(...)`` does the
same, in that order. A difference of timestamps is ``days`` whole days and the rest in microseconds,
both with the difference's sign (PostgreSQL's ``interval_justify_hours``): ``'1 day 01:00:00'``,
``'-1 days -01:00:00'``.

An interval value is the struct of `risingspark.interval`; an expression giving one renders as
``named_struct(...)``, NULL when any field is (an overflow, as any failing streaming expression).
A date compares with a timestamp as the timestamp of its midnight, which Spark does by itself.

>>> from risingspark.types import DATE, INT4
>>> from frontend.expr import InputRef, Literal
>>> arith("+", InputRef(0, "d", DATE), Literal(1, INT4)).to_spark()
'(try_add(`d`, CAST(1 AS INT)))'
"""

from __future__ import annotations

from sqlglot import exp

from frontend.binder.coercion import as_literal, common_type, is_unknown_literal
from frontend.expr import BinaryOp, BoundExpr, Cast, Literal, SparkCall
from risingspark import interval
from risingspark.errors import FeatureNotSupported, UndefinedFunction
from risingspark.interval import Interval
from risingspark.types import BOOL, INT4, INTERVAL, TIMESTAMP, DataType, TypeName

TIMES = (TypeName.DATE, TypeName.TIMESTAMP, TypeName.TIMESTAMPTZ)
_STAMPS = (TypeName.TIMESTAMP, TypeName.TIMESTAMPTZ)
_INT4_OPERANDS = (TypeName.SMALLINT, TypeName.INT)


def interval_literal(node: exp.Interval) -> Literal:
    """``INTERVAL '1 day 2 hours'``, ``INTERVAL '71' DAY`` as a constant."""
    if not isinstance(node.this, exp.Literal):
        raise FeatureNotSupported("INTERVAL with a value that is not a constant string is not supported")
    unit = node.args.get("unit")
    if isinstance(unit, exp.IntervalSpan):
        raise FeatureNotSupported(f"interval qualifier {unit.sql(dialect='postgres')} is not supported")
    return Literal(interval.parse(str(node.this.this), unit.name if unit is not None else None), INTERVAL)


def to_interval(e: BoundExpr) -> BoundExpr:
    """An unknown-typed literal (``'1 hour'``) read as an interval; other expressions unchanged."""
    if is_unknown_literal(e):
        assert isinstance(e, Literal)
        return Literal(interval.parse(str(e.value)), INTERVAL)
    if isinstance(e, Literal) and e.value is None:
        return Literal(None, INTERVAL)
    return e


def involves_datetime(a: BoundExpr, b: BoundExpr) -> bool:
    return a.type.name in (*TIMES, TypeName.INTERVAL) or b.type.name in (*TIMES, TypeName.INTERVAL)


def arith(op: str, a: BoundExpr, b: BoundExpr) -> BoundExpr:
    """``a op b`` where either side is a date, a timestamp or an interval."""
    if op not in ("+", "-"):
        _no_operator(a, op, b, "interval arithmetic other than + and -" if INTERVAL in (a.type, b.type) else None)
    # an unknown literal takes the other side's type, as PostgreSQL resolves it
    if is_unknown_literal(a) or is_unknown_literal(b):
        if a.type.name is TypeName.INTERVAL or b.type.name is TypeName.INTERVAL:
            a, b = to_interval(a), to_interval(b)
        else:
            a, b, _ = common_type(a, b, op)
    ta, tb = a.type.name, b.type.name
    if op == "+" and tb in TIMES and ta is not TypeName.INTERVAL and ta not in TIMES:
        a, b, ta, tb = b, a, tb, ta  # integer + date
    if op == "+" and ta is TypeName.INTERVAL and tb in TIMES:
        a, b, ta, tb = b, a, tb, ta  # interval + timestamp
    if ta is TypeName.DATE and tb in _INT4_OPERANDS:
        fn = "try_add" if op == "+" else "try_subtract"
        return SparkCall(f"date {op} integer", (a, b), a.type, fn + "({0}, {1})")
    if ta is TypeName.DATE and tb is TypeName.DATE and op == "-":
        return SparkCall("date - date", (a, b), INT4, "datediff({0}, {1})")
    if ta in TIMES and tb is TypeName.INTERVAL:
        ts = Cast(a, TIMESTAMP) if ta is TypeName.DATE else a
        return add_interval(ts, b if op == "+" else negate(b))
    if ta in TIMES and tb in TIMES and op == "-":
        return SparkCall("timestamp - timestamp", (a, b), INTERVAL, _struct(
            "0", f"CAST(({_DIFF}) DIV {interval.USECS_PER_DAY} AS INT)", f"({_DIFF}) % {interval.USECS_PER_DAY}"))
    if ta is TypeName.INTERVAL and tb is TypeName.INTERVAL:
        fn = "try_add" if op == "+" else "try_subtract"
        return SparkCall(f"interval {op} interval", (a, b), INTERVAL,
                         _struct(*(f"{fn}({{0}}.{f}, {{1}}.{f})" for f in interval.FIELDS)))
    return _no_operator(a, op, b)


# microseconds from {1} to {0}
_DIFF = "try_subtract(unix_micros(CAST({0} AS TIMESTAMP)), unix_micros(CAST({1} AS TIMESTAMP)))"


def _struct(months: str, days: str, usecs: str) -> str:
    """A Spark template of an interval struct from three field templates; NULL when one is."""
    fields = (months, days, usecs)
    null = " OR ".join(f"({f}) IS NULL" for f in fields)
    body = ", ".join(f"'{name}', {f}" for name, f in zip(interval.FIELDS, fields, strict=True))
    return f"CASE WHEN {null} THEN NULL ELSE named_struct({body}) END"


def negate(e: BoundExpr) -> BoundExpr:
    """``- interval``."""
    if isinstance(e, Literal):
        return Literal(None if e.value is None else -e.value, INTERVAL)
    return SparkCall("-", (e,), INTERVAL, _struct(*(f"try_subtract(0, {{0}}.{f})" for f in interval.FIELDS)))


def add_interval(ts: BoundExpr, iv: BoundExpr) -> BoundExpr:
    """``ts + iv`` for a timestamp[tz]: months, then days, then microseconds (as hours and the
    seconds left, which fit ``make_interval``'s arguments); NULL on overflow."""
    if isinstance(iv, Literal) and isinstance(iv.value, Interval):
        v = iv.value
        sign = "-" if v.usecs < 0 else ""
        hours, rest = divmod(abs(v.usecs), interval.USECS_PER_HOUR)
        secs = f"{sign}{rest // 1_000_000}.{rest % 1_000_000:06d}"
        made = f"make_interval(0, {v.months}, 0, {v.days}, {sign}{hours}, 0, CAST({secs} AS DECIMAL(18, 6)))"
        return SparkCall("+", (ts, iv), ts.type, f"try_add({{0}}, {made})")
    made = ("make_interval(0, {1}.months, 0, {1}.days, "
            f"CAST({{1}}.usecs DIV {interval.USECS_PER_HOUR} AS INT), 0, "
            f"CAST({{1}}.usecs % {interval.USECS_PER_HOUR} AS DECIMAL(18, 6)) / 1000000)")
    return SparkCall("+", (ts, iv), ts.type, f"try_add({{0}}, {made})")


_SPAN = (f"(CAST({{x}}.months AS DECIMAL(38, 0)) * {interval.DAYS_PER_MONTH * interval.USECS_PER_DAY} + "
         f"CAST({{x}}.days AS DECIMAL(38, 0)) * {interval.USECS_PER_DAY} + {{x}}.usecs)")


def compare(op: str, a: BoundExpr, b: BoundExpr) -> BoundExpr:
    """``a op b`` (=, <>, <, <=, >, >=, IS [NOT] DISTINCT FROM) with PostgreSQL's operand types;
    intervals compare by span."""
    if a.type.name is TypeName.INTERVAL or b.type.name is TypeName.INTERVAL:
        a, b = to_interval(a), to_interval(b)
        if a.type != b.type:
            _no_operator(a, op, b)
        spark_op = {"IS DISTINCT FROM": "<=>", "IS NOT DISTINCT FROM": "<=>"}.get(op, op)
        template = f"{_SPAN.format(x='{0}')} {spark_op} {_SPAN.format(x='{1}')}"
        if op == "IS DISTINCT FROM":
            template = f"NOT ({template})"
        return SparkCall(op, (a, b), BOOL, template)
    a, b, _ = common_type(a, b, op)
    return BinaryOp(op, a, b, BOOL)


def cast_interval(e: BoundExpr, target: DataType) -> BoundExpr:
    """``CAST(x AS interval)`` and casts of intervals: only a constant string converts here."""
    if target.name is TypeName.INTERVAL:
        if e.type.name is TypeName.INTERVAL:
            return e
        e = as_literal(e)  # ('1 day'::text: a string constant too)
        if is_unknown_literal(e) or (isinstance(e, Literal) and e.value is None):
            return to_interval(e)
        raise FeatureNotSupported(f"casting {e.type.display()} to interval in a materialized view is not supported")
    raise FeatureNotSupported(f"casting interval to {target.display()} in a materialized view is not supported yet")


def unary_minus(e: BoundExpr) -> BoundExpr | None:
    if e.type.name is TypeName.INTERVAL:
        return negate(e)
    if e.type.name in TIMES:
        _no_operator(None, "-", e)
    return None


def _no_operator(a: BoundExpr | None, op: str, b: BoundExpr, unsupported: str | None = None) -> BoundExpr:
    if unsupported is not None:
        raise FeatureNotSupported(f"{unsupported} ({a.type.display() if a else ''} {op} {b.type.display()}) "
                                  f"is not supported in a materialized view yet")
    left = f"{a.type.display()} " if a is not None else ""
    raise UndefinedFunction(f"operator does not exist: {left}{op} {b.type.display()}",
                            hint="No operator matches the given name and argument types. You might need to add "
                                 "explicit type casts.")


def is_interval(e: BoundExpr) -> bool:
    return e.type.name is TypeName.INTERVAL

