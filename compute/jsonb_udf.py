"""The jsonb operators of materialized views as Spark Arrow UDFs (``rs_jsonb_get_key``, ...).

Materialized views evaluate ``->``, ``->>``, ``#>``, ``#>>``, ``@>``, ``<@``, ``?``, ``?|``, ``?&``,
``||``, ``-``, ``#-``, ``=``, ``jsonb_typeof``, ``jsonb_array_length`` and ``text::jsonb`` with
`risingspark.jsonb`, the code batch queries run in DuckDB, so both answer as PostgreSQL. Spark's
JSON functions would not: ``get_json_object`` takes JSON paths and prints objects without
PostgreSQL's spaces and key order, ``from_json`` needs a schema. Each UDF is vectorized
(``arrow_udf``: a batch of Arrow arrays in, one array out, no pandas) and runs in the Python workers
the epoch round's tasks already use; a row whose operator fails (``jsonb_array_length`` of an
object, a bad text cast to jsonb) yields NULL, as RisingWave's streaming expressions do.

Cost (``bench/jsonb_udf.py`` on this kind of machine, 2 loaded cores, documents of ~80 bytes): 11 µs
a row for ``->>``, 14 for ``->``, 23 for ``@>``, 28 for ``::jsonb`` — mostly parsing the canonical
text with Python's ``json`` (numbers as Decimal) — plus one Arrow round trip to the Python worker
per batch: some 40,000-90,000 rows a second per core, which bounds an epoch's jsonb work.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from risingspark import jsonb

_SPARK_TYPES = {pa.string(): "string", pa.bool_(): "boolean", pa.int32(): "int"}


def _streaming(fn: Any, arity: int) -> Any:
    """`fn` with NULL for a failing row; Spark counts the parameters of an Arrow UDF."""
    if arity == 1:
        def one(a: pa.Array) -> pa.Array:
            return fn(a, strict=False)
        return one

    def two(a: pa.Array, b: pa.Array) -> pa.Array:
        return fn(a, b, strict=False)
    return two


def register_jsonb_udfs(spark: Any) -> None:
    """Register every operator of `risingspark.jsonb.OPERATORS` in the session."""
    from pyspark.sql import functions

    arrow_udf: Any = functions.arrow_udf  # typed by its overloads for decorators only
    for name, (fn, kinds, out) in jsonb.OPERATORS.items():
        udf = arrow_udf(_streaming(fn, len(kinds)), _SPARK_TYPES[out])
        spark.udf.register(jsonb.UDF_PREFIX + name, udf)
