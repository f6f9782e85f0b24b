"""Quoted literals as the arguments of PostgreSQL's numeric functions and arithmetic operators in
batch queries.

PostgreSQL types a quoted literal by the function it is passed to: ``abs('-5')``, ``ceil('2.5')``,
``floor('2.5')`` and ``sign('-3')`` take it as a double precision (the preferred type of the
numeric category, among the functions' numeric signatures), ``round('2.5', 1)`` and ``trunc('2.5', 1)`` as a numeric (the only
signatures of two arguments). DuckDB finds no single candidate for a string and fails ("Could not
choose a best candidate function"). The literal is cast here to the type PostgreSQL gives it;
input it does not read as a number then fails as PostgreSQL's does (22P02). (DuckDB's ``sign`` is
a tinyint of any argument: `frontend.catalog.sign_function` makes the sign of a double a double.)
``trunc`` of one quoted literal or NULL PostgreSQL cannot resolve: beside its numeric signatures is
``trunc(macaddr)``, of another category, so it fails, 42725 ``function trunc(unknown) is not
unique`` (as the binder's `frontend.binder.function.bind_trunc`).

Beside an arithmetic operator (``+ - * / %``) a quoted literal takes the other operand's type:
``'5' + 1`` is the integer 6 and ``'2.5' * 2`` fails (22P02), as PostgreSQL resolves ``unknown +
integer`` to ``integer + integer``; DuckDB found no candidate, or read ``'2.5'`` as a number. Only
where the other operand's type is plain in the text (`numeric_type`: a number literal, a cast, a
column of a catalog relation); anything else is left to DuckDB.

>>> import sqlglot
>>> unknown_arguments(sqlglot.parse_one("SELECT abs('-5'), round('2.5', 1), abs(x)", read="risingwave")).sql()
"SELECT ABS(CAST('-5' AS DOUBLE)), ROUND(CAST('2.5' AS DECIMAL), 1), ABS(x)"
>>> unknown_arguments(sqlglot.parse_one("SELECT '5' + 1, 2.5 * '2', '1' - x, 1 + '1'::int", read="risingwave")).sql()
"SELECT CAST('5' AS INT) + 1, 2.5 * CAST('2' AS DECIMAL), '1' - x, 1 + CAST('1' AS INT)"
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlglot import exp

from frontend.catalog.operand_types import OperandTypes, is_number
from risingspark.errors import AmbiguousFunction
from risingspark.types import TypeName

if TYPE_CHECKING:
    from frontend.catalog.rewrite import RewriteContext

_DOUBLE_FUNCTIONS = (exp.Abs, exp.Ceil, exp.Floor, exp.Sign)
_OPERATORS = (exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Mod)
_NUMERIC_CASTS = {exp.DataType.Type.SMALLINT, exp.DataType.Type.INT, exp.DataType.Type.BIGINT,
                  exp.DataType.Type.DECIMAL, exp.DataType.Type.FLOAT, exp.DataType.Type.DOUBLE}
_NUMERIC_COLUMNS = {TypeName.SMALLINT, TypeName.INT, TypeName.BIGINT, TypeName.NUMERIC, TypeName.REAL,
                    TypeName.DOUBLE}


def unknown_arguments(query: exp.Expression, ctx: RewriteContext | None = None) -> exp.Expression:
    types = None
    for op in list(query.find_all(*_OPERATORS)):
        for literal, other in ((op.this, op.expression), (op.expression, op.this)):
            if isinstance(literal, exp.Literal) and literal.is_string:
                types = types or OperandTypes.of(query, ctx)
                t = numeric_type(other, types)
                if t is not None:
                    literal.replace(exp.Cast(this=literal.copy(), to=t))
                break
    for node in list(query.find_all(*_DOUBLE_FUNCTIONS, exp.Round, exp.Trunc)):
        x = node.this
        if isinstance(node, exp.Trunc) and node.args.get("decimals") is None and \
                (isinstance(x, exp.Null) or isinstance(x, exp.Literal) and x.is_string):
            raise AmbiguousFunction("function trunc(unknown) is not unique",
                                    hint="Could not choose a best candidate function. You might need to add "
                                         "explicit type casts.")
        if not (isinstance(x, exp.Literal) and x.is_string):
            continue
        if isinstance(node, exp.Round | exp.Trunc):
            if node.args.get("decimals") is None:
                continue  # (round('2.5') is a double's: `frontend.catalog.float_round` rounds it half to even)
            x.replace(exp.cast(x.copy(), "DECIMAL"))
        elif len([a for a in node.args.values() if a is not None]) == 1:
            x.replace(exp.cast(x.copy(), "DOUBLE"))
    return query


def numeric_type(e: exp.Expression, types: OperandTypes) -> exp.DataType | None:
    """The numeric type of `e` where the text shows it (PostgreSQL's type of a number literal: an
    integer, a bigint or a numeric by its size and form; a cast's; a catalog column's), else None."""
    while isinstance(e, exp.Paren | exp.Neg):
        e = e.this
    if is_number(e):
        text = e.name
        if any(c in text for c in ".eE"):
            return exp.DataType.build("DECIMAL")
        return exp.DataType.build("INT" if abs(int(text)) < 2**31 else "BIGINT" if abs(int(text)) < 2**63 else "DECIMAL")
    if isinstance(e, exp.Cast) and isinstance(e.to, exp.DataType) and e.to.this in _NUMERIC_CASTS:
        t = e.to.copy()
    elif isinstance(e, exp.Column) and (column := types.column_type(e)) is not None \
            and column.name in _NUMERIC_COLUMNS:
        t = exp.DataType.build(column.to_duckdb(), dialect="duckdb")
    else:
        return None
    # (an unknown literal becomes a plain numeric, not the other side's numeric(p, s): `'1.005' +
    # 1::numeric(12,2)` is 2.005)
    return exp.DataType.build("DECIMAL") if t.this == exp.DataType.Type.DECIMAL else t
