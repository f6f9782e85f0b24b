"""Encoding of key values (backfill positions) as JSON text, decoded with the key's types.

>>> from risingspark.types import INT8, VARCHAR
>>> decode_key(encode_key((7, "a")), (INT8, VARCHAR))
(7, 'a')
"""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from typing import Any

from risingspark.types import DataType, TypeName


def _to_json(v: Any) -> Any:
    if isinstance(v, Decimal):
        return str(v)
    if isinstance(v, dt.datetime | dt.date):
        return v.isoformat()
    return v


def encode_key(values: tuple | None) -> str | None:
    if values is None:
        return None
    return json.dumps([_to_json(v) for v in values])


def decode_key(text: str | None, types: tuple[DataType, ...] | list[DataType]) -> tuple | None:
    if text is None:
        return None
    raw = json.loads(text)
    return tuple(_from_json(v, t) for v, t in zip(raw, types, strict=True))


def _from_json(v: Any, t: DataType) -> Any:
    if v is None:
        return None
    if t.name is TypeName.NUMERIC:
        return Decimal(v)
    if t.name is TypeName.DATE:
        return dt.date.fromisoformat(v)
    if t.name in (TypeName.TIMESTAMP, TypeName.TIMESTAMPTZ):
        return dt.datetime.fromisoformat(v)
    if t.is_integer:
        return int(v)
    if t.name in (TypeName.REAL, TypeName.DOUBLE):
        return float(v)
    if t.name is TypeName.BOOLEAN:
        return bool(v)
    return v
