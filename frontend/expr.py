"""Bound expressions: typed as PostgreSQL types them, and rendered as Spark SQL for epoch rounds.

The binder (`frontend.binder`) builds them from sqlglot trees; the stream planner puts their Spark SQL
text into stream plan nodes.

In streaming, an expression that fails on one row (division by zero, overflow, a cast of a bad
string) yields NULL for that row instead of failing the epoch, as RisingWave's streaming
expressions do by default: arithmetic renders as Spark's ``try_*`` functions and casts as
``TRY_CAST``. Batch queries keep Postgres' errors.

>>> from risingspark.types import INT4
>>> BinaryOp("/", InputRef(0, "a", INT4), Literal(2, INT4), INT4).to_spark()
'(CASE WHEN CAST(2 AS INT) = 0 THEN NULL ELSE `a` DIV CAST(2 AS INT) END)'
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from risingspark.float_text import FLOAT4_TEXT_UDF, FLOAT8_TEXT_UDF
from risingspark.types import BOOL, UNCONSTRAINED_NUMERIC_SCALE, DataType, TypeName


class BoundExpr:
    type: DataType

    def to_spark(self) -> str:
        raise NotImplementedError

    def display(self) -> str:
        return self.to_spark()

    def children(self) -> tuple[BoundExpr, ...]:
        return ()


@dataclass(frozen=True)
class InputRef(BoundExpr):
    index: int
    name: str
    type: DataType

    def to_spark(self) -> str:
        return f"`{self.name}`"

    def display(self) -> str:
        return self.name


@dataclass(frozen=True)
class Literal(BoundExpr):
    value: Any
    type: DataType

    def to_spark(self) -> str:
        v, t = self.value, self.type
        if v is None:
            return f"CAST(NULL AS {t.to_spark()})"
        if t.name is TypeName.BOOLEAN:
            return "TRUE" if v else "FALSE"
        if t.is_integer:
            return f"CAST({int(v)} AS {t.to_spark()})"
        if t.name is TypeName.NUMERIC:
            return f"CAST('{Decimal(v)}' AS {t.to_spark()})"
        if t.name in (TypeName.REAL, TypeName.DOUBLE):
            return f"CAST('{float(v)!r}' AS {t.to_spark()})"
        if t.name is TypeName.DATE:
            return f"DATE'{v.isoformat() if isinstance(v, dt.date) else v}'"
        if t.name is TypeName.TIMESTAMP:
            text = v.isoformat(sep=" ") if isinstance(v, dt.datetime) else str(v)
            return f"TIMESTAMP_NTZ'{text}'"
        if t.name is TypeName.TIMESTAMPTZ:
            text = v.isoformat(sep=" ") if isinstance(v, dt.datetime) else str(v)
            return f"TIMESTAMP'{text}'"
        if t.name is TypeName.INTERVAL:
            return (f"named_struct('months', CAST({v.months} AS INT), 'days', CAST({v.days} AS INT), "
                    f"'usecs', CAST({v.usecs} AS BIGINT))")
        return spark_string(str(v))

    def display(self) -> str:
        if self.value is None:
            return "null"
        if self.type.name is TypeName.VARCHAR:
            return "'" + str(self.value).replace("'", "''") + "'"
        if self.type.name is TypeName.INTERVAL:
            return f"'{self.value.pg_text()}':Interval"
        return str(self.value)


def spark_string(s: str) -> str:
    """A Spark SQL string literal (backslash escapes are on by default in Spark)."""
    return "'" + s.replace("\\", "\\\\").replace("'", "\\'") + "'"


_SPARK_BINARY = {"=": "=", "<>": "<>", "<": "<", "<=": "<=", ">": ">", ">=": ">=", "AND": "AND", "OR": "OR"}
_SPARK_TRY = {"+": "try_add", "-": "try_subtract", "*": "try_multiply", "%": "try_mod", "/": "try_divide"}


@dataclass(frozen=True)
class BinaryOp(BoundExpr):
    op: str
    left: BoundExpr
    right: BoundExpr
    type: DataType

    def to_spark(self) -> str:
        lhs, rhs = self.left.to_spark(), self.right.to_spark()
        if self.op == "/" and self.type.is_integer:
            # Postgres divides integers truncating toward zero, as Spark's DIV does.
            return f"(CASE WHEN {rhs} = 0 THEN NULL ELSE {lhs} DIV {rhs} END)"
        if self.op in _SPARK_TRY:
            return f"{_SPARK_TRY[self.op]}({lhs}, {rhs})"
        if self.op == "||":
            return f"concat({lhs}, {rhs})"
        if self.op == "IS DISTINCT FROM":
            return f"(NOT ({lhs} <=> {rhs}))"
        if self.op == "IS NOT DISTINCT FROM":
            return f"({lhs} <=> {rhs})"
        return f"({lhs} {_SPARK_BINARY[self.op]} {rhs})"

    def display(self) -> str:
        return f"({self.left.display()} {self.op} {self.right.display()})"

    def children(self) -> tuple[BoundExpr, ...]:
        return (self.left, self.right)


@dataclass(frozen=True)
class UnaryOp(BoundExpr):
    op: str  # NOT, NEG, IS NULL, IS NOT NULL, IS TRUE, IS FALSE
    operand: BoundExpr
    type: DataType

    def to_spark(self) -> str:
        x = self.operand.to_spark()
        if self.op == "NOT":
            return f"(NOT {x})"
        if self.op == "NEG":
            return f"try_subtract(0, {x})"
        if self.op == "IS TRUE":
            return f"({x} <=> TRUE)"
        if self.op == "IS FALSE":
            return f"({x} <=> FALSE)"
        return f"({x} {self.op})"

    def display(self) -> str:
        return f"{self.op} {self.operand.display()}" if self.op in ("NOT", "NEG") else \
            f"{self.operand.display()} {self.op}"

    def children(self) -> tuple[BoundExpr, ...]:
        return (self.operand,)


@dataclass(frozen=True)
class Cast(BoundExpr):
    """A cast, as PostgreSQL's: to an integer a numeric rounds half away from zero and a double or
    real half to even (Spark's casts truncate); an unconstrained numeric's text has no trailing
    fractional zeros (Spark's keeps the stored scale: ``2.2500000000``); a double's or a real's text is
    PostgreSQL's (a UDF over `risingspark.float_text`: ``2``, not Spark's ``2.0``)."""

    operand: BoundExpr
    type: DataType

    def to_spark(self) -> str:
        x, source = self.operand.to_spark(), self.operand.type
        if self.type.is_integer and source.name is TypeName.NUMERIC:
            x = f"round({x})"
        elif self.type.is_integer and source.name in (TypeName.DOUBLE, TypeName.REAL):
            x = f"rint({x})"
        elif self.type.name is TypeName.VARCHAR and source.name is TypeName.NUMERIC and source.scale is None:
            # (only a value at the stored scale of 10: Spark computes `nc * 2` at its operands' scale,
            # which is PostgreSQL's display scale too, while its type here is an unconstrained numeric)
            text = f"CAST({x} AS STRING)"
            return (f"CASE WHEN {text} RLIKE '[.][0-9]{{{UNCONSTRAINED_NUMERIC_SCALE}}}$' THEN regexp_replace("
                    f"regexp_replace({text}, '([.][0-9]*?)0+$', '$1'), '[.]$', '') ELSE {text} END")
        elif self.type.name is TypeName.VARCHAR and source.name in (TypeName.DOUBLE, TypeName.REAL):
            # (PostgreSQL's text, `2` and `1e+15`, where Spark's is Java's: `2.0`, `1.0E15`)
            return f"{FLOAT8_TEXT_UDF if source.name is TypeName.DOUBLE else FLOAT4_TEXT_UDF}({x})"
        return f"TRY_CAST({x} AS {self.type.to_spark()})"

    def display(self) -> str:
        return f"{self.operand.display()}::{self.type.display()}"

    def children(self) -> tuple[BoundExpr, ...]:
        return (self.operand,)


@dataclass(frozen=True)
class FuncCall(BoundExpr):
    """A scalar function; `spark` is its Spark SQL name."""

    name: str
    args: tuple[BoundExpr, ...]
    type: DataType
    spark: str = ""

    def to_spark(self) -> str:
        return f"{self.spark or self.name}({', '.join(a.to_spark() for a in self.args)})"

    def display(self) -> str:
        return f"{self.name}({', '.join(a.display() for a in self.args)})"

    def children(self) -> tuple[BoundExpr, ...]:
        return self.args


@dataclass(frozen=True)
class SparkCall(BoundExpr):
    """A function or operator rendered from a Spark SQL template, ``{0}``, ``{1}``... standing for
    the arguments (which may appear several times; Spark evaluates a repeated subexpression once).

    >>> from risingspark.types import VARCHAR
    >>> SparkCall("reverse", (InputRef(0, "s", VARCHAR),), VARCHAR, "reverse({0})").to_spark()
    '(reverse(`s`))'
    """

    name: str
    args: tuple[BoundExpr, ...]
    type: DataType
    template: str

    def to_spark(self) -> str:
        return "(" + self.template.format(*(a.to_spark() for a in self.args)) + ")"

    def display(self) -> str:
        return f"{self.name}({', '.join(a.display() for a in self.args)})"

    def children(self) -> tuple[BoundExpr, ...]:
        return self.args


@dataclass(frozen=True)
class Extract(BoundExpr):
    """``extract(field FROM x)``; `template`: its Spark SQL with ``{}`` for the operand."""

    field: str
    operand: BoundExpr
    type: DataType
    template: str

    def to_spark(self) -> str:
        x = f"CAST({self.operand.to_spark()} AS TIMESTAMP)"
        return f"CAST({self.template.format(*[x] * self.template.count('{}'))} AS {self.type.to_spark()})"

    def display(self) -> str:
        return f"extract({self.field} from {self.operand.display()})"

    def children(self) -> tuple[BoundExpr, ...]:
        return (self.operand,)


@dataclass(frozen=True)
class WindowBound(BoundExpr):
    """A time window's bound for `ts`: the start of the `unit_us`-long window holding it (aligned
    to the Unix epoch, as RisingWave's ``tumble_start``), plus `shift_us` (a window's end, a
    hopping window that started earlier). NULL for a NULL `ts`."""

    ts: BoundExpr
    unit_us: int
    shift_us: int
    type: DataType
    label: str = "window_start"

    def to_spark(self) -> str:
        micros = f"unix_micros(CAST({self.ts.to_spark()} AS TIMESTAMP))"
        bound = f"timestamp_micros({micros} - pmod({micros}, {self.unit_us}) + {self.shift_us})"
        return f"CAST({bound} AS TIMESTAMP_NTZ)" if self.type.name is TypeName.TIMESTAMP else bound

    def display(self) -> str:
        shift = f", {_duration(self.shift_us)}" if self.shift_us else ""
        return f"{self.label}({self.ts.display()}, {_duration(self.unit_us)}{shift})"

    def children(self) -> tuple[BoundExpr, ...]:
        return (self.ts,)


def _duration(us: int) -> str:
    sign = "-" if us < 0 else ""
    return sign + str(dt.timedelta(microseconds=abs(us)))


@dataclass(frozen=True)
class Case(BoundExpr):
    whens: tuple[tuple[BoundExpr, BoundExpr], ...]
    default: BoundExpr | None
    type: DataType

    def to_spark(self) -> str:
        parts = " ".join(f"WHEN {c.to_spark()} THEN {v.to_spark()}" for c, v in self.whens)
        tail = f" ELSE {self.default.to_spark()}" if self.default is not None else ""
        return f"(CASE {parts}{tail} END)"

    def display(self) -> str:
        parts = " ".join(f"WHEN {c.display()} THEN {v.display()}" for c, v in self.whens)
        tail = f" ELSE {self.default.display()}" if self.default is not None else ""
        return f"CASE {parts}{tail} END"

    def children(self) -> tuple[BoundExpr, ...]:
        out = [e for pair in self.whens for e in pair]
        return tuple(out + ([self.default] if self.default is not None else []))


@dataclass(frozen=True)
class InList(BoundExpr):
    operand: BoundExpr
    items: tuple[BoundExpr, ...]
    negated: bool
    type: DataType = BOOL

    def to_spark(self) -> str:
        items = ", ".join(i.to_spark() for i in self.items)
        return f"({self.operand.to_spark()} {'NOT ' if self.negated else ''}IN ({items}))"

    def children(self) -> tuple[BoundExpr, ...]:
        return (self.operand, *self.items)


@dataclass(frozen=True)
class Like(BoundExpr):
    operand: BoundExpr
    pattern: BoundExpr
    negated: bool
    case_insensitive: bool
    type: DataType = BOOL

    def to_spark(self) -> str:
        x, p = self.operand.to_spark(), self.pattern.to_spark()
        if self.case_insensitive:
            x, p = f"lower({x})", f"lower({p})"
        return f"({'NOT ' if self.negated else ''}{x} LIKE {p})"

    def children(self) -> tuple[BoundExpr, ...]:
        return (self.operand, self.pattern)


@dataclass(frozen=True)
class AggCallExpr(BoundExpr):
    """An aggregate in a SELECT list; only the stream planner consumes it."""

    kind: str  # one of risingspark.aggregate.AGG_KINDS
    arg: BoundExpr | None
    type: DataType
    distinct: bool = False
    order_by: tuple[tuple[BoundExpr, bool, bool], ...] = ()  # (expr, descending, nulls first)
    delimiter: str | None = None  # string_agg's, a constant
    filter: BoundExpr | None = None  # FILTER (WHERE ...)
    delimiter_arg: BoundExpr | None = None  # string_agg's, when not a constant: each row's own

    def to_spark(self) -> str:
        raise AssertionError("aggregates are planned, not rendered")

    def display(self) -> str:
        """As RisingWave's plan text: ``count(distinct x)``, ``string_agg(s, ',':Varchar order_by(y DESC))``."""
        if self.kind == "count_star":
            inner = "*"
        else:
            inner = ("distinct " if self.distinct else "") + (self.arg.display() if self.arg else "")
        if self.delimiter is not None:
            inner += ", '" + self.delimiter.replace("'", "''") + "':Varchar"
        if self.delimiter_arg is not None:
            inner += ", " + self.delimiter_arg.display()
        if self.order_by:
            inner += " order_by(" + ", ".join(
                f"{e.display()} {'DESC' if d else 'ASC'}" + (" NULLS FIRST" if nf and not d else
                                                              " NULLS LAST" if d and not nf else "")
                for e, d, nf in self.order_by) + ")"
        name = "count" if self.kind == "count_star" else self.kind
        out = f"{name}({inner})"
        return out if self.filter is None else f"{out} filter({self.filter.display()})"

    def children(self) -> tuple[BoundExpr, ...]:
        return tuple(x for x in (self.arg, *(e for e, _, _ in self.order_by), self.filter, self.delimiter_arg)
                     if x is not None)


def walk(e: BoundExpr):
    yield e
    for c in e.children():
        yield from walk(c)


def contains_agg(e: BoundExpr) -> bool:
    return any(isinstance(x, AggCallExpr) for x in walk(e))


def replace_exprs(e: BoundExpr, mapping: dict[BoundExpr, BoundExpr]) -> BoundExpr:
    """`e` with every subexpression found in `mapping` replaced (the outermost match wins)."""
    if e in mapping:
        return mapping[e]
    return _rebuild(e, lambda c: replace_exprs(c, mapping))


def map_inputs(e: BoundExpr, fn: Callable[[InputRef], BoundExpr]) -> BoundExpr:
    """`e` with every input reference replaced by ``fn(ref)`` (e.g. moved to another column index).

    >>> from risingspark.types import INT4
    >>> e = BinaryOp("+", InputRef(0, "a", INT4), InputRef(1, "b", INT4), INT4)
    >>> map_inputs(e, lambda r: InputRef(r.index + 5, r.name, r.type)).left.index
    5
    """
    if isinstance(e, InputRef):
        return fn(e)
    return _rebuild(e, lambda c: map_inputs(c, fn))


def _rebuild(e: BoundExpr, fn: Callable[[BoundExpr], BoundExpr]) -> BoundExpr:
    """`e` with `fn` applied to each direct child expression, whatever the node's fields are (an
    expression, an optional one, tuples of them, or tuples of tuples holding them)."""
    if not dataclasses.is_dataclass(e):
        return e

    def value(v: Any) -> Any:
        if isinstance(v, BoundExpr):
            return fn(v)
        if isinstance(v, tuple):
            return tuple(value(x) for x in v)
        return v

    changes = {f.name: value(getattr(e, f.name)) for f in dataclasses.fields(e) if f.name != "type"}
    return dataclasses.replace(e, **changes)
