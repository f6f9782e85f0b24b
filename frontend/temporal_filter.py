"""Temporal filters: WHERE conditions comparing a time column with ``now()``, as RisingWave's.

``ts > now() - INTERVAL '1 hour'`` in a materialized view keeps the rows of the last hour: as time
passes, rows leave (and with ``ts < now() + ...``, enter) the view. RisingWave plans each such
condition as a ``StreamDynamicFilter`` whose right side is a ``StreamNow``; here it is one
`risingspark.stream_plan.StreamTemporalFilter` (`compute.executor.temporal_filter`), whose bound is
the epoch's physical time plus the offset.

A condition is a temporal filter when it is one of the top-level AND conjuncts of WHERE and has the
shape ``column op now() [+|- INTERVAL 'fixed']`` with op one of ``> >= < <=``, either way round
(``now() - INTERVAL '1 hour' < ts``), or ``column BETWEEN now() - ... AND now() + ...`` (two
filters); ``column + INTERVAL`` on the column's side moves to the bound.
``now()`` and ``current_timestamp`` are the same. Anything else that mentions ``now()`` — in the
select list, under OR, ``=``, a non-constant interval — is 0A000, as RisingWave rejects it.

Time columns are ``timestamp`` (compared as UTC, the server's TimeZone) or ``timestamptz``.

>>> from sqlglot import parse_one
>>> m = match_temporal(parse_one("now() - INTERVAL '3 seconds' < ts", read="postgres"))
>>> (m.column.sql(), m.op, m.offset_us)
('ts', '>', -3000000)
>>> match_temporal(parse_one("ts > 5", read="postgres")) is None
True
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from frontend.expr import InputRef
from frontend.interval import fixed_interval_micros, interval_display, is_interval_literal
from risingspark.errors import FeatureNotSupported

_OPS: dict[type, str] = {exp.GT: ">", exp.GTE: ">=", exp.LT: "<", exp.LTE: "<="}
_FLIP = {">": "<", ">=": "<=", "<": ">", "<=": ">="}
NOW_FUNCTIONS = ("now", "current_timestamp")
_HINT = ("a temporal filter is a WHERE condition `column > now() - INTERVAL '...'` (or >=, <, <=), joined to "
         "the rest of WHERE by AND")


@dataclass(frozen=True)
class TemporalMatch:
    """A temporal filter before binding: ``column op now() + offset_us``."""

    column: exp.Expression
    op: str
    offset_us: int


@dataclass(frozen=True)
class TemporalCond:
    """A bound temporal filter: rows pass where ``column op now() + offset_us``."""

    column: InputRef
    op: str
    offset_us: int

    def display(self) -> str:
        if self.offset_us == 0:
            bound = "now()"
        else:
            sign = "+" if self.offset_us > 0 else "-"
            bound = f"(now() {sign} '{interval_display(abs(self.offset_us))}':Interval)"
        return f"({self.column.name} {self.op} {bound})"


def is_now(node: object) -> bool:
    if isinstance(node, exp.CurrentTimestamp):
        return True
    return isinstance(node, exp.Anonymous) and str(node.this).lower() in NOW_FUNCTIONS


def mentions_now(node: exp.Expression) -> bool:
    return any(is_now(n) for n in node.walk())


def split_between(node: exp.Expression) -> list[exp.Expression]:
    """``x BETWEEN a AND b`` mentioning now() as ``x >= a`` and ``x <= b`` (two temporal filters)."""
    inner = node
    while isinstance(inner, exp.Paren):
        inner = inner.this
    if not isinstance(inner, exp.Between) or not mentions_now(inner):
        return [node]
    x = inner.this
    return [exp.GTE(this=x.copy(), expression=inner.args["low"].copy()),
            exp.LTE(this=x.copy(), expression=inner.args["high"].copy())]


def match_temporal(node: exp.Expression) -> TemporalMatch | None:
    """The temporal filter in a WHERE conjunct, None when the conjunct does not mention now();
    0A000 when it mentions now() in a shape that is not a temporal filter."""
    if not mentions_now(node):
        return None
    while isinstance(node, exp.Paren):
        node = node.this
    op = _OPS.get(type(node))
    if op is None:
        raise FeatureNotSupported(f"now() in {node.sql(dialect='postgres')!r} is not supported in a materialized "
                                  f"view: only in a temporal filter ({_HINT})")
    left, right = node.this, node.expression
    if mentions_now(left) and not mentions_now(right):
        left, right, op = right, left, _FLIP[op]
    elif mentions_now(left):
        raise FeatureNotSupported(f"now() on both sides of a comparison is not a temporal filter ({_HINT})")
    offset = _now_offset(right)
    column, shift = _column_shift(left)
    return TemporalMatch(column, op, offset - shift)


def _now_offset(node: exp.Expression) -> int:
    """``now() [+|- INTERVAL]`` as its offset from now() in microseconds."""
    while isinstance(node, exp.Paren):
        node = node.this
    if is_now(node):
        return 0
    if isinstance(node, exp.Add | exp.Sub):
        base, iv = node.this, node.expression
        if isinstance(node, exp.Add) and is_interval_literal(base):
            base, iv = iv, base
        if is_interval_literal(iv) and not mentions_now(iv):
            micros = fixed_interval_micros(iv, "a temporal filter", "its bound needs a fixed offset from now()")
            return _now_offset(base) + (micros if isinstance(node, exp.Add) else -micros)
    raise FeatureNotSupported(f"{node.sql(dialect='postgres')!r} is not supported as the bound of a temporal "
                              f"filter: use now() plus or minus a constant interval ({_HINT})")


def _column_shift(node: exp.Expression) -> tuple[exp.Expression, int]:
    """``column [+|- INTERVAL]`` as the column and the interval it is shifted by."""
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.Add | exp.Sub) and is_interval_literal(node.expression):
        column, shift = _column_shift(node.this)
        micros = fixed_interval_micros(node.expression, "a temporal filter", "its bound needs a fixed offset")
        return column, shift + (micros if isinstance(node, exp.Add) else -micros)
    return node, 0


def unsupported_column(column: exp.Expression) -> FeatureNotSupported:
    return FeatureNotSupported(f"{column.sql(dialect='postgres')!r} is not supported on the column side of a "
                               f"temporal filter: it must be a timestamp column ({_HINT})")
