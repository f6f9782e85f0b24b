"""Quoted literals as the arguments of PostgreSQL's numeric functions in batch queries.

PostgreSQL types a quoted literal by the function it is passed to: ``abs('-5')``, ``ceil('2.5')``,
``floor('2.5')`` and ``sign('-3')`` take it as a double precision (the preferred type of the
numeric category, among the functions' numeric signatures), ``round('2.5', 1)`` as a numeric (the
only ``round`` of two arguments). DuckDB finds no single candidate for a string and fails ("Could
not choose a best candidate function"). The literal is cast here to the type PostgreSQL gives it;
input it does not read as a number then fails as PostgreSQL's does (22P02). (DuckDB's ``sign`` is
a tinyint of any argument: the sign of such a literal is cast back to a double.)

>>> import sqlglot
>>> unknown_arguments(sqlglot.parse_one("SELECT abs('-5'), round('2.5', 1), abs(x)", read="risingwave")).sql()
"SELECT ABS(CAST('-5' AS DOUBLE)), ROUND(CAST('2.5' AS DECIMAL), 1), ABS(x)"
"""

from __future__ import annotations

from sqlglot import exp

_DOUBLE_FUNCTIONS = (exp.Abs, exp.Ceil, exp.Floor, exp.Sign)


def unknown_arguments(query: exp.Expression, ctx: object = None) -> exp.Expression:
    for node in list(query.find_all(*_DOUBLE_FUNCTIONS, exp.Round)):
        x = node.this
        if not (isinstance(x, exp.Literal) and x.is_string):
            continue
        if isinstance(node, exp.Round):
            if node.args.get("decimals") is None:
                continue  # (round('2.5') is a double's: `frontend.catalog.float_round` rounds it half to even)
            x.replace(exp.cast(x.copy(), "DECIMAL"))
        elif len([a for a in node.args.values() if a is not None]) == 1:
            x.replace(exp.cast(x.copy(), "DOUBLE"))
            if isinstance(node, exp.Sign):  # (DuckDB's sign is a tinyint, PostgreSQL's of a double a double)
                node.replace(exp.cast(node.copy(), "DOUBLE"))
    return query
