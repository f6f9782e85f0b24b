"""JavaScript user-defined functions on QuickJS (the PyPI package ``quickjs``), as RisingWave runs
``CREATE FUNCTION ... LANGUAGE javascript`` on its embedded QuickJS.

What RisingWave does, and this module follows (``src/expr/impl/src/udf/quickjs.rs``,
``arrow_udf_js``):

- The ``AS`` text is a function *body*: it becomes ``function <name>(<arg names>) { <body> }``, so
  the body sees the arguments by their names. A text that itself declares ``export function
  <name>(...)`` (RisingWave's newer form) is taken as it is, ``export`` dropped.
- The function is called for every row, NULL arguments included (``CalledOnNullInput``): a NULL is
  JavaScript's ``null``; ``null`` or ``undefined`` returned is SQL NULL.
- Types: smallint, integer and bigint are numbers in and whole numbers out (a fraction or a value out
  of the type's range is an error); real and double precision numbers; varchar strings; boolean
  booleans. Other types are refused at CREATE with 0A000 (`check_types`).
- A JavaScript exception fails the row. A batch query (``strict``) fails with SQLSTATE 38000 and the
  JavaScript error's message; a streaming job cannot fail a checkpoint for one row, so the row's
  value is NULL and the error is logged (RisingWave's non-strict streaming expressions report the
  error and yield NULL the same way).

A function is compiled once per process and definition (`compiled`: cached by name, argument names
and body), in a QuickJS context of its own, called under a lock (a context is single-threaded); each
call may run 10 s at most (then it fails as any exception). One call crosses into JavaScript per
row: some 2-4 µs a row for a small function.

>>> from risingspark.types import INT4, VARCHAR
>>> fn = compiled("count_char", ("s", "c"),
...               "var n = 0; for (var x of s) { if (x == c) n++; } return n;", (VARCHAR, VARCHAR), INT4)
>>> fn.call(["abcc", "c"]), fn.call_arrays([pa.array(["cc", None]), pa.array(["c", "c"])], strict=False).to_pylist()
(2, [2, None])
"""

from __future__ import annotations

import functools
import logging
import math
import re
import threading
from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from risingspark.errors import (
    DataException,
    ExternalRoutineException,
    FeatureNotSupported,
    NumericValueOutOfRange,
    RisingSparkError,
    SyntaxError_,
)
from risingspark.types import DataType, TypeName

logger = logging.getLogger(__name__)

_INT_RANGE = {TypeName.SMALLINT: (-(1 << 15), (1 << 15) - 1), TypeName.INT: (-(1 << 31), (1 << 31) - 1),
              TypeName.BIGINT: (-(1 << 63), (1 << 63) - 1)}
SUPPORTED_TYPES = (*_INT_RANGE, TypeName.REAL, TypeName.DOUBLE, TypeName.VARCHAR, TypeName.BOOLEAN)
CALL_TIME_LIMIT_S = 10.0


def check_types(arg_types: Sequence[DataType], return_type: DataType) -> None:
    """0A000 naming the first type a JavaScript function cannot take or return here."""
    for t in (*arg_types, return_type):
        if t.name not in SUPPORTED_TYPES or t.element is not None:
            raise FeatureNotSupported(f"type {t.display()} is not supported in JavaScript functions yet (supported: "
                                      f"smallint, integer, bigint, real, double precision, varchar, boolean)")


def source_of(name: str, arg_names: Sequence[str], body: str) -> str:
    """The script that defines the function `name` (see the module docstring).

    >>> source_of("f", ("a", "b"), "return a + b;")
    'function f(a,b) { return a + b; }'
    """
    declared = re.search(rf"\bexport\s+function\s+{re.escape(name)}\s*\(", body)
    if declared is not None:
        return body[:declared.start()] + body[declared.start():].replace("export", "", 1)
    return f"function {name}({','.join(arg_names)}) {{ {body} }}"


class JsFunction:
    """One compiled function (see the module docstring)."""

    def __init__(self, name: str, arg_names: tuple[str, ...], body: str, arg_types: tuple[DataType, ...],
                 return_type: DataType) -> None:
        import quickjs

        self.name = name
        self.arg_types = arg_types
        self.return_type = return_type
        self._lock = threading.Lock()
        self._context = quickjs.Context()
        self._context.set_time_limit(CALL_TIME_LIMIT_S)
        try:
            self._context.eval(source_of(name, arg_names, body))
            fn = self._context.get(name)
        except quickjs.JSException as e:
            raise SyntaxError_(f"invalid JavaScript in function {name}: {_first_line(e)}") from None
        if not isinstance(fn, quickjs.Object):
            raise SyntaxError_(f"the JavaScript of function {name} does not define a function {name}")
        self._fn = fn
        self._js_error = quickjs.JSException

    def call(self, args: Sequence[Any]) -> Any:
        """The function of one row's values (Python values of the argument types); raises
        `ExternalRoutineException` for a JavaScript exception, a data exception for a result that
        is not a value of the return type."""
        js_args = [_to_js(v) for v in args]
        try:
            with self._lock:
                out = self._fn(*js_args)
        except self._js_error as e:
            raise ExternalRoutineException(f"JavaScript error in function {self.name}: {_first_line(e)}") from None
        return _from_js(out, self.return_type, self.name)

    def call_arrays(self, arrays: Sequence[pa.Array], *, strict: bool = True) -> pa.Array:
        """The function of a batch of rows. `strict`: a failing row fails the batch (batch queries);
        otherwise its value is NULL and the first error of the batch is logged (streaming jobs)."""
        columns = [a.to_pylist() for a in arrays]
        rows = len(columns[0]) if columns else 0
        out: list[Any] = []
        failed: list[RisingSparkError] = []
        for i in range(rows):
            try:
                out.append(self.call([c[i] for c in columns]))
            except RisingSparkError as e:
                if strict:
                    raise
                failed.append(e)
                out.append(None)
        if failed:
            logger.warning("function %s failed on %d of %d rows, which yield NULL; first error: %s", self.name,
                           len(failed), rows, failed[0].message)
        return pa.array(out, type=self.return_type.to_arrow())


def with_arity(run: Any, arity: int) -> Any:
    """`run(*args)` as a function of `arity` named parameters: Spark and DuckDB count the parameters
    of the Python function they are given.

    >>> with_arity(lambda *a: sum(a), 3).__code__.co_argcount
    3
    """
    params = ", ".join(f"a{i}" for i in range(arity))
    scope: dict[str, Any] = {"run": run}
    exec(f"def call({params}):\n    return run({params})\n", scope)  # our own parameter names only
    return scope["call"]


@functools.lru_cache(maxsize=256)
def compiled(name: str, arg_names: tuple[str, ...], body: str, arg_types: tuple[DataType, ...],
             return_type: DataType) -> JsFunction:
    """The compiled function of a definition, compiled once per process."""
    return JsFunction(name, arg_names, body, arg_types, return_type)


def _first_line(e: Exception) -> str:
    return str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__


def _to_js(v: Any) -> Any:
    # the quickjs package passes a Python int as a 32-bit integer: larger ones go as numbers
    if isinstance(v, int) and not isinstance(v, bool) and not -(1 << 31) <= v < (1 << 31):
        return float(v)
    return v


def _from_js(v: Any, t: DataType, name: str) -> Any:
    if v is None:
        return None
    n = t.name
    if n in _INT_RANGE:
        if isinstance(v, bool) or not isinstance(v, int | float):
            raise DataException(f"function {name} returned {_describe(v)}, not a number of type {t.display()}")
        if isinstance(v, float) and not v.is_integer():
            raise DataException(f"function {name} returned {v}, not a whole number of type {t.display()}")
        lo, hi = _INT_RANGE[n]
        if not lo <= v <= hi:
            raise NumericValueOutOfRange(f"{t.display()} out of range")
        return int(v)
    if n in (TypeName.REAL, TypeName.DOUBLE):
        if isinstance(v, bool) or not isinstance(v, int | float):
            raise DataException(f"function {name} returned {_describe(v)}, not a number of type {t.display()}")
        return float(v)
    if n is TypeName.VARCHAR:
        if not isinstance(v, str):
            raise DataException(f"function {name} returned {_describe(v)}, not a string")
        return v
    if n is TypeName.BOOLEAN:
        if not isinstance(v, bool):
            raise DataException(f"function {name} returned {_describe(v)}, not a boolean")
        return v
    raise AssertionError(t)


def _describe(v: Any) -> str:
    if isinstance(v, float) and math.isnan(v):
        return "NaN"
    if isinstance(v, str | int | float | bool):
        return repr(v)
    return "an object"
