"""Aggregate functions: their result types (as PostgreSQL) and the layout of their intermediate
state, shared by the planner (which declares the state table) and the hash aggregation executor
(which reads and writes it).

Agg state table layout (one row per group)::

    | group key ... | _row_count | _a0_count | _a0_sum | _a1_count | ... |

``_row_count`` counts the group's input rows (the group exists while it is > 0); each call keeps the
count of its non-NULL inputs and, for sum/avg, their sum (for bool_and/bool_or, ``_a{i}_true``: the
count of its true inputs, as RisingWave's retractable bool_and/bool_or). Every partial is a plain
sum over the input's signed rows, so retraction is subtraction.

min, max, string_agg, array_agg and the DISTINCT aggregates cannot be retracted from partial sums. As
RisingWave's *materialized input state*, each such call keeps one more state table of its inputs,
keyed by ``(group key, value, order columns)`` and distributed by the group key::

    | group key ... | value | order column ... | _count |

holding the multiplicity of every distinct non-NULL input (array_agg: NULLs too; again a signed sum);
its result is computed from the rows of the group (`compute.executor.agg_input_state`). min and max
(without DISTINCT) keep one row per input row instead, as RisingWave's min/max state, keyed by the
input's stream key too and holding no count::

    | group key ... | value | input stream key ... |

so an input row's insert writes its key and its delete a tombstone, neither reading anything; a cache
of each group's extreme keys gives the result (`compute.cache.extreme_cache`).

Over an *append-only* input (no row is ever retracted: `frontend.planner.stream`), min and max need
no input state, as RisingWave's append-only aggregation: the agg state row keeps the call's count
and its current value (``_a{i}_count``, ``_a{i}_value``), and an epoch folds in the min (max) of
the values it inserted.

>>> from risingspark.types import INT4
>>> agg_return_type("sum", INT4)
DataType(name=<TypeName.BIGINT: 'bigint'>, precision=None, scale=None)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from risingspark.errors import FeatureNotSupported, UndefinedFunction
from risingspark.types import (
    BOOL,
    FLOAT4,
    FLOAT8,
    INT8,
    NUMERIC,
    VARCHAR,
    DataType,
    Field,
    TypeName,
)

if TYPE_CHECKING:
    from risingspark.storage.desc import StateTableDesc

ROW_COUNT = "_row_count"
VALUE_COUNT = "_count"
AGG_KINDS = ("count_star", "count", "sum", "avg", "min", "max", "bool_and", "bool_or", "string_agg", "array_agg")
# min/max of these types (Postgres has none for boolean)
_ORDERED = {TypeName.SMALLINT, TypeName.INT, TypeName.BIGINT, TypeName.REAL, TypeName.DOUBLE, TypeName.NUMERIC,
            TypeName.VARCHAR, TypeName.DATE, TypeName.TIMESTAMP, TypeName.TIMESTAMPTZ}


def needs_input_state(kind: str, distinct: bool, append_only: bool = False) -> bool:
    """Whether a call keeps a materialized input state table (see the module docstring);
    `append_only`: its input never retracts a row."""
    if append_only and kind in ("min", "max") and not distinct:
        return False
    return kind in ("min", "max", "string_agg", "array_agg") or (distinct and kind in ("count", "sum", "avg"))


def keeps_value(kind: str, has_input_state: bool) -> bool:
    """Whether a call keeps its current value in the agg state row (append-only min and max)."""
    return kind in ("min", "max") and not has_input_state


def keeps_nulls(kind: str) -> bool:
    """Whether a call's NULL inputs count (array_agg's array holds them; every other aggregate
    ignores NULLs)."""
    return kind == "array_agg"


def agg_return_type(kind: str, arg: DataType | None) -> DataType:
    if kind in ("count_star", "count"):
        return INT8
    if arg is None:
        raise UndefinedFunction(f"function {kind}() does not exist")
    if kind in ("min", "max"):
        if arg.name not in _ORDERED:
            raise UndefinedFunction(f"function {kind}({arg.display()}) does not exist",
                                    hint="No function matches the given name and argument types.")
        return arg
    if kind in ("bool_and", "bool_or"):
        if arg.name is not TypeName.BOOLEAN:
            raise UndefinedFunction(f"function {kind}({arg.display()}) does not exist",
                                    hint="No function matches the given name and argument types.")
        return BOOL
    if kind == "array_agg":
        if arg.name is TypeName.ARRAY:
            raise FeatureNotSupported("array_agg of arrays (a multidimensional array) is not supported")
        return DataType.array_of(arg)
    if kind == "string_agg":
        if arg.name is not TypeName.VARCHAR:
            raise UndefinedFunction(f"function string_agg({arg.display()}, unknown) does not exist",
                                    hint="No function matches the given name and argument types.")
        return VARCHAR
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


def true_column(i: int) -> str:
    return f"_a{i}_true"


def value_column(i: int) -> str:
    return f"_a{i}_value"


def agg_state_fields(group_fields: list[Field], calls: list[tuple[str, DataType | None]],
                     distinct: list[bool] | None = None, append_only: bool = False) -> tuple[Field, ...]:
    """The value columns of a hash aggregation's state table (see the module docstring)."""
    out = [Field(f.name, f.type) for f in group_fields] + [Field(ROW_COUNT, INT8)]
    for i, (kind, arg) in enumerate(calls):
        if kind == "count_star" or needs_input_state(kind, bool(distinct and distinct[i]), append_only):
            continue
        out.append(Field(count_column(i), INT8))
        if keeps_value(kind, False):
            assert arg is not None
            out.append(Field(value_column(i), arg))
        if kind in ("sum", "avg"):
            assert arg is not None
            out.append(Field(sum_column(i), sum_state_type(kind, arg)))
        if kind in ("bool_and", "bool_or"):
            out.append(Field(true_column(i), INT8))
    return tuple(out)


def extreme_state_fields(group_fields: list[Field], value: Field, row_key: list[Field]) -> tuple[Field, ...]:
    """The columns of min's and max's input state table: the group key, the value, then the input's
    stream key; every column is in the pk (one row per input row, no count: see
    `compute.cache.extreme_cache`)."""
    names = [f.name for f in (*group_fields, value, *row_key)]
    assert len(set(names)) == len(names) and VALUE_COUNT not in names, names
    return tuple(Field(f.name, f.type) for f in (*group_fields, value, *row_key))


def keyed_by_row(desc: StateTableDesc) -> bool:
    """Whether an input state table keeps one row per input row (min and max, `extreme_state_fields`)
    rather than a count per value."""
    return VALUE_COUNT not in desc.names


def input_state_fields(group_fields: list[Field], value: Field, order: list[Field]) -> tuple[Field, ...]:
    """The columns of a call's materialized input state table; its pk is every column but the last."""
    names = [f.name for f in (*group_fields, value, *order)]
    assert len(set(names)) == len(names) and VALUE_COUNT not in names, names
    return (*(Field(f.name, f.type) for f in (*group_fields, value, *order)), Field(VALUE_COUNT, INT8))
