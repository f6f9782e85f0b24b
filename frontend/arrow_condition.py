"""A bound join condition as the Arrow expression tree a join executor evaluates while it matches
rows (`risingspark.arrow_expr`): comparisons, AND / OR / NOT, IS [NOT] NULL, and + - * on integers,
over columns and constants. What Arrow would compute differently from PostgreSQL (division,
decimal arithmetic, string functions) is not translated: such a condition fails at CREATE with
0A000, never evaluates with other semantics.
"""

from __future__ import annotations

from typing import Any

from frontend.expr import BinaryOp, BoundExpr, Cast, InputRef, Literal, UnaryOp
from risingspark.errors import FeatureNotSupported

_COMPARE = {"=": "equal", "<>": "not_equal", "<": "less", "<=": "less_equal", ">": "greater", ">=": "greater_equal"}
_ARITH = {"+": "add_checked", "-": "subtract_checked", "*": "multiply_checked"}


def arrow_condition(e: BoundExpr, what: str) -> dict[str, Any]:
    """`e` as an Arrow expression tree (`what` names the condition in an error)."""
    if isinstance(e, InputRef):
        return {"col": e.name}
    if isinstance(e, Literal):
        return {"lit": e.value, "type": e.type.to_json()}
    if isinstance(e, Cast) and e.type.is_numeric and e.operand.type.is_numeric:
        return {"cast": e.type.to_json(), "arg": arrow_condition(e.operand, what)}
    if isinstance(e, BinaryOp):
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
