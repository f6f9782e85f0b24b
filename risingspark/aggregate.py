"""Aggregate functions: their result types (as PostgreSQL) and the layout of their intermediate
state, shared by the planner (which declares the state table) and the hash aggregation executor
(which reads and writes it).

Agg state table layout (one row per group)::

    | group key ... | _row_count | _a0_count | _a0_sum | _a1_count | ... |

``_row_count`` counts the group's input rows (the group exists while it is > 0); each call keeps the
count of its non-NULL inputs and, for sum/avg, their sum. Every partial is a plain sum over the
input's signed rows, so retraction is subtraction.

>>> from risingspark.types import INT4
>>> agg_return_type("sum", INT4)
DataType(name=<TypeName.BIGINT: 'bigint'>, precision=None, scale=None)
"""

from __future__ import annotations

from risingspark.errors import FeatureNotSupported, UndefinedFunction
from risingspark.types import (
    FLOAT4,
    FLOAT8,
    INT8,
    NUMERIC,
    DataType,
    Field,
    TypeName,
)

ROW_COUNT = "_row_count"
AGG_KINDS = ("count_star", "count", "sum", "avg")


def agg_return_type(kind: str, arg: DataType | None) -> DataType:
    if kind in ("count_star", "count"):
        return INT8
    if arg is None:
        raise UndefinedFunction(f"function {kind}() does not exist")
    if not arg.is_numeric:
        raise UndefinedFunction(f"function {kind}({arg.display()}) does not exist",
                                hint="No function matches the given name and argument types.")
    if kind == "sum":
        if arg.name in (TypeName.SMALLINT, TypeName.INT):
            return INT8
        if arg.name is TypeName.BIGINT:
            return DataType(TypeName.NUMERIC, 38, 0)
        if arg.name is TypeName.NUMERIC:
            return NUMERIC if arg.precision is None else DataType(TypeName.NUMERIC, 38, arg.scale)
        return FLOAT4 if arg.name is TypeName.REAL else FLOAT8
    if kind == "avg":
        return FLOAT8 if arg.name in (TypeName.REAL, TypeName.DOUBLE) else NUMERIC
    raise FeatureNotSupported(f"aggregate function {kind} is not supported in streaming queries yet")


def sum_state_type(kind: str, arg: DataType) -> DataType:
    """The type in which sum/avg accumulate their inputs."""
    if kind == "sum":
        return agg_return_type("sum", arg)
    if arg.name in (TypeName.REAL, TypeName.DOUBLE):
        return FLOAT8
    if arg.name is TypeName.NUMERIC and arg.precision is not None:
        return DataType(TypeName.NUMERIC, 38, arg.scale)
    if arg.name is TypeName.NUMERIC:
        return NUMERIC
    return DataType(TypeName.NUMERIC, 38, 0)


def count_column(i: int) -> str:
    return f"_a{i}_count"


def sum_column(i: int) -> str:
    return f"_a{i}_sum"


def agg_state_fields(group_fields: list[Field], calls: list[tuple[str, DataType | None]]) -> tuple[Field, ...]:
    """The value columns of a hash aggregation's state table (see the module docstring)."""
    out = [Field(f.name, f.type) for f in group_fields] + [Field(ROW_COUNT, INT8)]
    for i, (kind, arg) in enumerate(calls):
        if kind == "count_star":
            continue
        out.append(Field(count_column(i), INT8))
        if kind in ("sum", "avg"):
            assert arg is not None
            out.append(Field(sum_column(i), sum_state_type(kind, arg)))
    return tuple(out)
