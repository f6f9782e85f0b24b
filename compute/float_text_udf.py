"""A double's or a real's text in a materialized view, as PostgreSQL writes it: Spark Arrow UDFs
``rs_float8_text`` and ``rs_float4_text`` over `risingspark.float_text`.

Spark's cast of a double to a string is Java's ``Double.toString``: always a fractional part
(``2.0``), an exponent below 10^-3 and from 10^7 (``1.0E7``), and on Java 17 more digits than the
shortest for many values past 10^16 (``1.04937939846727578E18``) and reals past 10^7. PostgreSQL
writes the shortest digits (``2``, ``1e+15``, ``1.0493793984672758e+18``). Rebuilding PostgreSQL's
layout from Java's text with Spark's string functions kept Java's extra digits and, measured by a
reviewer, cost ~60× a cast (136 s against 2.2 s for 300K rows: its SQL repeated the operand a
hundred times, and a nested cast grew it to a megabyte); Python's ``repr`` of a double and NumPy's
shortest digits of a 32-bit float are the shortest, so the UDFs lay those out. Like the jsonb UDFs
(`compute.jsonb_udf`) they are vectorized and run in the Python workers an epoch round's tasks
already use; NULL stays NULL. Cost (``bench/float_text_udf.py``, 2 cores): ~2 µs a row more than
the cast, 7× its time at 1M rows and 11× at 10M (21.5 s against 1.9 s); a cost per row a round
reads, so it follows the change.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyarrow as pa

from risingspark.float_text import FLOAT4_TEXT_UDF, FLOAT8_TEXT_UDF, format_float4, format_float8


def _texts(values: pa.Array, fmt: Callable[[float], str]) -> pa.Array:
    return pa.array([None if v is None else fmt(v) for v in values.to_pylist()], pa.string())


def float8_text(values: pa.Array) -> pa.Array:
    return _texts(values, format_float8)


def float4_text(values: pa.Array) -> pa.Array:
    return _texts(values, format_float4)


def register_float_text_udfs(spark: Any) -> None:
    """Register both UDFs in the session."""
    from pyspark.sql import functions

    arrow_udf: Any = functions.arrow_udf  # typed by its overloads for decorators only
    spark.udf.register(FLOAT8_TEXT_UDF, arrow_udf(float8_text, "string"))
    spark.udf.register(FLOAT4_TEXT_UDF, arrow_udf(float4_text, "string"))
