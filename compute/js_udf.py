"""The JavaScript functions a materialized view calls, as Spark Arrow UDFs (``rs_udf_<id>``).

The plan carries the definitions (`StreamMaterialize.functions`); before a job's first round on a
compute node each is registered in the node's Spark session under its catalog id, once (an id names
one definition for ever). The UDF is vectorized (``arrow_udf``: a batch of Arrow arrays in, one array
out) and runs in the Python workers the epoch round's tasks already use; each worker compiles the
function once (`risingspark.js_udf.compiled`). A row whose call fails yields NULL and is logged,
as RisingWave's streaming expressions do; the job goes on.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

import pyarrow as pa

from risingspark.functions import FunctionCatalog
from risingspark.js_udf import compiled, with_arity

logger = logging.getLogger(__name__)

_lock = threading.Lock()
_registered: dict[int, set[int]] = {}  # id(SparkSession) -> function ids


def _udf(fn: FunctionCatalog) -> Any:
    name, arg_names, body, arg_types, ret = fn.name, fn.arg_names, fn.body, fn.arg_types, fn.return_type

    def run(*arrays: pa.Array) -> pa.Array:
        return compiled(name, arg_names, body, arg_types, ret).call_arrays(arrays, strict=False)

    return with_arity(run, len(arg_types))


def register_js_udfs(spark: Any, functions: tuple[FunctionCatalog, ...]) -> None:
    """Register `functions` in the session, each once."""
    if not functions:
        return
    from pyspark.sql import functions as sf

    arrow_udf: Any = sf.arrow_udf  # typed by its overloads for decorators only
    with _lock:
        done = _registered.setdefault(id(spark), set())
        for fn in functions:
            if fn.id in done:
                continue
            spark.udf.register(fn.udf_name, arrow_udf(_udf(fn), fn.return_type.to_spark()))
            done.add(fn.id)
            logger.info("registered JavaScript function %s (id %d) in Spark as %s", fn.name, fn.id, fn.udf_name)
