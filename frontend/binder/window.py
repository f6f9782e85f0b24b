"""Window functions in a materialized view's select list: ``f(...) OVER (PARTITION BY p ORDER BY o
[ROWS | RANGE frame])``, bound into an `OverWindow` (planned as a StreamOverWindow,
`compute.executor.over_window`).

One block's window functions share one PARTITION BY and ORDER BY (RisingWave plans one OverWindow
per window). A lone ``ROW_NUMBER()`` keeps its own plan (`RowNumber`: a group TopN, which a filter
``rn <= n`` above turns into a top-n), since it is cheaper.

Supported: row_number, rank, dense_rank, lag / lead (offset and default constants), first_value,
last_value, and sum, count, avg, min, max; frames ROWS with offsets or UNBOUNDED, RANGE with UNBOUNDED
or CURRENT ROW bounds (the default). What would depend on an arbitrary order in PostgreSQL
(row_number, lag, lead, first_value, last_value or a ROWS frame without ORDER BY) fails with 0A000,
as do RANGE offsets, GROUPS, EXCLUDE, DISTINCT and FILTER.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from sqlglot import exp

from frontend.binder.bound import Scope
from frontend.binder.coercion import coerce, common_of
from frontend.binder.expression import bind_expr
from frontend.expr import BoundExpr, Literal
from risingspark.aggregate import agg_return_type
from risingspark.errors import FeatureNotSupported
from risingspark.types import INT8, DataType, TypeName

_AGGS = {exp.Sum: "sum", exp.Count: "count", exp.Avg: "avg", exp.Min: "min", exp.Max: "max"}
_RANKING = {exp.RowNumber: "row_number", exp.Rank: "rank", exp.DenseRank: "dense_rank"}
_SHIFT = {exp.Lag: "lag", exp.Lead: "lead"}
_VALUE = {exp.FirstValue: "first_value", exp.LastValue: "last_value"}
DEFAULT_FRAME = ("RANGE", None, "PRECEDING", 0, "CURRENT")


@dataclass(frozen=True)
class WindowItem:
    """One window function, the select item at `index`."""

    index: int
    kind: str
    arg: BoundExpr | None
    type: DataType
    display: str
    offset: int = 1
    default: Any = None  # lag / lead's, a JSON value (numbers as text)
    frame: tuple = DEFAULT_FRAME  # (mode, start offset, start side, end offset, end side)


@dataclass(frozen=True)
class OverWindow:
    partition_by: tuple[BoundExpr, ...]
    order_by: tuple[tuple[BoundExpr, bool, bool], ...]  # (expression, descending, nulls first)
    calls: tuple[WindowItem, ...]


def window_spec(node: exp.Window, scope: Scope) -> tuple[tuple[BoundExpr, ...], tuple[tuple[BoundExpr, bool, bool], ...]]:
    """The bound PARTITION BY and ORDER BY of `node`."""
    if node.args.get("alias"):
        raise FeatureNotSupported("named windows (OVER w) in a materialized view are not supported yet")
    partition = tuple(bind_expr(p, scope, allow_agg=False) for p in node.args.get("partition_by") or [])
    order = node.args.get("order")
    keys = []
    for o in order.expressions if order else []:
        desc = bool(o.args.get("desc"))
        nulls_first = o.args.get("nulls_first")
        keys.append((bind_expr(o.this, scope, allow_agg=False), desc,
                     bool(nulls_first) if nulls_first is not None else desc))
    return partition, tuple(keys)


def bind_window_call(node: exp.Window, index: int, scope: Scope, ordered: bool) -> WindowItem:
    func = node.this
    if isinstance(func, exp.Filter):
        raise FeatureNotSupported("FILTER in a window function of a materialized view is not supported yet")
    frame = _frame(node.args.get("spec"))
    display = node.sql(dialect="postgres")
    if type(func) in _RANKING:
        kind = _RANKING[type(func)]
        if kind == "row_number" and not ordered:
            raise FeatureNotSupported("ROW_NUMBER() without ORDER BY in a materialized view is not supported: its "
                                      "numbering would be arbitrary")
        return WindowItem(index, kind, None, INT8, display)
    if type(func) in _SHIFT or type(func) in _VALUE:
        kind = _SHIFT.get(type(func)) or _VALUE[type(func)]
        if not ordered:
            raise FeatureNotSupported(f"{kind}() without ORDER BY in a materialized view is not supported: its "
                                      f"result would be arbitrary")
        arg = bind_expr(func.this, scope, allow_agg=False)
        if kind in _VALUE.values():
            return WindowItem(index, kind, arg, arg.type, display, frame=frame)
        offset = _constant_int(func.args.get("offset"), f"the offset of {kind}()") if func.args.get("offset") else 1
        default = None
        if func.args.get("default") is not None:
            # lag(anycompatible, int, anycompatible): the value and the default in their common type
            given = bind_expr(func.args["default"], scope, allow_agg=False)
            common = common_of([arg, given])
            arg = coerce(arg, common)
            default = _constant(coerce(given, common), kind)
        return WindowItem(index, kind, arg, arg.type, display, offset, default)
    if type(func) in _AGGS:
        kind = _AGGS[type(func)]
        inner = func.this
        if isinstance(inner, exp.Distinct):
            raise FeatureNotSupported(f"{kind}(DISTINCT ...) OVER in a materialized view is not supported yet")
        if frame[0] == "ROWS" and not ordered:
            raise FeatureNotSupported("a ROWS frame without ORDER BY in a materialized view is not supported: its "
                                      "rows would be arbitrary")
        if kind == "count" and (inner is None or isinstance(inner, exp.Star)):
            return WindowItem(index, "count_star", None, INT8, display, frame=frame)
        arg = bind_expr(inner, scope, allow_agg=False)
        return WindowItem(index, kind, arg, agg_return_type(kind, arg.type), display, frame=frame)
    name = func.sql_name().lower() if isinstance(func, exp.Func) else type(func).__name__.lower()
    raise FeatureNotSupported(f"window function {name}() in a materialized view is not supported yet")


def _frame(spec: exp.WindowSpec | None) -> tuple:
    if spec is None:
        return DEFAULT_FRAME
    if spec.args.get("exclude"):
        raise FeatureNotSupported("EXCLUDE in a window frame of a materialized view is not supported yet")
    mode = (spec.args.get("kind") or "").upper()
    if mode not in ("ROWS", "RANGE"):
        raise FeatureNotSupported(f"{mode or 'this'} window frame in a materialized view is not supported yet")
    start = _bound(spec.args.get("start"), spec.args.get("start_side"), mode)
    end = _bound(spec.args.get("end"), spec.args.get("end_side"), mode) if spec.args.get("end") is not None \
        else (0, "CURRENT")
    return (mode, *start, *end)


def _bound(value: Any, side: Any, mode: str) -> tuple[int | None, str]:
    text = value.upper() if isinstance(value, str) else None
    if text == "CURRENT ROW":
        return 0, "CURRENT"
    side = str(side or "").upper()
    if text == "UNBOUNDED":
        return None, side
    if mode == "RANGE":
        raise FeatureNotSupported("RANGE frames with offsets in a materialized view are not supported yet")
    return _constant_int(value, "a frame offset"), side


def _constant_int(node: Any, what: str) -> int:
    if isinstance(node, exp.Literal) and not node.is_string and node.this.isdigit():
        return int(node.this)
    raise FeatureNotSupported(f"{what} in a materialized view must be a non-negative integer constant")


def _constant(value: BoundExpr, kind: str) -> Any:
    inner = value.operand if not isinstance(value, Literal) and hasattr(value, "operand") else value
    if not isinstance(inner, Literal):
        raise FeatureNotSupported(f"the default of {kind}() in a materialized view must be a constant")
    v = inner.value
    if v is None:
        return None
    t = value.type
    if t.name is TypeName.NUMERIC:
        return str(Decimal(str(v)))
    if t.is_integer:
        return int(v)
    if t.name in (TypeName.REAL, TypeName.DOUBLE):
        return float(v)
    if t.name in (TypeName.VARCHAR, TypeName.BOOLEAN):
        return v
    raise FeatureNotSupported(f"a default of type {t.display()} for {kind}() in a materialized view")

