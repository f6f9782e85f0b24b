"""``round`` of a double as PostgreSQL's, in batch queries.

PostgreSQL's ``round(double precision)`` is the C library's ``rint``: half to even (``round(2.5::float8)``
is 2, ``round(-0.5::float8)`` is -0), where DuckDB's ``round`` of a double goes half away from zero
(3 and -1). ``round(numeric)`` goes half away from zero in both and is left. So a one-argument
``round`` whose operand is a double becomes DuckDB's ``round_even(x, 0)``; a real's is computed
as a double (PostgreSQL has no ``round(real)``: it widens the real). ``round(x, n)`` exists in
PostgreSQL for numerics only: with a double or real ``x`` it is 42883 (``function round(double
precision, integer) does not exist``), where DuckDB rounded.

Both only where the operand's type is plain in the text (`frontend.catalog.operand_types`). DuckDB's
own type of an operand cannot tell: it computes as doubles what PostgreSQL computes as numerics
(``avg``, a numeric division, ``100.0 * x / y``), whose ``round`` goes half away from zero and takes
digits — the commonest ``round`` of all. So an operand of another type keeps DuckDB's ``round``.

>>> import sqlglot
>>> float_round(sqlglot.parse_one("SELECT round(x::float8), round(2.5)", read="risingwave")).sql("duckdb")
'SELECT ROUND_EVEN(CAST(x AS DOUBLE), 0), ROUND(2.5)'
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlglot import exp

from frontend.catalog.oids import format_type, type_oid
from frontend.catalog.operand_types import FLOATS, OperandTypes
from risingspark.errors import UndefinedFunction

if TYPE_CHECKING:
    from frontend.catalog.rewrite import RewriteContext

_PG_NAMES = {"DOUBLE": "double precision", "FLOAT": "real"}
_HINT = "No function matches the given name and argument types. You might need to add explicit type casts."


def float_round(query: exp.Expression, ctx: RewriteContext | None = None) -> exp.Expression:
    types = OperandTypes.of(query, ctx)
    for node in reversed(list(query.find_all(exp.Round))):
        out = _round(node, types)
        if out is not None:
            node.replace(out)
    return query


def _round(node: exp.Round, types: OperandTypes) -> exp.Expression | None:
    x, digits = node.this, node.args.get("decimals")
    if digits is None and isinstance(x, exp.Literal) and x.is_string:  # (PostgreSQL reads it as a double)
        x = exp.cast(x.copy(), exp.DataType.Type.DOUBLE)
    kind = types.kind(x)
    if (kind is not None and kind not in FLOATS) or isinstance(x, exp.Null):
        return None
    if kind is None:
        return None
    if digits is not None:
        raise UndefinedFunction(_undefined(_PG_NAMES["DOUBLE" if kind == "double" else "FLOAT"], digits), hint=_HINT)
    if kind == "real":
        x = exp.cast(x.copy(), exp.DataType.Type.DOUBLE)
    return exp.Anonymous(this="round_even", expressions=[x.copy(), exp.Literal.number(0)])


def _undefined(operand: str, digits: exp.Expression) -> str:
    """PostgreSQL's message for ``round(<operand>, digits)``; the second type is read from the text
    (an integer where it does not show)."""
    while isinstance(digits, exp.Paren | exp.Neg):
        digits = digits.this
    name = "integer"
    if isinstance(digits, exp.Literal) and not digits.is_string and not digits.is_int:
        name = "numeric"
    elif isinstance(digits, exp.Cast) and isinstance(digits.to, exp.DataType):
        oid = type_oid(digits.to.sql("postgres").lower())
        name = (format_type(oid, -1) if oid is not None else None) or name
    return f"function round({operand}, {name}) does not exist"
