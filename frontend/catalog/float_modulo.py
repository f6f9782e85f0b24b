"""``%`` with a real or double precision operand, which PostgreSQL has no operator for, in batch
queries.

PostgreSQL's ``%`` takes integers and numerics only, and neither float type casts to those
implicitly: ``2.5::float8 % 2`` is 42883 ``operator does not exist: double precision % integer``.
DuckDB answers ``0.5``. Where the text shows an operand is a real or a double (`frontend.catalog.
operand_types`) and the other's type (a quoted literal or NULL is PostgreSQL's ``unknown``), the
query fails so; else it is left to DuckDB.

>>> import sqlglot
>>> float_modulo(sqlglot.parse_one("SELECT 2.5 % 2, x % 2", read="risingwave")).sql()
'SELECT 2.5 % 2, x % 2'
>>> float_modulo(sqlglot.parse_one("SELECT 2.5::float8 % 2", read="risingwave"))
Traceback (most recent call last):
  ...
risingspark.errors.UndefinedFunction: operator does not exist: double precision % integer
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlglot import exp

from frontend.catalog.operand_types import FLOATS, OperandTypes, no_operator, unknown_literal

if TYPE_CHECKING:
    from frontend.catalog.rewrite import RewriteContext

_FLOAT_NAMES = {"real": "real", "double": "double precision"}


def float_modulo(query: exp.Expression, ctx: RewriteContext | None = None) -> exp.Expression:
    types: OperandTypes | None = None
    for node in query.find_all(exp.Mod):
        types = types or OperandTypes.of(query, ctx)
        left, right = _type_name(node.this, types), _type_name(node.expression, types)
        if left is not None and right is not None and {left, right} & set(_FLOAT_NAMES.values()):
            raise no_operator(left, "%", right)
    return query


def _type_name(e: exp.Expression, types: OperandTypes) -> str | None:
    """PostgreSQL's name of the operand's type, where the text shows it."""
    if unknown_literal(e) is not None:
        return "unknown"
    while isinstance(e, exp.Paren):
        e = e.this
    kind = types.kind(e)
    if kind in FLOATS:  # (a real's arithmetic, a sum of doubles... too)
        return _FLOAT_NAMES[kind]
    t = types.type_of(e)
    return t.display() if t is not None else None
