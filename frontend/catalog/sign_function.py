"""The type of ``sign(x)`` as PostgreSQL's, in batch queries.

PostgreSQL has ``sign(double precision)`` and ``sign(numeric)``: a numeric's sign is a numeric
(``sign(-2.5)`` is ``-1`` of type numeric), any other number's a double (an integer or a real is
widened to a double, the preferred type of the numeric category; a quoted literal or NULL is taken
for one too). DuckDB's ``sign`` is a TINYINT of any argument (a client was told a smallint). The
call is cast to PostgreSQL's type:

* to a numeric, ``DECIMAL(1, 0)`` (-1, 0 and 1 shown as PostgreSQL shows them), where the text
  shows the argument is a numeric (`frontend.catalog.operand_types`): a numeric literal, cast or
  column, an ``avg`` of an integer or numeric, ``min`` or ``max`` of a numeric, or arithmetic of an
  exact operand with one of those;
* to a double, otherwise, unless the text shows the argument is no number (text, a date...: left to
  DuckDB, as PostgreSQL fails). A numeric whose type the text does not show (a column of a set
  operation, another function's result) is then a double: the same text, ``-1``, ``0`` or ``1``,
  of type double precision.

A NaN's sign is 0 in both (a numeric NaN has no DuckDB value).

>>> import sqlglot
>>> q = sqlglot.parse_one("SELECT sign(x::int), sign(-2.5), sign(x::real), sign(x::int + 0.5), sign(x::text)",
...                       read="risingwave")
>>> sign_function(q).sql("duckdb")
'SELECT CAST(SIGN(CAST(x AS INT)) AS DOUBLE), CAST(SIGN(-2.5) AS DECIMAL(1, 0)), CAST(SIGN(CAST(x AS REAL)) AS DOUBLE), CAST(SIGN(CAST(x AS INT) + 0.5) AS DECIMAL(1, 0)), SIGN(CAST(x AS TEXT))'
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlglot import exp

from frontend.catalog.operand_types import ARITHMETIC, OperandTypes
from risingspark.types import TypeName

if TYPE_CHECKING:
    from frontend.catalog.rewrite import RewriteContext


def sign_function(query: exp.Expression, ctx: RewriteContext | None = None) -> exp.Expression:
    types: OperandTypes | None = None
    for node in reversed(list(query.find_all(exp.Sign))):  # (an inner call's first)
        types = types or OperandTypes.of(query, ctx)
        kind = types.kind(node.this)
        if kind in ("text", "other"):
            continue
        numeric = kind == "exact" and _is_numeric(node.this, types)
        node.replace(exp.cast(node.copy(), exp.DataType.build("DECIMAL(1, 0)" if numeric else "DOUBLE")))
    return query


def _is_numeric(e: exp.Expression, types: OperandTypes) -> bool:
    """Whether the text shows the exact `e` is a numeric (see the module doc)."""
    while isinstance(e, exp.Paren | exp.Neg | exp.Min | exp.Max):
        e = e.this
    if isinstance(e, exp.Avg):
        return True
    if isinstance(e, ARITHMETIC):
        return _is_numeric(e.this, types) or _is_numeric(e.expression, types)
    t = types.type_of(e)
    return t is not None and t.name is TypeName.NUMERIC
