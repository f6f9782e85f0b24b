"""jsonb values as PostgreSQL's: canonical text, and the operators over it.

A jsonb value is stored as the text PostgreSQL prints for it (Arrow ``string``, Spark ``STRING``,
DuckDB ``JSON``), which is canonical: object keys sorted by length then bytes, no duplicate keys
(the last one wins), ``", "`` and ``": "`` separators, numbers as numeric prints them (``1e2`` is
``100``, ``1.50`` stays ``1.50``), strings escaped as PostgreSQL's ``escape_json``. Equal text
means equal jsonb except for numbers (``1.0`` and ``1`` are equal jsonb), which is why jsonb is not
compared, grouped or ordered by its text anywhere (``=`` and ``<>`` are `equal`).

Every operator here parses the canonical text and computes PostgreSQL's answer (``->``, ``->>``,
``#>``, ``#>>``, ``@>``, ``?``, ``?|``, ``?&``, ``=``, ``jsonb_typeof``, ``jsonb_array_length``, and the
ones that make a new value, `risingspark.jsonb_edit`: ``||``, ``-``, ``#-``). The same functions run in
Spark's Python workers (vectorized Arrow UDFs, `risingspark.jsonb_udf`) for materialized views and
in DuckDB (Arrow UDFs) for batch queries, so both give the same answers.

>>> canonical('{"b": 1, "a": [1.50, 1e2, -0], "aa": null, "a": true}')
'{"a": true, "b": 1, "aa": null}'
>>> contains(parse('[1, [2, 3]]'), parse('[[3]]'))
True
"""

from __future__ import annotations

import json
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pyarrow as pa

from risingspark import jsonb_edit
from risingspark.errors import (
    InvalidParameterValue,
    InvalidTextRepresentation,
    RisingSparkError,
    UntranslatableCharacter,
)

# ---- input ------------------------------------------------------------------------------------------

def _reject_constant(name: str) -> Any:
    raise ValueError(f'Token "{name}" is invalid.')


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    return dict(pairs)  # the last of duplicate keys wins, as jsonb's


def parse(text: str) -> Any:
    """The value of a JSON text: dicts, lists, str, Decimal (numbers, as written), bool, None (JSON
    null). Raises 22P02 (``invalid input syntax for type json``) as PostgreSQL does."""
    try:
        value = json.loads(text, parse_float=Decimal, parse_int=Decimal, parse_constant=_reject_constant,
                           object_pairs_hook=_pairs)
    except (ValueError, RecursionError) as e:
        detail = str(e) if isinstance(e, ValueError) else "The input is nested too deeply."
        raise InvalidTextRepresentation("invalid input syntax for type json", detail=detail) from None
    if "\\u0000" in text:
        _check_no_nul(value)
    _check_strings(value)
    return value


def _check_no_nul(value: Any) -> None:
    for s in _strings(value):
        if "\x00" in s:
            raise UntranslatableCharacter("unsupported Unicode escape sequence",
                                          detail="\\u0000 cannot be converted to text.")


def _check_strings(value: Any) -> None:
    """Lone surrogates (``"\\ud800"``) are no text: PostgreSQL refuses them."""
    for s in _strings(value):
        if not s.isascii():
            try:
                s.encode()
            except UnicodeEncodeError:
                raise InvalidTextRepresentation("invalid input syntax for type json",
                                                detail="Unicode low surrogate must follow a high surrogate.") from None


def _strings(value: Any):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield k
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


# ---- output -----------------------------------------------------------------------------------------

_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def quote(s: str) -> str:
    """A JSON string as PostgreSQL's escape_json writes it (other characters below U+0020 as
    ``\\u00xx``; nothing else escaped)."""
    out = []
    for c in s:
        e = _ESCAPES.get(c)
        if e is not None:
            out.append(e)
        elif c < " ":
            out.append(f"\\u{ord(c):04x}")
        else:
            out.append(c)
    return '"' + "".join(out) + '"'


def number_text(d: Decimal) -> str:
    """A JSON number as PostgreSQL's numeric prints it: no exponent, the written scale kept
    (``1.50``), a negative exponent's digits kept (``1E-3`` is ``0.001``), no negative zero."""
    text = f"{d:f}"
    return text[1:] if d.is_zero() and text.startswith("-") else text


def _key_order(k: str) -> tuple[int, bytes]:
    b = k.encode()
    return len(b), b


def dumps(value: Any) -> str:
    """The canonical text of a parsed value."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, Decimal):
        return number_text(value)
    if isinstance(value, str):
        return quote(value)
    if isinstance(value, list):
        return "[" + ", ".join(dumps(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{quote(k)}: {dumps(value[k])}" for k in sorted(value, key=_key_order)) + "}"
    if isinstance(value, int | float):  # Python values given to a jsonb parameter
        return number_text(Decimal(str(value)))
    raise TypeError(type(value))


def canonical(text: str) -> str:
    """PostgreSQL's jsonb text for a JSON text (22P02 when it is not JSON)."""
    return dumps(parse(text))


def as_text(value: Any) -> str | None:
    """``->>``: a string's own text, a number's or boolean's text, NULL for JSON null, a
    container's jsonb text."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    return dumps(value)


# ---- operators --------------------------------------------------------------------------------------

def get_key(value: Any, key: str) -> Any:
    """``value -> 'key'``; `MISSING` when `value` is no object or lacks the key."""
    if isinstance(value, dict):
        return value.get(key, MISSING)
    return MISSING


def get_index(value: Any, index: int) -> Any:
    """``value -> n``: an array's element (negative counts from the end); a scalar is taken as a
    one-element array, as PostgreSQL does; `MISSING` for an object or out of range."""
    if isinstance(value, dict):
        return MISSING
    items = value if isinstance(value, list) else [value]
    if index < 0:
        index += len(items)
    return items[index] if 0 <= index < len(items) else MISSING


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()  # no such element: SQL NULL (JSON null is None)


def get_path(value: Any, path: list[str | None]) -> Any:
    """``value #> '{a,0}'``: each step a key of an object or an index (an integer's text) of an
    array; `MISSING` where a step finds nothing. A scalar has no elements for a non-empty path."""
    for step in path:
        if step is None:
            return MISSING
        if isinstance(value, dict):
            value = value.get(step, MISSING)
        elif isinstance(value, list):
            i = jsonb_edit.int4_step(step)
            if i is None:
                return MISSING
            if i < 0:
                i += len(value)
            value = value[i] if 0 <= i < len(value) else MISSING
        else:
            return MISSING
        if value is MISSING:
            return MISSING
    return value


def _scalar_equal(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool) or a is None or b is None:
        return a is b
    if isinstance(a, Decimal) and isinstance(b, Decimal):
        return a == b
    if isinstance(a, str) and isinstance(b, str):
        return a == b
    return False


def equal(a: Any, b: Any) -> bool:
    """``a = b`` as PostgreSQL's jsonb equality: objects of the same keys with equal values, arrays of
    equal elements in the same order, numbers equal as numbers (``1.0`` = ``1``), a scalar never an
    array of it."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(equal(v, b[k]) for k, v in a.items())
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(equal(x, y) for x, y in zip(a, b, strict=True))
    return not _is_container(a) and not _is_container(b) and _scalar_equal(a, b)


def _is_container(v: Any) -> bool:
    return isinstance(v, dict | list)


def contains(a: Any, b: Any, top: bool = True) -> bool:
    """``a @> b`` as PostgreSQL's JsonbDeepContains: objects contain a subset of their pairs (values
    contained recursively), arrays contain elements regardless of order and repetition (a scalar
    element equal to one of theirs, a container element contained by one of theirs), scalars
    contain equal scalars, and a top-level array contains a scalar it has as an element."""
    if isinstance(a, dict):
        if not isinstance(b, dict):
            return False
        for k, bv in b.items():
            if k not in a:
                return False
            av = a[k]
            if _is_container(bv) or _is_container(av):
                if type(av) is not type(bv) or not contains(av, bv, False):
                    return False
            elif not _scalar_equal(av, bv):
                return False
        return True
    if isinstance(a, list):
        if isinstance(b, dict):
            return False
        if not isinstance(b, list):
            return top and any(not _is_container(x) and _scalar_equal(x, b) for x in a)
        scalars = [x for x in a if not _is_container(x)]
        containers = [x for x in a if _is_container(x)]
        for bv in b:
            if _is_container(bv):
                if not any(type(x) is type(bv) and contains(x, bv, False) for x in containers):
                    return False
            elif not any(_scalar_equal(x, bv) for x in scalars):
                return False
        return True
    if _is_container(b):
        return False
    return _scalar_equal(a, b)


def exists(value: Any, key: str) -> bool:
    """``value ? 'key'``: a key of an object, a string element of an array, or the string itself."""
    if isinstance(value, dict):
        return key in value
    if isinstance(value, list):
        return any(isinstance(x, str) and x == key for x in value)
    return isinstance(value, str) and value == key


def exists_any(value: Any, keys: list[str | None]) -> bool:
    """``value ?| keys``: whether any key (NULLs are none) `exists`."""
    return any(exists(value, k) for k in keys if k is not None)


def exists_all(value: Any, keys: list[str | None]) -> bool:
    """``value ?& keys``: whether every key (NULLs are none) `exists`."""
    return all(exists(value, k) for k in keys if k is not None)


def typeof(value: Any) -> str:
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "boolean"
    if value is None:
        return "null"
    return "number"


def array_length(value: Any) -> int:
    if isinstance(value, list):
        return len(value)
    if isinstance(value, dict):
        raise InvalidParameterValue("cannot get array length of a non-array")
    raise InvalidParameterValue("cannot get array length of a scalar")


def parse_path(text: str) -> list[str | None]:
    """A ``text[]`` literal such as ``'{a,"b c",0}'`` as the path of ``#>``."""
    s = text.strip()
    if not (s.startswith("{") and s.endswith("}")):
        raise InvalidTextRepresentation(f'malformed array literal: "{text}"',
                                        detail='Array value must start with "{" or dimension information.')
    body = s[1:-1]
    out: list[str | None] = []
    if not body.strip():
        return out
    i, n = 0, len(body)
    while i <= n:
        while i < n and body[i].isspace():
            i += 1
        if i < n and body[i] == '"':
            i += 1
            buf = []
            while i < n and body[i] != '"':
                if body[i] == "\\" and i + 1 < n:
                    i += 1
                buf.append(body[i])
                i += 1
            i += 1
            while i < n and body[i] != ",":
                i += 1
            out.append("".join(buf))
        else:
            j = i
            buf = []
            while j < n and body[j] != ",":
                if body[j] == "\\" and j + 1 < n:
                    j += 1
                buf.append(body[j])
                j += 1
            item = "".join(buf).strip()
            out.append(None if item.upper() == "NULL" else item)
            i = j
        i += 1
    return out


# ---- vectorized over Arrow arrays (the UDFs of Spark and DuckDB) -----------------------------------

def _texts(arr: pa.Array | pa.ChunkedArray) -> list[Any]:
    return arr.to_pylist()


def _map(fn: Callable[..., Any], out_type: pa.DataType, *arrays: pa.Array | pa.ChunkedArray,
         strict: bool) -> pa.Array:
    """``fn`` over the rows of `arrays` (NULL in, NULL out). With `strict` a row's error raises
    (batch queries, PostgreSQL's errors); otherwise it yields NULL, as RisingWave's streaming
    expressions do."""
    columns = [_texts(a) for a in arrays]
    out: list[Any] = []
    for row in zip(*columns, strict=True):
        if any(v is None for v in row):
            out.append(None)
            continue
        try:
            out.append(fn(*row))
        except RisingSparkError:
            if strict:
                raise
            out.append(None)
    return pa.array(out, out_type)


def _none_if_missing(v: Any) -> Any:
    return None if v is MISSING else v


def _json_out(v: Any) -> str | None:
    return None if v is MISSING else dumps(v)


def _text_out(v: Any) -> str | None:
    return None if v is MISSING else as_text(v)


def _step(value: Any, step: Any) -> Any:
    if isinstance(step, int):
        return get_index(value, step)
    return get_key(value, step)


def op_in(texts: pa.Array, strict: bool = True) -> pa.Array:
    """``text::jsonb``."""
    return _map(canonical, pa.string(), texts, strict=strict)


def op_get(values: pa.Array, steps: pa.Array, strict: bool = True) -> pa.Array:
    """``->`` by key (string array) or index (integer array)."""
    return _map(lambda v, s: _json_out(_step(parse(v), s)), pa.string(), values, steps, strict=strict)


def op_get_text(values: pa.Array, steps: pa.Array, strict: bool = True) -> pa.Array:
    """``->>``."""
    return _map(lambda v, s: _text_out(_step(parse(v), s)), pa.string(), values, steps, strict=strict)


def _path(p: str | list[str | None]) -> list[str | None]:
    """A path: a ``text[]`` as its text (a string) or as a list."""
    return p if isinstance(p, list) else parse_path(p)


def op_path(values: pa.Array, paths: pa.Array, strict: bool = True) -> pa.Array:
    """``#>``."""
    return _map(lambda v, p: _json_out(get_path(parse(v), _path(p))), pa.string(), values, paths, strict=strict)


def op_path_text(values: pa.Array, paths: pa.Array, strict: bool = True) -> pa.Array:
    """``#>>``."""
    return _map(lambda v, p: _text_out(get_path(parse(v), _path(p))), pa.string(), values, paths, strict=strict)


def op_contains(a: pa.Array, b: pa.Array, strict: bool = True) -> pa.Array:
    """``@>``."""
    return _map(lambda x, y: contains(parse(x), parse(y)), pa.bool_(), a, b, strict=strict)


def op_contained(a: pa.Array, b: pa.Array, strict: bool = True) -> pa.Array:
    """``<@``."""
    return _map(lambda x, y: contains(parse(y), parse(x)), pa.bool_(), a, b, strict=strict)


def op_equal(a: pa.Array, b: pa.Array, strict: bool = True) -> pa.Array:
    """``=``."""
    return _map(lambda x, y: equal(parse(x), parse(y)), pa.bool_(), a, b, strict=strict)


def op_exists(values: pa.Array, keys: pa.Array, strict: bool = True) -> pa.Array:
    """``?``."""
    return _map(lambda v, k: exists(parse(v), k), pa.bool_(), values, keys, strict=strict)


def op_exists_any(values: pa.Array, keys: pa.Array, strict: bool = True) -> pa.Array:
    """``?|``."""
    return _map(lambda v, k: exists_any(parse(v), k), pa.bool_(), values, keys, strict=strict)


def op_exists_all(values: pa.Array, keys: pa.Array, strict: bool = True) -> pa.Array:
    """``?&``."""
    return _map(lambda v, k: exists_all(parse(v), k), pa.bool_(), values, keys, strict=strict)


def op_concat(a: pa.Array, b: pa.Array, strict: bool = True) -> pa.Array:
    """``||``."""
    return _map(lambda x, y: dumps(jsonb_edit.concat(parse(x), parse(y))), pa.string(), a, b, strict=strict)


def op_delete(values: pa.Array, what: pa.Array, strict: bool = True) -> pa.Array:
    """``-`` of a key (string array), an index (integer array) or keys (list array)."""
    def delete(v: str, w: Any) -> str:
        if isinstance(w, list):
            return dumps(jsonb_edit.delete_keys(parse(v), w))
        if isinstance(w, int):
            return dumps(jsonb_edit.delete_index(parse(v), w))
        return dumps(jsonb_edit.delete_key(parse(v), w))

    return _map(delete, pa.string(), values, what, strict=strict)


def op_delete_path(values: pa.Array, paths: pa.Array, strict: bool = True) -> pa.Array:
    """``#-``."""
    return _map(lambda v, p: dumps(jsonb_edit.delete_path(parse(v), _path(p))), pa.string(), values, paths,
                strict=strict)


def op_typeof(values: pa.Array, strict: bool = True) -> pa.Array:
    return _map(lambda v: typeof(parse(v)), pa.string(), values, strict=strict)


def op_array_length(values: pa.Array, strict: bool = True) -> pa.Array:
    return _map(lambda v: array_length(parse(v)), pa.int32(), values, strict=strict)


# name -> (function, argument kinds, result Arrow type); the kinds say how a UDF declares them:
# "jsonb" and "text" are strings, "int" a 32-bit integer, "text[]" a list of strings
OPERATORS: dict[str, tuple[Callable[..., pa.Array], tuple[str, ...], pa.DataType]] = {
    "jsonb_in": (op_in, ("text",), pa.string()),
    "jsonb_get_key": (op_get, ("jsonb", "text"), pa.string()),
    "jsonb_get_index": (op_get, ("jsonb", "int"), pa.string()),
    "jsonb_get_key_text": (op_get_text, ("jsonb", "text"), pa.string()),
    "jsonb_get_index_text": (op_get_text, ("jsonb", "int"), pa.string()),
    "jsonb_path": (op_path, ("jsonb", "text"), pa.string()),
    "jsonb_path_text": (op_path_text, ("jsonb", "text"), pa.string()),
    "jsonb_path_array": (op_path, ("jsonb", "text[]"), pa.string()),
    "jsonb_path_text_array": (op_path_text, ("jsonb", "text[]"), pa.string()),
    "jsonb_contains": (op_contains, ("jsonb", "jsonb"), pa.bool_()),
    "jsonb_contained": (op_contained, ("jsonb", "jsonb"), pa.bool_()),
    "jsonb_exists": (op_exists, ("jsonb", "text"), pa.bool_()),
    "jsonb_equal": (op_equal, ("jsonb", "jsonb"), pa.bool_()),
    "jsonb_exists_any": (op_exists_any, ("jsonb", "text[]"), pa.bool_()),
    "jsonb_exists_all": (op_exists_all, ("jsonb", "text[]"), pa.bool_()),
    "jsonb_concat": (op_concat, ("jsonb", "jsonb"), pa.string()),
    "jsonb_delete_key": (op_delete, ("jsonb", "text"), pa.string()),
    "jsonb_delete_index": (op_delete, ("jsonb", "int"), pa.string()),
    "jsonb_delete_keys": (op_delete, ("jsonb", "text[]"), pa.string()),
    "jsonb_delete_path": (op_delete_path, ("jsonb", "text"), pa.string()),
    "jsonb_delete_path_array": (op_delete_path, ("jsonb", "text[]"), pa.string()),
    "jsonb_typeof": (op_typeof, ("jsonb",), pa.string()),
    "jsonb_array_length": (op_array_length, ("jsonb",), pa.int32()),
}

# the operators whose result is jsonb (the others': text, boolean, integer)
JSONB_RESULTS = frozenset({"jsonb_in", "jsonb_get_key", "jsonb_get_index", "jsonb_path", "jsonb_path_array", "jsonb_concat",
                           "jsonb_delete_key", "jsonb_delete_index", "jsonb_delete_keys", "jsonb_delete_path",
                           "jsonb_delete_path_array"})

UDF_PREFIX = "rs_"  # the registered name of an operator: rs_jsonb_get_key, ...
