"""A bound join condition as the Arrow expression tree a join executor evaluates while it matches
rows (`risingspark.arrow_expr`): comparisons, AND / OR / NOT, IS [NOT] NULL, + - * on integers and
widening numeric casts, over columns and constants. What Arrow would compute differently from
PostgreSQL (division, decimal arithmetic, narrowing casts, string functions, comparisons of floats,
where PostgreSQL orders NaN above every number and Arrow's NaN compares false) is not translated:
such a condition fails at CREATE with 0A000, never evaluates with other semantics.
"""

from __future__ import annotations

from typing import Any

from frontend.binder.coercion import as_literal
from frontend.binder.expression import widens
from frontend.expr import BinaryOp, BoundExpr, Cast, InputRef, Literal, UnaryOp
from risingspark.errors import FeatureNotSupported
from risingspark.types import TypeName

_COMPARE = {"=": "equal", "<>": "not_equal", "<": "less", "<=": "less_equal", ">": "greater", ">=": "greater_equal"}
_ARITH = {"+": "add_checked", "-": "subtract_checked", "*": "multiply_checked"}


def _names(e: BoundExpr) -> set[TypeName]:
    """The type names of `e` and, through casts, of what it casts (a float cast to numeric still
    holds NaN)."""
    names = {e.type.name}
    while isinstance(e, Cast):
        e = e.operand
        names.add(e.type.name)
    return names


def arrow_condition(e: BoundExpr, what: str) -> dict[str, Any]:
    """`e` as an Arrow expression tree (`what` names the condition in an error)."""
    if isinstance(e, InputRef):
        return {"col": e.name}
    if isinstance(literal := as_literal(e), Literal):  # ('x'::text: typed, a constant still)
        return {"lit": literal.value, "type": literal.type.to_json()}
    if isinstance(e, Cast) and widens(e.operand.type, e.type):
        return {"cast": e.type.to_json(), "arg": arrow_condition(e.operand, what)}
    if isinstance(e, BinaryOp):
        if e.op in _COMPARE and {TypeName.REAL, TypeName.DOUBLE} & (_names(e.left) | _names(e.right)):
            raise FeatureNotSupported(f"{what} ({e.display()}) comparing floating-point values in a materialized "
                                      f"view is not supported yet (NaN orders as in PostgreSQL only in filters)")
        args = [arrow_condition(e.left, what), arrow_condition(e.right, what)]
        if e.op in _COMPARE:
            return {"call": _COMPARE[e.op], "args": args}
        if e.op in ("AND", "OR"):
            return {"call": "and_kleene" if e.op == "AND" else "or_kleene", "args": args}
        if e.op in _ARITH and e.type.is_integer:
            return {"call": _ARITH[e.op], "args": args}
    if isinstance(e, UnaryOp):
        arg = arrow_condition(e.operand, what)
        if e.op == "NOT":
            return {"call": "invert", "args": [arg]}
        if e.op == "IS NULL":
            return {"call": "is_null", "args": [arg]}
        if e.op == "IS NOT NULL":
            return {"call": "is_valid", "args": [arg]}
        if e.op == "NEG" and e.type.is_integer:
            return {"call": "negate_checked", "args": [arg]}
    raise FeatureNotSupported(f"{what} ({e.display()}) in a materialized view is supported with comparisons, AND, "
                              f"OR, NOT, IS NULL and integer + - * only, for now")
