"""Literals and PostgreSQL's type resolution for operators and functions: a quoted literal or a bare
``NULL`` is "unknown" and takes its type from the other operand, numeric operands meet in the wider
type, and what PostgreSQL has no operator for fails with its SQLSTATE."""

from __future__ import annotations

import math
import re
import struct
from collections.abc import Sequence

from sqlglot import exp

from frontend.expr import (
    BoundExpr,
    Cast,
    Literal,
)
from risingspark import interval, jsonb
from risingspark.errors import (
    DatatypeMismatch,
    FeatureNotSupported,
    InvalidTextRepresentation,
    NumericValueOutOfRange,
    UndefinedFunction,
)
from risingspark.types import (
    FLOAT4,
    FLOAT8,
    INT2,
    INT4,
    INT8,
    NUMERIC,
    VARCHAR,
    DataType,
    TypeName,
)


def literal(node: exp.Literal) -> BoundExpr:
    if node.is_string:
        return Literal(node.this, VARCHAR)
    text = node.this
    if any(c in text for c in ".eE"):
        if "e" in text.lower():
            return Literal(float(text), FLOAT8)
        return Literal(text, NUMERIC)
    v = int(text)
    if -(2**31) <= v < 2**31:
        return Literal(v, INT4)
    if -(2**63) <= v < 2**63:
        return Literal(v, INT8)
    return Literal(text, NUMERIC)


def is_unknown_literal(e: BoundExpr) -> bool:
    """A quoted literal: Postgres types it from context ("unknown")."""
    return isinstance(e, Literal) and e.type.name is TypeName.VARCHAR and isinstance(e.value, str)


def is_null_literal(e: BoundExpr) -> bool:
    """A bare ``NULL`` (bound as a varchar NULL): Postgres types it from context, as a quoted literal."""
    return isinstance(e, Literal) and e.value is None and e.type.name is TypeName.VARCHAR


def is_untyped(e: BoundExpr) -> bool:
    """A quoted literal or a bare ``NULL``."""
    return is_unknown_literal(e) or is_null_literal(e)


def as_literal(e: BoundExpr) -> BoundExpr:
    """`e`, or the literal under it when it is a literal cast to the literal's own type: ``'a'::text``
    is typed text (no operator takes it where it takes an integer), a constant all the same, for
    what needs one (a pattern, a join condition evaluated while rows match, a constant argument).

    >>> as_literal(Cast(Literal("a", VARCHAR), VARCHAR)).to_spark()
    "'a'"
    """
    return e.operand if isinstance(e, Cast) and isinstance(e.operand, Literal) and e.operand.type == e.type else e


def coerce(e: BoundExpr, target: DataType, context: str = "") -> BoundExpr:
    if e.type == target:
        return e
    if target.name is TypeName.INTERVAL and isinstance(e, Literal) and (e.value is None or is_unknown_literal(e)):
        return Literal(None if e.value is None else interval.parse(str(e.value)), target)
    if isinstance(e, Literal) and e.value is None and target.name in (TypeName.STRUCT, TypeName.JSONB):
        return Literal(None, target)
    if target.name is TypeName.JSONB and is_unknown_literal(e):
        return Literal(jsonb.canonical(str(e.value)), target)  # type: ignore[attr-defined]
    if target.name is TypeName.STRUCT and is_unknown_literal(e):
        raise FeatureNotSupported("text input of struct values is not supported; use ROW(...)")
    if is_unknown_literal(e) or (isinstance(e, Literal) and e.value is None):
        if target.is_numeric and isinstance(e, Literal) and e.value is not None:
            check_number_input(str(e.value), target)
        return Cast(e, target)
    if e.type.name in (TypeName.STRUCT, TypeName.JSONB) or target.name in (TypeName.STRUCT, TypeName.JSONB):
        raise FeatureNotSupported(f"{e.type.display()} where {target.display()} is expected is not supported in a "
                                  f"materialized view")
    if TypeName.INTERVAL in (e.type.name, target.name):
        raise FeatureNotSupported(f"converting {e.type.display()} to {target.display()} in a materialized view is "
                                  f"not supported yet")
    if target.name is TypeName.BOOLEAN and e.type.name is not TypeName.BOOLEAN:
        raise DatatypeMismatch(f"argument of {context or 'expression'} must be type boolean, not type "
                               f"{e.type.display()}")
    if e.type.is_numeric and target.is_numeric:
        return Cast(e, target)
    if target.name is TypeName.VARCHAR:
        return Cast(e, target)
    raise DatatypeMismatch(f"cannot cast type {e.type.display()} to {target.display()}")


# PostgreSQL's input of the number types (ASCII digits and spaces only: Python's \d and \s are Unicode's)
_SPACE = "[ \t\n\r\v\f]*"
_INTEGER_INPUT = re.compile(f"{_SPACE}[+-]?[0-9]+{_SPACE}")
_DECIMAL_INPUT = re.compile(f"{_SPACE}[+-]?([0-9]+[.]?[0-9]*|[.][0-9]+)([eE][+-]?[0-9]+)?{_SPACE}")
_FLOAT_WORDS = re.compile(f"{_SPACE}([+-]?(inf|infinity)|[+-]?nan){_SPACE}", re.IGNORECASE)
# an integer type's range: -limit <= v < limit
INTEGER_LIMITS = {TypeName.SMALLINT: 2**15, TypeName.INT: 2**31, TypeName.BIGINT: 2**63}


def check_number_input(text: str, target: DataType) -> None:
    """A quoted literal a number type takes (``k + 'x'``, ``abs('x')``): PostgreSQL reads it when it
    binds the query, so input that is no number of that type fails CREATE (22P02; 22003 out of
    range) where Spark's cast would make every row's value NULL.

    >>> check_number_input(" 12 ", INT4)
    >>> check_number_input("1.5", INT4)
    Traceback (most recent call last):
    ...
    risingspark.errors.InvalidTextRepresentation: invalid input syntax for type integer: "1.5"
    """
    if target.is_integer:
        if not _INTEGER_INPUT.fullmatch(text):
            raise InvalidTextRepresentation(f'invalid input syntax for type {target.display()}: "{text}"')
        if not -INTEGER_LIMITS[target.name] <= int(text) < INTEGER_LIMITS[target.name]:
            raise NumericValueOutOfRange(f'value "{text}" is out of range for type {target.display()}')
    elif target.name is TypeName.NUMERIC:
        if _FLOAT_WORDS.fullmatch(text):  # (a Spark decimal holds neither)
            raise FeatureNotSupported(f"numeric {text.strip()!r} in a materialized view is not supported")
        if not _DECIMAL_INPUT.fullmatch(text):
            raise InvalidTextRepresentation(f'invalid input syntax for type numeric: "{text}"')
    elif target.name in (TypeName.DOUBLE, TypeName.REAL):
        if not (_DECIMAL_INPUT.fullmatch(text) or _FLOAT_WORDS.fullmatch(text)):
            raise InvalidTextRepresentation(f'invalid input syntax for type {target.display()}: "{text}"')
        value = float(text) if target.name is TypeName.DOUBLE else _as_real(float(text))
        over = math.isinf(value) and not _FLOAT_WORDS.fullmatch(text)
        under = value == 0 and re.search(r"[1-9]", text.lower().split("e")[0]) is not None
        if over or under:
            raise NumericValueOutOfRange(f'"{text.strip()}" is out of range for type {target.display()}')


def _as_real(v: float) -> float:
    """`v` rounded to a real (an infinity past a real's range)."""
    try:
        return struct.unpack("f", struct.pack("f", v))[0]
    except OverflowError:
        return math.inf


_INT_RANK = {TypeName.SMALLINT: 0, TypeName.INT: 1, TypeName.BIGINT: 2}


def numeric_result(a: DataType, b: DataType) -> DataType:
    if TypeName.DOUBLE in (a.name, b.name) or (TypeName.REAL in (a.name, b.name)
                                                and not (a.name is b.name is TypeName.REAL)):
        return FLOAT8
    if a.name is b.name is TypeName.REAL:
        return FLOAT4
    if TypeName.NUMERIC in (a.name, b.name):
        return NUMERIC
    ints = [INT2, INT4, INT8]
    return ints[max(_INT_RANK[a.name], _INT_RANK[b.name])]


def comparison_type(a: DataType, b: DataType) -> DataType:
    """The type two already-bound operands of a comparison are compared in (as `common_type`
    resolves them): the wider numeric type, timestamp(tz) over date, else the left's type."""
    if a == b:
        return a
    if a.is_numeric and b.is_numeric:
        return numeric_result(a, b)
    names = {a.name, b.name}
    if names <= {TypeName.TIMESTAMP, TypeName.TIMESTAMPTZ, TypeName.DATE}:
        for name in (TypeName.TIMESTAMPTZ, TypeName.TIMESTAMP):
            if name in names:
                return a if a.name is name else b
    return a


def common_type(a: BoundExpr, b: BoundExpr, what: str) -> tuple[BoundExpr, BoundExpr, DataType]:
    """Coerce two operands to a common type, as Postgres resolves operator arguments.

    A bare NULL takes the other operand's type, whatever it is: ``x IS DISTINCT FROM NULL`` is x's
    null test for a struct or a jsonb value too (equality of such values is not supported).

    >>> from risingspark.types import INT4
    >>> common_type(Literal(7, INT4), Literal(None, VARCHAR), "IS DISTINCT FROM")[1].to_spark()
    'CAST(NULL AS INT)'
    """
    if is_null_literal(b) and not is_untyped(a):
        return a, Literal(None, a.type), a.type
    if is_null_literal(a) and not is_untyped(b):
        return Literal(None, b.type), b, b.type
    for e in (a, b):
        if e.type.name in (TypeName.STRUCT, TypeName.JSONB):
            # jsonb's text is not its equality (1.0 = 1); Spark compares structs' NULL fields otherwise
            raise FeatureNotSupported(f"{what} of {e.type.name.value} values in a materialized view is not "
                                      f"supported")
    if is_unknown_literal(a) and not is_unknown_literal(b):
        return coerce(a, b.type), b, b.type
    if is_unknown_literal(b) and not is_unknown_literal(a):
        return a, coerce(b, a.type), a.type
    if a.type == b.type:
        return a, b, a.type
    if a.type.is_numeric and b.type.is_numeric:
        t = numeric_result(a.type, b.type)
        return a, b, t
    if a.type.name is b.type.name:  # e.g. numeric(12,2) vs numeric
        return a, b, a.type
    if {a.type.name, b.type.name} <= {TypeName.TIMESTAMP, TypeName.TIMESTAMPTZ, TypeName.DATE}:
        return a, b, b.type if a.type.name is TypeName.DATE else a.type
    # (PostgreSQL names the equality operator that IS [NOT] DISTINCT FROM and IN compare with)
    raise no_operator(a, "=" if what in ("IS DISTINCT FROM", "IS NOT DISTINCT FROM", "IN") else what, b)


def no_operator(a: BoundExpr, op: str, b: BoundExpr) -> UndefinedFunction:
    """PostgreSQL's 42883 for ``a op b`` that no operator of that name takes."""
    return UndefinedFunction(f"operator does not exist: {a.type.display()} {op} {b.type.display()}",
                             hint="No operator matches the given name and argument types. You might need to "
                                  "add explicit type casts.")




def common_of(values: list[BoundExpr]) -> DataType:
    typed = [v for v in values if not is_unknown_literal(v) and not (isinstance(v, Literal) and v.value is None)]
    if not typed:
        return VARCHAR
    t = typed[0].type
    for v in typed[1:]:
        if v.type == t:
            continue
        if v.type.is_numeric and t.is_numeric:
            t = numeric_result(t, v.type)
        else:
            raise DatatypeMismatch(f"types {t.display()} and {v.type.display()} cannot be matched")
    return t


def arg_types(args: Sequence[BoundExpr]) -> str:
    """The argument types as PostgreSQL names them in an error (a quoted literal or a bare NULL: unknown)."""
    return ", ".join("unknown" if is_untyped(a) else a.type.display() for a in args)


def no_function(name: str, args: Sequence[BoundExpr]) -> UndefinedFunction:
    """PostgreSQL's 42883 for a call of `name` that no signature of it takes."""
    return UndefinedFunction(f"function {name}({arg_types(args)}) does not exist",
                             hint="No function matches the given name and argument types. You might need to add "
                                  "explicit type casts.")


# a parameter letter of `function_args`: the types that reach it implicitly, and its type
_PARAMETERS = {"t": ((TypeName.VARCHAR,), VARCHAR), "i": ((TypeName.SMALLINT, TypeName.INT), INT4)}


def function_args(name: str, args: Sequence[BoundExpr], *signatures: str) -> tuple[BoundExpr, ...]:
    """`args` coerced to the parameters of the signature of PostgreSQL's function `name` that takes
    them, each signature spelled by letters (``t`` text, ``i`` integer); `no_function` when none does.

    Only a string reaches text (PostgreSQL has no implicit cast to text from another type: ``lower(5)``
    does not exist), only a smallint or an integer reaches integer (not a bigint or a numeric), and a
    quoted literal or a bare NULL reaches either.

    >>> function_args("left", [Literal("abc", VARCHAR), Literal(None, VARCHAR)], "ti")[1].type.display()
    'integer'
    """
    for signature in signatures:
        if len(signature) == len(args) and all(
                is_untyped(a) or a.type.name in _PARAMETERS[p][0] for a, p in zip(args, signature, strict=True)):
            return tuple(coerce(a, _PARAMETERS[p][1]) for a, p in zip(args, signature, strict=True))
    raise no_function(name, args)
