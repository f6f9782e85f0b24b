"""Query blocks of a materialized view: FROM (relations, subqueries, CTEs, time windows, joins),
WHERE (with IN / EXISTS subqueries as semi / anti joins), the select list, GROUP BY, HAVING,
ORDER BY ... LIMIT, set operations."""

from __future__ import annotations

from typing import Any

from sqlglot import exp

from frontend.binder.bound import Scope
from frontend.binder.coercion import coerce, is_unknown_literal
from frontend.expr import (
    AggCallExpr,
    BoundExpr,
)
from risingspark.aggregate import agg_return_type
from risingspark.errors import (
    FeatureNotSupported,
    InvalidColumnReference,
    UndefinedFunction,
)
from risingspark.types import (
    BOOL,
    INT8,
    NUMERIC,
    VARCHAR,
    TypeName,
)

AGGS = (exp.Count, exp.Sum, exp.Avg, exp.Min, exp.Max, exp.LogicalAnd, exp.LogicalOr, exp.GroupConcat,
         exp.ArrayAgg)
AGG_KIND = {exp.Count: "count", exp.Sum: "sum", exp.Avg: "avg", exp.Min: "min", exp.Max: "max",
             exp.LogicalAnd: "bool_and", exp.LogicalOr: "bool_or", exp.GroupConcat: "string_agg",
             exp.ArrayAgg: "array_agg"}
# sqlglot's node names of aggregates, as Postgres calls them
AGG_NAMES = {"arrayagg": "array_agg", "groupconcat": "string_agg", "logicaland": "bool_and",
              "logicalor": "bool_or", "stddev": "stddev", "arrayconcatagg": "array_cat_agg"}


def bind_agg(node: Any, scope: Scope, filter_: BoundExpr | None = None) -> AggCallExpr:
    """An aggregate call: ``agg([DISTINCT] x [, delimiter] [ORDER BY ...]) [FILTER (WHERE ...)]``."""
    from frontend.binder.expression import bind_expr  # (its arguments are expressions, which hold aggregates)

    kind = AGG_KIND[type(node)]
    arg_node = node.this
    order_nodes: list[Any] = []
    if isinstance(arg_node, exp.Order):
        order_nodes = list(arg_node.expressions)
        arg_node = arg_node.this
    distinct = isinstance(arg_node, exp.Distinct)
    if distinct:
        if len(arg_node.expressions) != 1:
            raise FeatureNotSupported(f"{kind}(DISTINCT ...) over several arguments is not supported")
        arg_node = arg_node.expressions[0]
    if isinstance(node, exp.Count) and (arg_node is None or isinstance(arg_node, exp.Star)):
        if distinct:
            raise FeatureNotSupported("count(DISTINCT *) is not supported")
        return AggCallExpr("count_star", None, INT8, filter=filter_)
    arg = bind_expr(arg_node, scope, allow_agg=False)
    if is_unknown_literal(arg):
        arg = coerce(arg, {"count": VARCHAR, "string_agg": VARCHAR, "array_agg": VARCHAR, "bool_and": BOOL,
                           "bool_or": BOOL, "min": VARCHAR, "max": VARCHAR}.get(kind, NUMERIC))
    if arg.type.name in (TypeName.STRUCT, TypeName.JSONB) and (kind != "count" or distinct):
        # min/max/DISTINCT compare values; array_agg and string_agg of them are not supported either
        raise FeatureNotSupported(f"{kind}({'DISTINCT ' if distinct else ''}{arg.type.name.value}) in a materialized "
                                  f"view is not supported yet")
    if arg.type.name is TypeName.INTERVAL and (kind != "count" or distinct):
        # a stored interval is not comparable as stored ('1 mon' = '30 days'), and sum/avg need
        # interval arithmetic the stream engine lacks
        raise FeatureNotSupported(f"{kind}({'DISTINCT ' if distinct else ''}interval) in a materialized view is not "
                                  f"supported yet")
    if kind == "array_agg" and filter_ is not None:
        # FILTER is planned as agg(CASE WHEN c THEN x END), which would add NULL elements
        raise FeatureNotSupported("array_agg(...) FILTER (WHERE ...) in a materialized view is not supported yet")
    delimiter = None
    delimiter_arg: BoundExpr | None = None
    if kind == "string_agg":
        sep = node.args.get("separator")
        if sep is None:
            raise UndefinedFunction(f"function string_agg({arg.type.display()}) does not exist",
                                    hint="No function matches the given name and argument types.")
        if isinstance(sep, exp.Null):
            delimiter = ""  # Postgres: a NULL delimiter concatenates without one
        elif isinstance(sep, exp.Literal) and sep.is_string:
            delimiter = sep.this
        elif distinct:
            raise FeatureNotSupported("string_agg(DISTINCT ...) with a delimiter that is not a constant is not "
                                      "supported")
        else:  # each value but the first is preceded by its own row's delimiter (NULL: none)
            delimiter_arg = coerce(bind_expr(sep, scope, allow_agg=False), VARCHAR)
    order: list[tuple[BoundExpr, bool, bool]] = []
    for o in order_nodes:
        e = bind_expr(o.this, scope, allow_agg=False)
        if distinct and e != arg:
            raise InvalidColumnReference("in an aggregate with DISTINCT, ORDER BY expressions must appear in "
                                         "argument list")
        desc = bool(o.args.get("desc"))
        order.append((e, desc, bool(o.args.get("nulls_first", desc))))
    if kind not in ("string_agg", "array_agg"):
        order = []  # only string_agg's and array_agg's results depend on the order of their inputs
    if kind in ("min", "max", "bool_and", "bool_or"):
        distinct = False  # the same result with or without DISTINCT
    return AggCallExpr(kind, arg, agg_return_type(kind, arg.type), distinct, tuple(order), delimiter, filter_,
                       delimiter_arg)
