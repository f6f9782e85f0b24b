"""Arguments of aggregates that DuckDB takes otherwise than PostgreSQL, in batch queries.

* ``min``, ``max``, ``sum`` and ``avg`` of a boolean: PostgreSQL has none of them (42883 ``function
  min(boolean) does not exist``; ``bool_and``, ``bool_or`` and ``every`` are its aggregates of
  booleans); DuckDB answers false, true, the count of trues. Where the text shows the argument is a
  boolean (`frontend.catalog.operand_types`: a boolean literal, a cast, a catalog column, a column
  of a subquery, CTE or VALUES given by those) the query fails so here, even over no rows; where it
  does not (a comparison, a column of a set operation...), DuckDB is
  asked when it binds the argument (it folds the ``typeof``), which fails the query on its first
  row::

      min(CASE WHEN typeof(x) = 'BOOLEAN' THEN error('...') ELSE x END)

* ``bool_and``, ``bool_or`` and ``every`` of a number: PostgreSQL has them for booleans only
  (42883 ``function bool_and(integer) does not exist``); DuckDB casts the number to a boolean. Where
  the text shows the argument is a number the query fails so; else it is left to DuckDB.
* ``every(b)``, PostgreSQL's other name of ``bool_and`` (DuckDB has none): ``bool_and(b)``.
* ``string_agg(s, NULL)``: PostgreSQL joins the values with no delimiter (a NULL delimiter is
  none); DuckDB answers NULL. A NULL delimiter (``NULL``, ``NULL::text``) is ``''`` here. DuckDB
  takes only a constant delimiter: another is 0A000 (`frontend.batch_errors`).

>>> import sqlglot
>>> q = sqlglot.parse_one("SELECT string_agg(s, NULL), max(x) FROM t", read="risingwave")
>>> aggregate_arguments(q).sql("duckdb")
"SELECT LISTAGG(s, ''), MAX(CASE WHEN TYPEOF(x) = 'BOOLEAN' THEN ERROR('[rs:42883] function max(boolean) does not exist') ELSE x END) FROM t"
>>> aggregate_arguments(sqlglot.parse_one("SELECT every(b) FROM t", read="risingwave")).sql("duckdb")
'SELECT BOOL_AND(CAST(b AS BOOLEAN)) FROM t'
>>> aggregate_arguments(sqlglot.parse_one("SELECT min(true)", read="risingwave"))
Traceback (most recent call last):
  ...
risingspark.errors.UndefinedFunction: function min(boolean) does not exist
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlglot import exp

from frontend.catalog.composite import failure_call
from frontend.catalog.operand_types import OperandTypes, no_function
from risingspark.types import TypeName

if TYPE_CHECKING:
    from frontend.catalog.rewrite import RewriteContext

_NOT_BOOLEAN = ("real", "double", "exact", "text")  # (`OperandTypes.kind`: "other" may be a boolean)
_NUMBERS = (TypeName.SMALLINT, TypeName.INT, TypeName.BIGINT, TypeName.NUMERIC, TypeName.REAL, TypeName.DOUBLE)
_NO_BOOLEAN: dict[type[exp.Expr], str] = {exp.Min: "min", exp.Max: "max", exp.Sum: "sum", exp.Avg: "avg"}


def aggregate_arguments(query: exp.Expression, ctx: RewriteContext | None = None) -> exp.Expression:
    types: OperandTypes | None = None
    for node in list(query.find_all(exp.GroupConcat, exp.Anonymous, exp.LogicalAnd, exp.LogicalOr, *_NO_BOOLEAN)):
        if isinstance(node, exp.Anonymous):
            if str(node.this).lower() == "every" and len(node.expressions) == 1:
                types = types or OperandTypes.of(query, ctx)
                _boolean_argument("every", node.expressions[0], types)
                node.replace(exp.LogicalAnd(this=node.expressions[0].copy()))
            continue
        if isinstance(node, exp.LogicalAnd | exp.LogicalOr):
            types = types or OperandTypes.of(query, ctx)
            _boolean_argument("bool_and" if isinstance(node, exp.LogicalAnd) else "bool_or", node.this, types)
            continue
        if isinstance(node, exp.GroupConcat):
            sep = node.args.get("separator")
            if sep is not None and _null(sep):
                node.set("separator", exp.Literal.string(""))
            continue
        arg = _argument(node)
        if arg is None or len(node.expressions) > 0:
            continue  # (min(a, b): another function, left to DuckDB)
        types = types or OperandTypes.of(query, ctx)
        t = types.type_of(arg)
        error = no_function(_NO_BOOLEAN[type(node)], "boolean")
        if t is not None and t.name is TypeName.BOOLEAN:
            raise error
        if t is None and types.kind(arg) not in _NOT_BOOLEAN:  # (a sum of doubles keeps its class, for later rules)
            check = exp.EQ(this=exp.Anonymous(this="typeof", expressions=[arg.copy()]),
                           expression=exp.Literal.string("BOOLEAN"))
            arg.replace(exp.Case(ifs=[exp.If(this=check, true=failure_call(error))], default=arg.copy()))
    return query


def _boolean_argument(name: str, arg: exp.Expression, types: OperandTypes) -> None:
    """Fail as PostgreSQL for `name` (``bool_and``...) of an argument the text shows is a number."""
    t = types.type_of(arg)
    if t is not None and t.name in _NUMBERS:
        raise no_function(name, t.name.value)


def _argument(node: exp.Expr) -> exp.Expression | None:
    """An aggregate's argument, under its ORDER BY and DISTINCT."""
    arg = node.this
    while isinstance(arg, exp.Order):
        arg = arg.this
    if isinstance(arg, exp.Distinct):
        return arg.expressions[0] if len(arg.expressions) == 1 else None
    return arg if isinstance(arg, exp.Expression) else None


def _null(e: exp.Expression) -> bool:
    """A NULL, parenthesized or cast (``NULL::text``)."""
    while isinstance(e, exp.Paren | exp.Cast):
        e = e.this
    return isinstance(e, exp.Null)
