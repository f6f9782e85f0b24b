"""Query blocks of a materialized view: FROM (relations, subqueries, CTEs, time windows, joins),
WHERE (with IN / EXISTS subqueries as semi / anti joins), the select list, GROUP BY, HAVING,
ORDER BY ... LIMIT, set operations."""

from __future__ import annotations

from sqlglot import exp

from frontend.binder.coercion import coerce, common_of
from frontend.expr import (
    BoundExpr,
    Cast,
    FuncCall,
    Literal,
)
from risingspark.errors import (
    FeatureNotSupported,
    UndefinedFunction,
)
from risingspark.types import (
    FLOAT8,
    INT4,
    NUMERIC,
    TIMESTAMP,
    VARCHAR,
    TypeName,
)

_FUNCS = {"lower": "lower", "upper": "upper", "length": "char_length", "char_length": "char_length",
          "abs": "abs", "round": "round", "coalesce": "coalesce", "concat": "concat", "nullif": "nullif",
          "trim": "trim", "substr": "substring", "substring": "substring", "greatest": "greatest",
          "least": "least", "ceil": "ceil", "floor": "floor"}




_TRUNC_UNITS = ("microseconds", "milliseconds", "second", "minute", "hour", "day", "week", "month", "quarter", "year")


def bind_date_trunc(node: exp.Expression, rec) -> BoundExpr:
    """``date_trunc(unit, ts)``: `ts` truncated to the unit (weeks start on Monday, as Postgres)."""
    unit = node.args.get("unit")
    name = (unit.name if unit is not None else "").lower().rstrip("s")
    name = {"microsecond": "microseconds", "millisecond": "milliseconds"}.get(name, name)
    if name not in _TRUNC_UNITS:
        raise FeatureNotSupported(f'date_trunc unit "{name}" is not supported in a materialized view yet')
    x = rec(node.this)
    if x.type.name is TypeName.DATE:
        x = Cast(x, TIMESTAMP)
    if x.type.name not in (TypeName.TIMESTAMP, TypeName.TIMESTAMPTZ):
        raise UndefinedFunction(f"function date_trunc(unknown, {x.type.display()}) does not exist")
    spark_unit = {"microseconds": "MICROSECOND", "milliseconds": "MILLISECOND"}.get(name, name.upper())
    return FuncCall("date_trunc", (Literal(spark_unit, VARCHAR), x), x.type)


def bind_func(node: exp.Func, rec) -> BoundExpr:
    name = (node.this if isinstance(node, exp.Anonymous) else node.sql_name()).lower()
    name = {"coalesce": "coalesce", "lower": "lower", "upper": "upper", "abs": "abs", "round": "round",
            "length": "length", "concat": "concat", "nullif": "nullif", "trim": "trim", "substring": "substring",
            "greatest": "greatest", "least": "least", "ceil": "ceil", "floor": "floor"}.get(name, name)
    if name in ("current_timestamp", "now", "localtimestamp", "current_date", "current_time", "localtime"):
        raise FeatureNotSupported(f"{name}() in a materialized view is supported only in a temporal filter: a "
                                  f"WHERE condition `column > now() - INTERVAL '...'` (or >=, <, <=) joined by AND")
    args = [rec(a) for a in func_args(node)]
    if name not in _FUNCS:
        types = ", ".join(a.type.display() for a in args)
        raise UndefinedFunction(f"function {name}({types}) does not exist",
                                hint="No function matches the given name and argument types.")
    if name in ("lower", "upper", "trim", "concat", "substring", "substr"):
        args = [coerce(a, VARCHAR) if i == 0 or name == "concat" else coerce(a, INT4) for i, a in enumerate(args)]
        return FuncCall(name, tuple(args), VARCHAR, _FUNCS[name])
    if name in ("length", "char_length"):
        return FuncCall("length", (coerce(args[0], VARCHAR),), INT4, "char_length")
    if name in ("coalesce", "greatest", "least", "nullif"):
        t = common_of(args)
        if name != "coalesce" and t.name in (TypeName.STRUCT, TypeName.JSONB):
            raise FeatureNotSupported(f"{name}() of {t.name.value} values in a materialized view is not supported")
        return FuncCall(name, tuple(coerce(a, t) for a in args), t, _FUNCS[name])
    if name in ("abs", "ceil", "floor"):
        t = args[0].type
        return FuncCall(name, (args[0],), t, _FUNCS[name])
    if name == "round":
        t = args[0].type if args[0].type.name in (TypeName.NUMERIC, TypeName.DOUBLE) else \
            (FLOAT8 if args[0].type.name is TypeName.REAL else NUMERIC)
        if len(args) == 1:  # (a double rounds half to even, as PostgreSQL's rint; a numeric away from zero)
            return FuncCall("round", (coerce(args[0], t),), t, "rint" if t.name is TypeName.DOUBLE else "round")
        return FuncCall("round", (coerce(args[0], NUMERIC), coerce(args[1], INT4)), NUMERIC, "round")
    raise UndefinedFunction(f"function {name} does not exist")


def func_args(node: exp.Func) -> list[exp.Expression]:
    if isinstance(node, exp.Anonymous):
        return list(node.expressions)
    out = []
    for key in node.arg_types:
        v = node.args.get(key)
        if v is None or isinstance(v, bool):  # (a flag of the parser's, as greatest's ignore_nulls)
            continue
        out.extend(v if isinstance(v, list) else [v])
    return out
