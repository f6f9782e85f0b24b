"""Query blocks of a materialized view: FROM (relations, subqueries, CTEs, time windows, joins),
WHERE (with IN / EXISTS subqueries as semi / anti joins), the select list, GROUP BY, HAVING,
ORDER BY ... LIMIT, set operations."""

from __future__ import annotations

from typing import Any

from sqlglot import exp

from frontend.binder import composite, datetime
from frontend.binder.aggregate import AGG_NAMES, AGGS, bind_agg
from frontend.binder.bound import Scope
from frontend.binder.coercion import (
    check_number_input,
    coerce,
    common_of,
    common_type,
    is_unknown_literal,
    is_untyped,
    literal,
)
from frontend.binder.extract import bind_extract, bind_to_char
from frontend.binder.function import bind_date_trunc, bind_func
from frontend.binder.relation import ident
from frontend.binder.strings import bind_concat_operator, bind_string, is_string_node
from frontend.binder.udf import bind_udf, resolved_function
from frontend.dialect import PG_NAME
from frontend.expr import (
    AggCallExpr,
    BinaryOp,
    BoundExpr,
    Case,
    Cast,
    InList,
    InputRef,
    Like,
    Literal,
    UnaryOp,
)
from risingspark.errors import (
    FeatureNotSupported,
    GroupingError,
    UndefinedFunction,
)
from risingspark.types import (
    BOOL,
    VARCHAR,
    DataType,
    TypeName,
)


def strip_cast(e: BoundExpr) -> BoundExpr:
    """A column under a widening numeric cast (the implicit cast to a common type), as the column:
    equal values stay equal without it. A narrowing cast (``x::int`` of a numeric) is kept."""
    return e.operand if isinstance(e, Cast) and isinstance(e.operand, InputRef) and widens(e.operand.type, e.type) \
        else e


_RANK = {TypeName.SMALLINT: 0, TypeName.INT: 1, TypeName.BIGINT: 2, TypeName.NUMERIC: 3, TypeName.REAL: 4,
         TypeName.DOUBLE: 5}


def widens(source: DataType, target: DataType) -> bool:
    """Whether casting `source` to `target` keeps every value (PostgreSQL's implicit numeric casts:
    up the integer types, to numeric, to float; numeric to a numeric of no lower scale and integer
    digits)."""
    if not (source.is_numeric and target.is_numeric) or _RANK[target.name] < _RANK[source.name]:
        return False
    if source.name is TypeName.NUMERIC and target.name is TypeName.NUMERIC:
        sp, ss = source.precision, source.scale
        tp, ts = target.precision, target.scale
        if tp is None:
            return True
        return sp is not None and ss is not None and ts is not None and ts >= ss and tp - ts >= sp - ss
    return True


def check_grouped(e: BoundExpr, group_by: tuple[BoundExpr, ...], what: str) -> None:
    """Every column outside an aggregate must be a group key (or inside one)."""
    if e in group_by or isinstance(e, AggCallExpr):
        return
    if isinstance(e, InputRef):
        raise GroupingError(f'column "{e.name}" must appear in the GROUP BY clause or be used in an '
                            f"aggregate function")
    for c in e.children():
        check_grouped(c, group_by, what)


# window functions whose node name drops PostgreSQL's underscore
_WINDOW_NAMES = {"rownumber": "row_number", "denserank": "dense_rank", "firstvalue": "first_value",
                 "lastvalue": "last_value", "percentrank": "percent_rank", "cumedist": "cume_dist",
                 "nthvalue": "nth_value"}


def output_name(node: exp.Expression) -> str:
    """The column name Postgres gives an unaliased select item."""
    if isinstance(node, exp.Column):
        return ident(node.this)
    if isinstance(node, exp.Paren):
        return output_name(node.this)
    if isinstance(node, exp.Dot) and isinstance(node.expression, exp.Identifier):  # (s).a
        return ident(node.expression)
    if composite.is_jsonb_node(node) and not isinstance(node, exp.Anonymous):  # an operator
        return "?column?"
    if isinstance(node, exp.Tuple):
        return "row"
    if isinstance(node, exp.Cast):
        return output_name(node.this) if isinstance(node.this, exp.Column) else node.to.sql(dialect="postgres").lower()
    if isinstance(node, exp.Count):
        return "count"
    if isinstance(node, exp.Filter | exp.Window):
        return output_name(node.this)
    if isinstance(node, exp.Func) and not isinstance(node, exp.Anonymous) and isinstance(node.meta.get(PG_NAME), str):
        return node.meta[PG_NAME].lower()  # (the name as written: `frontend.dialect`)
    if isinstance(node, exp.AggFunc) and node.key in AGG_NAMES:
        return AGG_NAMES[node.key]
    if node.key in _WINDOW_NAMES:
        return _WINDOW_NAMES[node.key]
    if isinstance(node, exp.AggFunc | exp.Func) and not isinstance(node, exp.Anonymous):
        return node.key.lower() if node.key != "anonymous" else "?column?"
    if isinstance(node, exp.Anonymous):
        fn = resolved_function(node)  # a user-defined function: its own name, not the engines'
        return fn.name if fn is not None else str(node.this).lower()
    return "?column?"




_COMPARE = {exp.EQ: "=", exp.NEQ: "<>", exp.LT: "<", exp.LTE: "<=", exp.GT: ">", exp.GTE: ">=",
            exp.NullSafeEQ: "IS NOT DISTINCT FROM", exp.NullSafeNEQ: "IS DISTINCT FROM"}
_ARITH = {exp.Add: "+", exp.Sub: "-", exp.Mul: "*", exp.Div: "/", exp.Mod: "%"}

# name -> (Spark function, result type rule)


def bind_expr(node: Any, scope: Scope, *, allow_agg: bool) -> BoundExpr:
    def rec(n: Any) -> BoundExpr:
        return bind_expr(n, scope, allow_agg=allow_agg)

    if isinstance(node, exp.Paren):
        return rec(node.this)
    if isinstance(node, exp.Column):
        if isinstance(node.this, exp.Star):
            raise FeatureNotSupported("* is not allowed here")
        return scope.column(node)
    if isinstance(node, exp.Literal):
        return literal(node)
    if isinstance(node, exp.Boolean):
        return Literal(bool(node.this), BOOL)
    if isinstance(node, exp.Null):
        return Literal(None, VARCHAR)
    if (fn := resolved_function(node)) is not None:
        return bind_udf(node, fn, rec)
    if isinstance(node, exp.Dot) and isinstance(node.expression, exp.Identifier):
        return composite.bind_field(node, rec)
    if composite.is_row(node):
        return composite.bind_row(node, rec)
    if composite.is_jsonb_node(node):
        return composite.bind_jsonb(node, rec)
    if isinstance(node, exp.Lambda):
        return composite.bind_jsonb(composite.unlambda(node), rec)
    if isinstance(node, exp.Cast | exp.TryCast):
        target = DataType.parse(node.to.sql(dialect="postgres"))
        if target.element is not None:
            raise FeatureNotSupported(f"casts to {target.display()} in a materialized view are not supported yet")
        inner = rec(node.this)
        if {target.name, inner.type.name} & {TypeName.STRUCT, TypeName.JSONB}:
            return composite.cast_value(inner, target)
        if TypeName.INTERVAL in (target.name, inner.type.name):
            return datetime.cast_interval(inner, target)
        if target.is_numeric and isinstance(inner, Literal) and is_unknown_literal(inner):  # ('x'::int: 22P02)
            check_number_input(str(inner.value), target)
        # (a quoted literal or a bare NULL is bound as a varchar that takes its type from context: cast
        # to text, it stays a cast, typed text as PostgreSQL's, so `k = 'a'::text` has no operator)
        return Cast(inner, target) if inner.type != target or is_untyped(inner) else inner
    if isinstance(node, exp.Interval):
        return datetime.interval_literal(node)
    if type(node) in _COMPARE:
        op, a, b = _COMPARE[type(node)], rec(node.left), rec(node.right)
        return composite.jsonb_equality(op, a, b) or datetime.compare(op, a, b)
    if type(node) in _ARITH:
        op = _ARITH[type(node)]
        a, b = rec(node.left), rec(node.right)
        if op == "-" and a.type.name is TypeName.JSONB:
            return composite.jsonb_minus(a, b)
        if datetime.involves_datetime(a, b):
            return datetime.arith(op, a, b)
        a, b, t = common_type(a, b, op)
        if not t.is_numeric:
            raise UndefinedFunction(f"operator does not exist: {a.type.display()} {op} {b.type.display()}")
        return BinaryOp(op, a, b, t)
    if isinstance(node, exp.DPipe):
        return bind_concat_operator(rec(node.left), rec(node.right))
    if isinstance(node, exp.And | exp.Or):
        op = "AND" if isinstance(node, exp.And) else "OR"
        return BinaryOp(op, coerce(rec(node.left), BOOL, op), coerce(rec(node.right), BOOL, op), BOOL)
    if isinstance(node, exp.Not):
        inner = node.this
        if isinstance(inner, exp.Is):
            return bind_is(inner, rec, negated=not inner.args.get("negate"))
        return UnaryOp("NOT", coerce(rec(inner), BOOL, "NOT"), BOOL)
    if isinstance(node, exp.Neg):
        x = rec(node.this)
        if isinstance(x, Literal) and x.type.is_numeric and isinstance(x.value, int | float):
            return Literal(-x.value, x.type)
        if isinstance(x, Literal) and x.type.is_numeric and isinstance(x.value, str):
            return Literal("-" + x.value, x.type)
        return datetime.unary_minus(x) or UnaryOp("NEG", x, x.type)
    if isinstance(node, exp.Is):
        return bind_is(node, rec, negated=bool(node.args.get("negate")))
    if isinstance(node, exp.Between):
        x, lo, hi = rec(node.this), rec(node.args["low"]), rec(node.args["high"])
        return BinaryOp("AND", datetime.compare(">=", x, lo), datetime.compare("<=", x, hi), BOOL)
    if isinstance(node, exp.Exists | exp.Subquery) or (isinstance(node, exp.In) and node.args.get("query")):
        raise FeatureNotSupported("subqueries in a materialized view are supported in FROM and as IN / EXISTS "
                                  "conditions joined by AND in WHERE, not here")
    if isinstance(node, exp.In):
        if node.args.get("field"):
            raise FeatureNotSupported("IN (subquery) in a materialized view is not supported yet")
        x, bound = rec(node.this), [rec(i) for i in node.expressions]
        typed = [v for v in (x, *bound) if not is_untyped(v)]
        if typed and all(v.type.is_numeric for v in typed):  # (PostgreSQL: one type over x and every item)
            t = common_of([x, *bound])
            x, items = coerce(x, t), tuple(coerce(i, t) for i in bound)
        else:  # (else PostgreSQL compares item by item: `k IN (1, '1'::text)` has no operator)
            items = tuple(common_type(x, i, "IN")[1] for i in bound)
        if datetime.is_interval(x):
            raise FeatureNotSupported("IN over intervals in a materialized view is not supported yet; use = ... OR")
        return InList(x, items, False)
    if isinstance(node, exp.Like | exp.ILike):
        # (``x NOT LIKE p`` parses as a Like marked `negate`; ``NOT x LIKE p`` as a Not over one)
        return Like(coerce(rec(node.this), VARCHAR), coerce(rec(node.expression), VARCHAR),
                    bool(node.args.get("negate")), isinstance(node, exp.ILike))
    if isinstance(node, exp.Case):
        if node.this is not None:
            raise FeatureNotSupported("CASE <expr> WHEN ... in a materialized view is not supported yet")
        whens = [(coerce(rec(w.this), BOOL, "CASE"), rec(w.args["true"])) for w in node.args["ifs"]]
        default = rec(node.args["default"]) if node.args.get("default") else None
        values = [v for _, v in whens] + ([default] if default is not None else [])
        t = common_of(values)
        return Case(tuple((c, coerce(v, t)) for c, v in whens), coerce(default, t) if default else None, t)
    if isinstance(node, AGGS) or (isinstance(node, exp.Filter) and isinstance(node.this, exp.AggFunc)):
        if not allow_agg:
            raise GroupingError("aggregate functions are not allowed here")
        if isinstance(node, exp.Filter):
            if not isinstance(node.this, AGGS):
                return bind_expr(node.this, scope, allow_agg=True)  # names the unsupported aggregate
            cond = coerce(bind_expr(node.expression.this, scope, allow_agg=False), BOOL, "FILTER")
            return bind_agg(node.this, scope, cond)
        return bind_agg(node, scope)
    if isinstance(node, exp.AggFunc):
        name = AGG_NAMES.get(node.key, node.key)
        raise FeatureNotSupported(f"aggregate function {name}() in a materialized view is not supported yet")
    if isinstance(node, exp.TimestampTrunc | exp.DateTrunc):
        return bind_date_trunc(node, rec)
    if isinstance(node, exp.Extract):
        return bind_extract(node, rec)
    if isinstance(node, exp.TimeToStr):
        return bind_to_char(node, rec)
    if is_string_node(node):
        return bind_string(node, rec)
    if isinstance(node, exp.Func):
        return bind_func(node, rec)
    raise FeatureNotSupported(f"expression {node.sql(dialect='postgres')!r} is not supported in a "
                              f"materialized view yet")




def bind_is(node: exp.Is, rec, *, negated: bool) -> BoundExpr:
    x = rec(node.this)
    target = node.expression
    if isinstance(target, exp.Null):
        if x.type.name is TypeName.STRUCT:
            return composite.struct_is_null(x, negated)
        return UnaryOp("IS NOT NULL" if negated else "IS NULL", x, BOOL)
    if isinstance(target, exp.Boolean):
        e = UnaryOp("IS TRUE" if target.this else "IS FALSE", coerce(x, BOOL, "IS"), BOOL)
        return UnaryOp("NOT", e, BOOL) if negated else e
    raise FeatureNotSupported(f"IS {target.sql()} is not supported")
