"""The JavaScript engine of user-defined functions (`risingspark.js_udf`): RisingWave's body
wrapping, NULL input, the SQL ↔ JavaScript type mapping, and errors (a failing row fails a strict
batch, yields NULL otherwise)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from risingspark.errors import (
    DataException,
    ExternalRoutineException,
    FeatureNotSupported,
    NumericValueOutOfRange,
    SyntaxError_,
)
from risingspark.js_udf import JsFunction, check_types, compiled, source_of
from risingspark.types import (
    BOOL,
    FLOAT4,
    FLOAT8,
    INT2,
    INT4,
    INT8,
    JSONB,
    NUMERIC,
    TIMESTAMP,
    VARCHAR,
    DataType,
)

COUNT_CHAR = """
  var count = 0;
  for (var cur of s) { if (cur == c) { count++; } }
  return count;
"""


def test_count_char_as_nexmark_q14_defines_it() -> None:
    fn = compiled("count_char", ("s", "c"), COUNT_CHAR, (VARCHAR, VARCHAR), INT4)
    assert fn.call(["abcabc", "c"]) == 2
    assert fn.call(["", "c"]) == 0
    assert fn.call(["😀c😀c", "c"]) == 2  # (code points, as JavaScript's for ... of)
    assert compiled("count_char", ("s", "c"), COUNT_CHAR, (VARCHAR, VARCHAR), INT4) is fn  # compiled once


def test_body_or_exported_function() -> None:
    assert source_of("f", ("a", "b"), "return a;") == "function f(a,b) { return a; }"
    exported = "export function g(x) { return x * 2; }"
    assert compiled("g", ("x",), exported, (INT4,), INT4).call([21]) == 42


def test_null_input_reaches_the_function() -> None:
    fn = compiled("is_null", ("x",), "return x === null;", (INT4,), BOOL)
    assert fn.call([None]) is True
    assert fn.call([1]) is False
    assert compiled("nothing", ("x",), "return undefined;", (INT4,), INT4).call([1]) is None


@pytest.mark.parametrize(("t", "value", "expected"), [
    (INT2, 7, 7), (INT4, -(2 ** 31), -(2 ** 31)), (INT8, 2 ** 40, 2 ** 40), (INT8, -(2 ** 50), -(2 ** 50)),
    (FLOAT4, 1.5, 1.5), (FLOAT8, 2.25, 2.25), (VARCHAR, "é😀", "é😀"), (BOOL, True, True), (BOOL, False, False),
])
def test_types_round_trip(t: DataType, value, expected) -> None:
    fn = compiled("ident", ("x",), "return x;", (t,), t)
    assert fn.call([value]) == expected
    assert type(fn.call([value])) is type(expected)


def test_results_must_fit_the_return_type() -> None:
    with pytest.raises(DataException, match="not a whole number"):
        compiled("half", ("x",), "return x / 2;", (INT4,), INT4).call([3])
    with pytest.raises(NumericValueOutOfRange):
        compiled("big", ("x",), "return x * 1e6;", (INT4,), INT4).call([10 ** 6])
    with pytest.raises(DataException, match="not a string"):
        compiled("num", ("x",), "return x;", (INT4,), VARCHAR).call([1])
    with pytest.raises(DataException, match="not a number"):
        compiled("str", ("x",), "return 'x';", (INT4,), INT4).call([1])
    assert compiled("whole", ("x",), "return x / 2;", (INT8,), INT8).call([4]) == 2


def test_exceptions_fail_strict_batches_and_null_the_row_otherwise() -> None:
    fn = compiled("boom", ("x",), "if (x > 1) throw new Error('too big: ' + x); return x;", (INT4,), INT4)
    with pytest.raises(ExternalRoutineException, match="too big: 5") as e:
        fn.call_arrays([pa.array([1, 5])])
    assert e.value.sqlstate == "38000"
    assert fn.call_arrays([pa.array([1, 5, None])], strict=False).to_pylist() == [1, None, None]
    out = compiled("count_char", ("s", "c"), COUNT_CHAR, (VARCHAR, VARCHAR), INT4).call_arrays(
        [pa.array(["cc", None]), pa.array(["c", "c"])], strict=False)
    assert out.type == pa.int32() and out.to_pylist() == [2, None]


def test_syntax_errors_at_compile_time() -> None:
    with pytest.raises(SyntaxError_, match="invalid JavaScript"):
        JsFunction("bad", ("x",), "return (;", (INT4,), INT4)


def test_unsupported_types_are_named() -> None:
    check_types((INT2, INT4, INT8, FLOAT4, FLOAT8, VARCHAR, BOOL), INT4)
    for t in (JSONB, NUMERIC, TIMESTAMP, DataType.array_of(INT4)):
        with pytest.raises(FeatureNotSupported, match=t.display().replace("[", r"\[").replace("]", r"\]")):
            check_types((t,), INT4)
        with pytest.raises(FeatureNotSupported):
            check_types((INT4,), t)
