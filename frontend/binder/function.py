"""Scalar function calls of a materialized view, typed as PostgreSQL types them and rendered as
Spark SQL: a function is registered in `_FUNCS` (its name, and Spark's function where that one
answers as PostgreSQL's) and bound in `bind_func`.

Where Spark's function differs from PostgreSQL's the rendering gives PostgreSQL's answer:

* ``round(double)`` rounds half to even (PostgreSQL's rint);
* ``trunc(x)`` truncates toward zero, a double precision for an integer, real or double argument
  (Spark's ``floor`` / ``ceil`` of a double are bigints) and a numeric for a numeric one;
  ``trunc(numeric, n)`` with a constant `n` (Spark's scale must be one), a negative `n` truncating
  left of the point;
* ``round(numeric, n)`` and ``trunc(numeric, n)`` take the same constant `n` (`constant_places`):
  a constant integer expression, folded to its value;
* ``ceil(x)`` and ``floor(x)`` are a double precision for an integer, real or double argument and a
  numeric for a numeric one (Spark's of a double are bigints: 0 for NaN, the epoch failing past 2**63);
* ``abs(x)`` of the smallest value of an integer type, out of its range in PostgreSQL (22003), gives
  NULL (Spark's abs fails the epoch);
* ``sqrt(x)`` is a double precision for an integer, real or double argument and a numeric for a
  numeric one (computed in double precision: Spark has no decimal square root); a negative `x`,
  where PostgreSQL fails (2201F), gives NULL, as every error on a row of a streaming expression
  (`frontend.expr`).

Each takes PostgreSQL's signatures, 42883 (`frontend.binder.coercion.no_function`) for a call none
takes: no implicit cast reaches a number from text (``abs(s)``) or numeric from a double
(``round(d, 2)``), and a quoted literal is a double precision where PostgreSQL has one
(``abs('5')``, ``round('2.5')``).

String functions are in `frontend.binder.strings`, date and time ones in `frontend.binder.datetime`
and `frontend.binder.extract`.
"""

from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Decimal

from sqlglot import exp

from frontend.binder.coercion import (
    INTEGER_LIMITS,
    as_literal,
    check_number_input,
    coerce,
    common_of,
    function_args,
    is_untyped,
    no_function,
)
from frontend.catalog.pg_function_names import postgresql_functions
from frontend.dialect import PG_NAME
from frontend.expr import (
    BinaryOp,
    BoundExpr,
    Cast,
    FuncCall,
    Literal,
    SparkCall,
    UnaryOp,
)
from risingspark.errors import (
    AmbiguousFunction,
    DivisionByZero,
    FeatureNotSupported,
    NumericValueOutOfRange,
    UndefinedFunction,
)
from risingspark.types import (
    FLOAT8,
    INT4,
    NUMERIC,
    TIMESTAMP,
    VARCHAR,
    DataType,
    TypeName,
)

_FUNCS = {"lower": "lower", "upper": "upper", "length": "char_length", "char_length": "char_length",
          "abs": "abs", "round": "round", "coalesce": "coalesce", "concat": "concat", "nullif": "nullif",
          "trim": "trim", "substr": "substring", "substring": "substring", "greatest": "greatest",
          "least": "least", "ceil": "ceil", "floor": "floor", "trunc": "trunc", "sqrt": "sqrt"}




_TRUNC_UNITS = ("microseconds", "milliseconds", "second", "minute", "hour", "day", "week", "month", "quarter", "year")


def bind_date_trunc(node: exp.Expression, rec) -> BoundExpr:
    """``date_trunc(unit, ts)``: `ts` truncated to the unit (weeks start on Monday, as Postgres)."""
    unit = node.args.get("unit")
    name = (unit.name if unit is not None else "").lower().rstrip("s")
    name = {"microsecond": "microseconds", "millisecond": "milliseconds"}.get(name, name)
    if name not in _TRUNC_UNITS:
        raise FeatureNotSupported(f'date_trunc unit "{name}" is not supported in a materialized view yet')
    x = rec(node.this)
    if x.type.name is TypeName.DATE:
        x = Cast(x, TIMESTAMP)
    if x.type.name not in (TypeName.TIMESTAMP, TypeName.TIMESTAMPTZ):
        raise UndefinedFunction(f"function date_trunc(unknown, {x.type.display()}) does not exist")
    spark_unit = {"microseconds": "MICROSECOND", "milliseconds": "MILLISECOND"}.get(name, name.upper())
    return FuncCall("date_trunc", (Literal(spark_unit, VARCHAR), x), x.type)


def bind_func(node: exp.Func, rec) -> BoundExpr:
    name = (node.this if isinstance(node, exp.Anonymous) else node.sql_name()).lower()
    name = {"coalesce": "coalesce", "lower": "lower", "upper": "upper", "abs": "abs", "round": "round",
            "length": "length", "concat": "concat", "nullif": "nullif", "trim": "trim", "substring": "substring",
            "greatest": "greatest", "least": "least", "ceil": "ceil", "floor": "floor"}.get(name, name)
    if name in ("current_timestamp", "now", "localtimestamp", "current_date", "current_time", "localtime"):
        raise FeatureNotSupported(f"{name}() in a materialized view is supported only in a temporal filter: a "
                                  f"WHERE condition `column > now() - INTERVAL '...'` (or >=, <, <=) joined by AND")
    args = [rec(a) for a in func_args(node)]
    if name not in _FUNCS:
        written = str(node.meta.get(PG_NAME) or name).lower()  # (sqlglot's names differ: str_to_time)
        if written in postgresql_functions():  # (one of PostgreSQL's that a view does not run)
            raise FeatureNotSupported(f"function {written}() in a materialized view is not supported yet")
        raise no_function(written, args)
    if name in ("lower", "upper"):  # (trim, concat and substring are `frontend.binder.strings`')
        return FuncCall(name, function_args(name, args, "t"), VARCHAR, _FUNCS[name])
    if name in ("length", "char_length"):
        written = str(node.meta.get(PG_NAME) or name).lower()  # (length, char_length or character_length)
        return FuncCall("length", function_args(written, args, "t"), INT4, "char_length")
    if name in ("coalesce", "greatest", "least", "nullif"):
        t = common_of(args)
        if name != "coalesce" and t.name in (TypeName.STRUCT, TypeName.JSONB):
            raise FeatureNotSupported(f"{name}() of {t.name.value} values in a materialized view is not supported")
        return FuncCall(name, tuple(coerce(a, t) for a in args), t, _FUNCS[name])
    if name == "abs":
        return bind_abs(args)
    if name in ("ceil", "floor"):
        return bind_ceil_floor(name, str(node.meta.get(PG_NAME) or name).lower(), args)  # (or ceiling)
    if name == "round":
        return bind_round(args)
    if name == "trunc":
        if node.meta.get(PG_NAME, "trunc").lower() != "trunc":  # (sqlglot reads `truncate` as trunc too)
            raise no_function(node.meta[PG_NAME].lower(), args)
        return bind_trunc(args)
    if name == "sqrt":
        return bind_sqrt(args)
    raise UndefinedFunction(f"function {name} does not exist")


def double_or_numeric(name: str, args: list[BoundExpr]) -> DataType:
    """The parameter type of a function of one number that PostgreSQL defines on double precision
    and on numeric (``round``, ``ceil``, ``floor``): a numeric argument's own type, else double
    precision for another number or an untyped literal (PostgreSQL's preferred type: ``round('2.5')``
    is 2); 42883 for anything else (no implicit cast reaches a number from text: ``ceil(s)``)."""
    if len(args) != 1 or not (args[0].type.is_numeric or is_untyped(args[0])):
        raise no_function(name, args)
    return args[0].type if args[0].type.name is TypeName.NUMERIC else FLOAT8


def bind_round(args: list[BoundExpr]) -> BoundExpr:
    """``round(x)`` and ``round(x, n)``, PostgreSQL's signatures: ``round(double precision)``,
    ``round(numeric)`` and ``round(numeric, integer)``; a real or a double does not reach numeric
    implicitly, so ``round(d, 2)`` does not exist (42883).

    >>> from frontend.expr import InputRef
    >>> bind_round([InputRef(0, "k", INT4)]).to_spark()  # (a double, half to even: PostgreSQL's rint)
    'rint(TRY_CAST(`k` AS DOUBLE))'
    """
    if len(args) == 1:
        t = double_or_numeric("round", args)
        return FuncCall("round", (coerce(args[0], t),), t, "rint" if t.name is TypeName.DOUBLE else "round")
    x = args[0] if args else None
    if x is None or not (x.type.name is TypeName.NUMERIC or x.type.is_integer or is_untyped(x)):
        raise no_function("round", args)
    places = constant_places("round", args)
    if places is None:
        return Literal(None, NUMERIC)
    return FuncCall("round", (coerce(x, NUMERIC), Literal(places, INT4)), NUMERIC, "round")


def bind_abs(args: list[BoundExpr]) -> BoundExpr:
    """``abs(x)``: PostgreSQL's is defined on each numeric type and keeps it; an untyped literal is a
    double precision (``abs('5')``), text is no number (``abs(s)`` does not exist). The smallest
    integer of its type, whose absolute value is out of its range (22003 in PostgreSQL; Spark's abs
    fails the epoch), gives NULL.

    >>> from frontend.expr import InputRef
    >>> bind_abs([InputRef(0, "k", INT4)]).to_spark()
    '(IF(`k` = CAST(-2147483648 AS INT), NULL, abs(`k`)))'
    """
    if len(args) != 1 or not (args[0].type.is_numeric or is_untyped(args[0])):
        raise no_function("abs", args)
    x = args[0] if args[0].type.is_numeric else coerce(args[0], FLOAT8)
    if x.type.is_integer:
        smallest = Literal(-INTEGER_LIMITS[x.type.name], x.type).to_spark()
        return SparkCall("abs", (x,), x.type, f"IF({{0}} = {smallest}, NULL, abs({{0}}))")
    return FuncCall("abs", (x,), x.type, "abs")


# Spark's ceil and floor of a double are bigints: below 2**52 in magnitude that bigint as a double,
# a signed zero as PostgreSQL's (ceil(-0.5) is -0); a larger magnitude, an infinity or NaN is whole.
_CEIL_FLOOR_DOUBLE = ("IF(abs({{0}}) < 4503599627370496D, IF({f}({{0}}) = 0, {{0}} * 0D, CAST({f}({{0}}) AS DOUBLE)), "
                      "{{0}})")


def bind_ceil_floor(name: str, written: str, args: list[BoundExpr]) -> BoundExpr:
    """``ceil(x)`` (or ``ceiling(x)``, as `written`) and ``floor(x)``: a numeric for a numeric, else a
    double precision, as `double_or_numeric`.

    >>> from frontend.expr import InputRef
    >>> bind_ceil_floor("floor", "floor", [InputRef(0, "d", FLOAT8)]).to_spark()
    '(IF(abs(`d`) < 4503599627370496D, IF(floor(`d`) = 0, `d` * 0D, CAST(floor(`d`) AS DOUBLE)), `d`))'
    """
    t = double_or_numeric(written, args)
    if t.name is TypeName.NUMERIC:
        return FuncCall(name, (args[0],), t, name)
    return SparkCall(name, (coerce(args[0], FLOAT8),), FLOAT8, _CEIL_FLOOR_DOUBLE.format(f=name))


def constant_places(name: str, args: list[BoundExpr]) -> int | None:
    """The `n` of ``round(x, n)`` or ``trunc(x, n)``: PostgreSQL's integer parameter (a smallint, an
    integer or an untyped literal; 42883 otherwise), a constant folded to its value (None for NULL).

    Spark's scale must be a constant (with a column its analysis fails at every epoch) and trunc
    writes the value into its rendering, so an `n` that `fold_integer` cannot fold is 0A000.

    >>> constant_places("trunc", [Literal("2.5", NUMERIC), BinaryOp("+", Literal(1, INT4), Literal(1, INT4), INT4)])
    2
    """
    if len(args) != 2:
        raise no_function(name, args)
    n = args[1]
    if not (n.type.name in (TypeName.SMALLINT, TypeName.INT) or is_untyped(n)):
        raise no_function(name, args)
    try:
        return fold_integer(coerce(n, INT4))
    except _NotConstant:
        raise FeatureNotSupported(f"{name}(x, n) in a materialized view needs a constant n") from None


class _NotConstant(Exception):
    """An expression `fold_integer` does not fold."""


def fold_integer(e: BoundExpr) -> int | None:
    """The value of a constant integer expression as PostgreSQL computes it (None for NULL): integer
    literals, untyped literals and numeric or double constants cast to an integer type, unary minus,
    ``+ - * / %``; with PostgreSQL's errors (22P02, 22003, 22012). Raises `_NotConstant` for anything
    else (a column, a function call).

    >>> fold_integer(BinaryOp("/", Literal(-7, INT4), Literal(2, INT4), INT4))
    -3
    """
    if not e.type.is_integer:
        raise _NotConstant
    if isinstance(e, Literal):
        return None if e.value is None else _in_range(int(e.value), e.type)
    if isinstance(e, Cast):
        return _cast_to_integer(e.operand, e.type)
    if isinstance(e, UnaryOp) and e.op == "NEG":
        x = fold_integer(e.operand)
        return None if x is None else _in_range(-x, e.type)
    if isinstance(e, BinaryOp) and e.op in ("+", "-", "*", "/", "%"):
        a, b = fold_integer(e.left), fold_integer(e.right)
        if a is None or b is None:
            return None
        if e.op in ("+", "-", "*"):
            return _in_range(a + b if e.op == "+" else a - b if e.op == "-" else a * b, e.type)
        if b == 0:
            raise DivisionByZero("division by zero")
        quotient = abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)  # (toward zero)
        return _in_range(quotient if e.op == "/" else a - b * quotient, e.type)
    raise _NotConstant


def _cast_to_integer(x: BoundExpr, t: DataType) -> int | None:
    """A constant cast to the integer type `t`: a numeric rounds half away from zero, a double half
    to even, a string (a quoted literal, cast to text or not) is read as PostgreSQL's integer input."""
    x = as_literal(x)
    if x.type.is_integer:
        v = fold_integer(x)
    elif isinstance(x, Literal) and x.value is None:
        return None
    elif isinstance(x, Literal) and x.type.name is TypeName.NUMERIC:
        v = int(Decimal(str(x.value)).to_integral_value(ROUND_HALF_UP))
    elif isinstance(x, Literal) and x.type.name is TypeName.DOUBLE:
        if not math.isfinite(x.value):  # (an infinity or NaN)
            raise NumericValueOutOfRange(f"{t.display()} out of range")
        v = round(x.value)
    elif isinstance(x, Literal) and x.type.name is TypeName.VARCHAR:
        check_number_input(str(x.value), t)
        v = int(str(x.value))
    else:
        raise _NotConstant
    return None if v is None else _in_range(v, t)


def _in_range(v: int, t: DataType) -> int:
    if not -INTEGER_LIMITS[t.name] <= v < INTEGER_LIMITS[t.name]:
        raise NumericValueOutOfRange(f"{t.display()} out of range")
    return v


# A double truncated toward zero: below 2**52 in magnitude, x less its fractional part (fmod is
# exact, and so is the difference); a signed zero below 1 (PostgreSQL's trunc(-0.5) is -0); a larger
# magnitude, an infinity or NaN is its own truncation.
_TRUNC_DOUBLE = "IF(abs({0}) < 4503599627370496D, IF(abs({0}) < 1D, {0} * 0D, {0} - {0} % 1D), {0})"


def bind_trunc(args: list[BoundExpr]) -> BoundExpr:
    """``trunc(x)`` and ``trunc(x, n)``, PostgreSQL's signatures: ``trunc(double precision)``,
    ``trunc(numeric)`` and ``trunc(numeric, integer)``.

    >>> from frontend.expr import InputRef
    >>> bind_trunc([InputRef(0, "n", NUMERIC), Literal(-1, INT4)]).to_spark()
    '(IF(`n` < 0, ceil(`n`, -1), floor(`n`, -1)))'
    """
    x = args[0]
    if len(args) == 1:
        if x.type.name is TypeName.NUMERIC:
            return SparkCall("trunc", (x,), NUMERIC, "IF({0} < 0, ceil({0}), floor({0}))")
        if is_untyped(x):  # (PostgreSQL also has trunc(macaddr))
            raise AmbiguousFunction("function trunc(unknown) is not unique",
                                    hint="Could not choose a best candidate function. You might need to add "
                                         "explicit type casts.")
        if not x.type.is_numeric:
            raise no_function("trunc", args)
        return SparkCall("trunc", (coerce(x, FLOAT8),), FLOAT8, _TRUNC_DOUBLE)
    if not (x.type.name is TypeName.NUMERIC or x.type.is_integer or is_untyped(x)):
        raise no_function("trunc", args)
    places = constant_places("trunc", args)
    if places is None:
        return Literal(None, NUMERIC)
    # (a decimal has at most 38 digits: truncation at a place beyond them is the same as at the 38th)
    places = max(-38, min(places, 38))
    x = x if x.type.name is TypeName.NUMERIC else coerce(x, NUMERIC)
    return SparkCall("trunc", (x, Literal(places, INT4)), NUMERIC,
                     f"IF({{0}} < 0, ceil({{0}}, {places}), floor({{0}}, {places}))")


def bind_sqrt(args: list[BoundExpr]) -> BoundExpr:
    """``sqrt(x)``: ``sqrt(double precision)`` or ``sqrt(numeric)``; NULL for a negative `x`."""
    x = args[0]
    if len(args) != 1 or not (x.type.is_numeric or is_untyped(x)):
        raise no_function("sqrt", args)
    if x.type.name is TypeName.NUMERIC:
        return SparkCall("sqrt", (x,), NUMERIC,
                         f"IF({{0}} < 0, NULL, CAST(sqrt(CAST({{0}} AS DOUBLE)) AS {NUMERIC.to_spark()}))")
    return SparkCall("sqrt", (coerce(x, FLOAT8),), FLOAT8, "IF({0} < 0, NULL, sqrt({0}))")


def func_args(node: exp.Func) -> list[exp.Expression]:
    if isinstance(node, exp.Anonymous):
        return list(node.expressions)
    out = []
    for key in node.arg_types:
        v = node.args.get(key)
        if v is None or isinstance(v, bool):  # (a flag of the parser's, as greatest's ignore_nulls)
            continue
        out.extend(v if isinstance(v, list) else [v])
    return out
