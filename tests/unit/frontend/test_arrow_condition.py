"""Join conditions as Arrow expressions: what translates evaluates as PostgreSQL does on the same
rows; what Arrow would evaluate differently (narrowing casts, float comparisons with NaN) is refused;
a literal cast to its own type ('x'::text) is the constant."""

from __future__ import annotations

import pyarrow as pa
import pytest

from frontend.arrow_condition import arrow_condition
from frontend.expr import BinaryOp, Cast, InputRef, Literal
from risingspark import arrow_expr
from risingspark.errors import FeatureNotSupported
from risingspark.types import BOOL, FLOAT8, INT4, INT8, VARCHAR, DataType

A, B = InputRef(0, "a", INT4), InputRef(1, "b", INT8)


def _rows(condition: BinaryOp, table: pa.Table) -> list[dict[str, object]]:
    tree = arrow_expr.loads(arrow_expr.dumps(arrow_condition(condition, "a condition")))
    return table.filter(arrow_expr.to_arrow(tree)).to_pylist()


def test_widening_cast_compares_in_the_wider_type() -> None:
    table = pa.table({"a": pa.array([1, 2, None], pa.int32()), "b": pa.array([1, 3_000_000_000, 2], pa.int64())})
    assert _rows(BinaryOp("=", Cast(A, INT8), B, BOOL), table) == [{"a": 1, "b": 1}]
    assert _rows(BinaryOp("<", Cast(A, INT8), B, BOOL), table) == [{"a": 2, "b": 3_000_000_000}]


def test_narrowing_cast_is_refused() -> None:
    with pytest.raises(FeatureNotSupported):
        arrow_condition(BinaryOp("=", A, Cast(B, INT4), BOOL), "a condition")
    with pytest.raises(FeatureNotSupported):
        numeric = InputRef(2, "n", DataType.parse("numeric(10,2)"))
        arrow_condition(BinaryOp("=", Cast(numeric, DataType.parse("numeric(10,0)")), Literal(1, DataType.parse(
            "numeric(10,0)")), BOOL), "a condition")


def test_float_comparisons_are_refused() -> None:
    x = InputRef(2, "x", FLOAT8)
    with pytest.raises(FeatureNotSupported, match="floating-point"):
        arrow_condition(BinaryOp("<", x, Literal(1.5, FLOAT8), BOOL), "a condition")
    with pytest.raises(FeatureNotSupported, match="floating-point"):
        arrow_condition(BinaryOp("=", Cast(A, FLOAT8), x, BOOL), "a condition")


def test_a_literal_cast_to_its_own_type_is_a_constant() -> None:
    # ('x'::text is typed text, PostgreSQL's, and the same constant)
    s = InputRef(2, "s", VARCHAR)
    table = pa.table({"s": pa.array(["x", "y", None])})
    assert _rows(BinaryOp("=", s, Cast(Literal("x", VARCHAR), VARCHAR), BOOL), table) == [{"s": "x"}]
    assert _rows(BinaryOp("=", s, Cast(Literal(None, VARCHAR), VARCHAR), BOOL), table) == []
