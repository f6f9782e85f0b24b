"""The default of ``lag``/``lead`` as PostgreSQL types it, in batch queries.

PostgreSQL's ``lag(value anycompatible, offset, default anycompatible)`` computes in the common type
of the value and the default: ``lag(int_col, 1, 0.5)`` is a numeric and its first row 0.5. DuckDB
casts the default to the value's type, so that row was 1 (0.5 rounded to an integer), and a numeric
column's default lost the digits past its scale. So where the value is an integer or numeric
(`frontend.catalog.operand_types`) and the default a number literal with a fraction or exponent, the
value is computed as a double, which the batch result then casts to the binder's numeric
(`frontend.batch_types`); a double default widens an exact value the same way.

>>> import sqlglot
>>> q = sqlglot.parse_one("SELECT lag(x::int, 1, 0.5) OVER (), lead(x::int, 1, 7) OVER ()", read="risingwave")
>>> lag_default(q).sql("duckdb")
'SELECT LAG(CAST(CAST(x AS INT) AS DOUBLE), 1, 0.5) OVER (), LEAD(CAST(x AS INT), 1, 7) OVER ()'
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlglot import exp

from frontend.catalog.operand_types import FLOATS, OperandTypes, is_number

if TYPE_CHECKING:
    from frontend.catalog.rewrite import RewriteContext


def lag_default(query: exp.Expression, ctx: RewriteContext | None = None) -> exp.Expression:
    types: OperandTypes | None = None
    for node in list(query.find_all(exp.Lag, exp.Lead)):
        default = node.args.get("default")
        if default is None:
            continue
        types = types or OperandTypes.of(query, ctx)
        if types.kind(node.this) == "exact" and (_fraction(default) or types.kind(default) in FLOATS):
            node.set("this", exp.cast(node.this.copy(), exp.DataType.Type.DOUBLE))
    return query


def _fraction(e: exp.Expression) -> bool:
    """A number literal PostgreSQL reads as a numeric, not an integer (``0.5``, ``-1e3``)."""
    while isinstance(e, exp.Paren | exp.Neg):
        e = e.this
    return is_number(e) and not e.is_int
