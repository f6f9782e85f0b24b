"""Conditions evaluated by Arrow inside an executor: a small expression tree, as JSON in a plan node,
turned into a `pyarrow.compute.Expression`.

An outer, semi or anti join with a condition besides its key equalities (``ON a.k = b.k AND a.x <>
b.y``) must test the condition while it matches rows — a row that fails it is padded (outer) or
counts as no match (semi / anti) — so the condition cannot be a filter after the join. The join
executor hands it to Arrow's hash join as its residual filter (`compute.executor.hash_join`), which
has SQL's ON semantics: NULL is not true.

The tree: ``{"col": name}``, ``{"lit": value, "type": <DataType JSON>}``, ``{"call": function,
"args": [...]}`` with `FUNCTIONS` (Arrow compute functions; ``and_kleene`` / ``or_kleene`` are SQL's
three-valued AND / OR), or ``{"cast": <DataType JSON>, "arg": ...}``.

>>> import pyarrow as pa
>>> from risingspark.types import INT4
>>> tree = {"call": "not_equal", "args": [{"col": "a"}, {"lit": 2, "type": INT4.to_json()}]}
>>> pa.table({"a": [1, 2, None]}).filter(to_arrow(tree)).column("a").to_pylist()
[1]
"""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from risingspark.errors import FeatureNotSupported
from risingspark.types import DataType, TypeName

FUNCTIONS = frozenset({"equal", "not_equal", "less", "less_equal", "greater", "greater_equal", "and_kleene",
                       "or_kleene", "invert", "is_null", "is_valid", "add_checked", "subtract_checked",
                       "multiply_checked", "negate_checked", "abs_checked"})


def to_arrow(tree: dict[str, Any]) -> pc.Expression:
    if "col" in tree:
        return pc.field(tree["col"])
    if "lit" in tree:
        t = DataType.from_json(tree["type"])
        return pc.scalar(pa.scalar(_value(tree["lit"], t), t.to_arrow()))
    if "cast" in tree:
        return to_arrow(tree["arg"]).cast(DataType.from_json(tree["cast"]).to_arrow())
    name = tree["call"]
    if name not in FUNCTIONS:
        raise FeatureNotSupported(f"function {name} in a join condition")
    return getattr(pc, name)(*[to_arrow(a) for a in tree["args"]])


def dumps(tree: dict[str, Any]) -> str:
    return json.dumps(tree, default=_json_value)


def loads(text: str) -> dict[str, Any]:
    return json.loads(text)


def _json_value(v: Any) -> Any:
    if isinstance(v, Decimal | dt.date | dt.datetime):
        return str(v)
    raise TypeError(f"{type(v).__name__} in a condition")


def _value(v: Any, t: DataType) -> Any:
    """A literal's value as its JSON form held it."""
    if v is None:
        return None
    if t.name is TypeName.NUMERIC:
        return Decimal(v)
    if t.name is TypeName.DATE:
        return dt.date.fromisoformat(v)
    if t.name in (TypeName.TIMESTAMP, TypeName.TIMESTAMPTZ):
        return dt.datetime.fromisoformat(v)
    return v
