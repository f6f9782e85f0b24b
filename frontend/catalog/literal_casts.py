"""Casts whose DuckDB meaning is not PostgreSQL's, in batch queries.

* ``x::varchar(n)`` and ``x::char(n)``: an explicit cast cuts the text to ``n`` characters (and
  ``char(n)`` pads it with spaces to ``n``); DuckDB ignores the length. (What ``char(n)`` values do
  afterwards — trailing spaces ignored in comparisons and ``length`` — is not PostgreSQL's.)
* a string literal cast to ``boolean``: PostgreSQL reads ``t``/``true``/``y``/``yes``/``on``/``1``
  and ``f``/``false``/``n``/``no``/``off``/``0`` (case-insensitive, a unique prefix of each word,
  blanks around), DuckDB fewer; anything else is 22P02.
* a string literal cast to ``smallint``/``integer``/``bigint``: PostgreSQL reads blanks, a sign and
  digits only (``'1.5'::int`` is 22P02; DuckDB rounded it to 2), and a value past the type is 22003.
* a number, or a string literal of one, cast to ``real`` or ``double precision``: a value past the
  type's range, or so near zero that it would be zero, is 22003 (``'1e400'::float8``: ``"1e400" is
  out of range for type double precision``); DuckDB made it infinity or zero. A number literal is a
  numeric in PostgreSQL: the message shows the numeric's text.

* an arithmetic expression with a division or an ``avg`` cast to an integer: DuckDB computes a
  numeric quotient or average as a double, whose cast rounds half to even, where PostgreSQL's numeric
  rounds half away from zero (``(-1 / 2.0)::int`` is -1, DuckDB said 0). When no operand of the
  expression is a double or real (read from the text where it shows, `frontend.catalog.
  operand_types`, else asked of DuckDB: ``typeof``), the value is ``round``-ed first
  (DuckDB's ``round`` of a double goes half away from zero); with one, PostgreSQL computes a double
  too and DuckDB's cast is left.

Literals are read here, when the query is rewritten; a column's text cast at run time is DuckDB's.
"""

from __future__ import annotations

import math
import re
import struct
from decimal import Decimal
from typing import TYPE_CHECKING

from sqlglot import exp

from frontend.catalog.operand_types import FLOATS, OperandTypes
from risingspark.errors import InvalidTextRepresentation, NumericValueOutOfRange

if TYPE_CHECKING:
    from frontend.catalog.rewrite import RewriteContext

_INTEGERS = {exp.DataType.Type.SMALLINT: ("smallint", 16), exp.DataType.Type.INT: ("integer", 32),
             exp.DataType.Type.BIGINT: ("bigint", 64)}
_INTEGER_TEXT = re.compile(r"\s*[+-]?\d+\s*")
_FLOATS = (exp.DataType.Type.FLOAT, exp.DataType.Type.DOUBLE)
_NUMERIC_DIGITS = 131072  # (PostgreSQL's numeric has up to so many digits before the point)
_NUMBER_TEXT = re.compile(r"\s*[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?\s*")
_TRUE = ("true", "yes", "on", "1")
_FALSE = ("false", "no", "off", "0")


def literal_casts(query: exp.Expression, ctx: RewriteContext | None = None) -> exp.Expression:
    types = OperandTypes.of(query, ctx)
    for node in list(query.find_all(exp.Cast)):
        out = _cast(node, types)
        if out is not None:
            node.replace(out)
    return query


_ARITHMETIC = (exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Mod, exp.Neg, exp.Paren, exp.Avg)


def _operands(e: exp.Expression, aggregated: bool = False) -> list[tuple[exp.Expression, bool]]:
    """The leaves of an arithmetic expression (columns, calls, literals), each with whether it is
    an ``avg``'s argument."""
    if not isinstance(e, _ARITHMETIC):
        return [(e, aggregated)]
    aggregated = aggregated or isinstance(e, exp.Avg)
    parts = [e.this, e.args.get("expression")]
    if isinstance(e, exp.Avg) and isinstance(e.this, exp.Distinct):  # avg(DISTINCT x)
        parts = list(e.this.expressions)
    return [leaf for part in parts if isinstance(part, exp.Expression) for leaf in _operands(part, aggregated)]


def _rounded_quotient(node: exp.Cast, types: OperandTypes) -> exp.Expression | None:
    x = node.this
    if not (isinstance(x, _ARITHMETIC) and any(isinstance(n, exp.Div | exp.Avg) for n in x.walk())):
        return None
    floating = []
    for leaf, aggregated in _operands(x):
        kind = types.kind(leaf)  # (known from the text: no test at run time, no aggregate of it)
        if isinstance(leaf, exp.Literal) or (kind is not None and kind not in FLOATS):
            continue
        if kind is not None:
            return None  # a double or real operand: PostgreSQL computes a double too
        asked: exp.Expression = exp.Anonymous(this="typeof", expressions=[leaf.copy()])
        if aggregated:  # (an aggregate's argument is asked in the aggregate: ``min(typeof(n))``)
            asked = exp.Min(this=asked)
        floating.append(exp.In(this=asked, expressions=[exp.Literal.string("DOUBLE"), exp.Literal.string("FLOAT")]))
    rounded = exp.Cast(this=exp.Anonymous(this="round", expressions=[x.copy()]), to=node.to.copy())
    if not floating:
        return rounded
    return exp.Case(ifs=[exp.If(this=exp.or_(*floating), true=node.copy())], default=rounded)


def _cast(node: exp.Cast, types: OperandTypes) -> exp.Expression | None:
    to = node.to
    if not isinstance(to, exp.DataType):
        return None
    if to.this in _INTEGERS:
        rounded = _rounded_quotient(node, types)
        if rounded is not None:
            return rounded
    if to.this in (exp.DataType.Type.VARCHAR, exp.DataType.Type.CHAR) and to.expressions:
        n = to.expressions[0].this
        if not (isinstance(n, exp.Literal) and n.is_int):
            return None
        text = exp.Anonymous(this="left", expressions=[exp.cast(node.this.copy(), "VARCHAR"), n.copy()])
        if to.this == exp.DataType.Type.CHAR:
            return exp.Anonymous(this="rpad", expressions=[text, n.copy(), exp.Literal.string(" ")])
        return text
    literal = node.this
    if to.this in _FLOATS:
        _check_float_range(literal, to)
    if not (isinstance(literal, exp.Literal) and literal.is_string):
        return None
    if to.this == exp.DataType.Type.BOOLEAN:
        return exp.Boolean(this=parse_bool(literal.name))
    if to.this in _INTEGERS:
        name, bits = _INTEGERS[to.this]
        if not _INTEGER_TEXT.fullmatch(literal.name):
            raise InvalidTextRepresentation(f'invalid input syntax for type {name}: "{literal.name}"')
        value = int(literal.name)
        if not -(2 ** (bits - 1)) <= value < 2 ** (bits - 1):
            raise NumericValueOutOfRange(f'value "{literal.name}" is out of range for type {name}')
    return None


def _check_float_range(x: exp.Expression, to: exp.DataType) -> None:
    """22003 for a number or a number's text `x` cast to a real or double (`to`) that is past its
    range or would be zero (PostgreSQL's ``float8in``, ``float4in`` and their ERANGE)."""
    if isinstance(x, exp.Literal) and x.is_string:
        text = x.name.strip()
    elif isinstance(x, exp.Literal) and abs(Decimal(x.name).adjusted()) <= _NUMERIC_DIGITS:
        text = format(Decimal(x.name), "f")  # (a numeric, written as PostgreSQL's numeric_out writes it)
    else:
        return
    if not _NUMBER_TEXT.fullmatch(text):
        return
    params = to.expressions  # float(p): a real up to 24 bits
    real = to.this == exp.DataType.Type.FLOAT or (bool(params) and int(params[0].name) <= 24)
    value = float(text)
    try:
        value = struct.unpack("f", struct.pack("f", value))[0] if real else value
    except OverflowError:
        value = math.inf
    if math.isinf(value) or (value == 0 and re.search(r"[1-9]", text.lower().split("e")[0])):
        name = "real" if real else "double precision"
        raise NumericValueOutOfRange(f'"{text}" is out of range for type {name}')


def parse_bool(text: str) -> bool:
    """PostgreSQL's ``boolin``.

    >>> [parse_bool(t) for t in ("t", " TRUE ", "ye", "on", "1", "f", "of", "No", "0")]
    [True, True, True, True, True, False, False, False, False]
    """
    s = text.strip().lower()
    if s and (any(w.startswith(s) for w in _TRUE if w not in ("on", "1")) or s in ("on", "1")):
        return True
    if s and (any(w.startswith(s) for w in _FALSE if w not in ("off", "0")) or s in ("0",)
              or (len(s) >= 2 and "off".startswith(s))):
        return False
    raise InvalidTextRepresentation(f'invalid input syntax for type boolean: "{text}"')
