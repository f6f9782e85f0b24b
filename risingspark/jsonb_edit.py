"""jsonb values made from others as PostgreSQL makes them: ``||`` (jsonb_concat), ``-`` (of a key, an
index or keys), and ``#-`` (jsonb_delete_path).

Each function takes and returns parsed values (`risingspark.jsonb.parse`: dicts, lists, str,
Decimal, bool, None); `risingspark.jsonb.OPERATORS` runs them over Arrow arrays for DuckDB and Spark.

>>> from decimal import Decimal as D
>>> concat({"a": D(1)}, {"a": D(2), "b": D(3)}), concat([D(1)], D(2)), concat({"a": D(1)}, [D(2)])
({'a': Decimal('2'), 'b': Decimal('3')}, [Decimal('1'), Decimal('2')], [{'a': Decimal('1')}, Decimal('2')])
>>> delete_path({"a": [D(1), D(2)]}, ["a", "-1"])
{'a': [Decimal('1')]}
"""

from __future__ import annotations

import re
from typing import Any

from risingspark.errors import InvalidParameterValue, InvalidTextRepresentation, NullValueNotAllowed

_INT4 = re.compile(r"[ \t\n\v\f\r]*[+-]?[0-9]+")  # strtoint's: leading blanks, a sign, digits, nothing after


def concat(a: Any, b: Any) -> Any:
    """``a || b``: two objects merge (the right one's value wins for a key both have); otherwise
    both sides are arrays (a scalar or an object is an array of itself) and are joined."""
    if isinstance(a, dict) and isinstance(b, dict):
        return {**a, **b}
    return (a if isinstance(a, list) else [a]) + (b if isinstance(b, list) else [b])


def _no_scalar(value: Any, message: str = "cannot delete from scalar") -> None:
    if not isinstance(value, dict | list):
        raise InvalidParameterValue(message)


def delete_key(value: Any, key: str) -> Any:
    """``value - 'key'``: an object without the key, an array without its string elements equal to it."""
    return delete_keys(value, [key])


def delete_keys(value: Any, keys: list[str | None]) -> Any:
    """``value - '{a,b}'::text[]``: as `delete_key` for each key (NULL keys are none)."""
    _no_scalar(value)
    drop = {k for k in keys if k is not None}
    if isinstance(value, dict):
        return {k: v for k, v in value.items() if k not in drop}
    return [v for v in value if not (isinstance(v, str) and v in drop)]


def delete_index(value: Any, index: int) -> Any:
    """``value - n``: an array without its element `index` (negative counts from the end; out of
    range, the array as it is); 22023 for an object or a scalar."""
    _no_scalar(value)
    if isinstance(value, dict):
        raise InvalidParameterValue("cannot delete from object using integer index")
    at = _position(index, len(value))
    return value if at is None else value[:at] + value[at + 1:]


def _position(index: int, n: int) -> int | None:
    at = index + n if index < 0 else index
    return at if 0 <= at < n else None


def delete_path(value: Any, path: list[str | None]) -> Any:
    """``value #- '{a,0}'``: `value` without the element the path leads to (as it is when the path
    leads nowhere); 22023 for a scalar, 22004 for a NULL step reached, 22P02 for a step into an array
    that is no integer."""
    _no_scalar(value, "cannot delete path in scalar")
    return _delete_at(value, path, 0) if path else value


def _delete_at(value: Any, path: list[str | None], level: int) -> Any:
    step = path[level]
    if step is None:
        raise NullValueNotAllowed(f"path element at position {level + 1} is null")
    last = level == len(path) - 1
    if isinstance(value, dict):
        if step not in value:
            return value
        if last:
            return {k: v for k, v in value.items() if k != step}
        return {**value, step: _delete_at(value[step], path, level + 1)}
    if isinstance(value, list):
        at = _position(_path_index(step, level), len(value))
        if at is None:
            return value
        inner = [] if last else [_delete_at(value[at], path, level + 1)]
        return value[:at] + inner + value[at + 1:]
    return value  # (a scalar inside: the path leads nowhere)


def int4_step(step: str) -> int | None:
    """A path step into an array as PostgreSQL's ``strtoint`` reads it (leading blanks and a sign,
    then digits only, within an integer's range), None when it is no such integer."""
    return int(step) if _INT4.fullmatch(step) and -2**31 <= int(step) < 2**31 else None


def _path_index(step: str, level: int) -> int:
    index = int4_step(step)
    if index is None:
        raise InvalidTextRepresentation(f'path element at position {level + 1} is not an integer: "{step}"')
    return index

