"""NULL-safe keyed helpers of the executors (`compute.executor.keyed`)."""

from __future__ import annotations

import datetime as dt
import random
from decimal import Decimal

import pyarrow as pa
import pytest

from compute.executor.keyed import (
    PRESENT,
    distinct_keys,
    drop_join_keys,
    filter_by_keys,
    first_per_key,
    join_keys,
    last_per_key,
    left_join,
    rows_equal,
    same_key_as_previous,
)
from risingspark.chunk import VNODE

KEY_TYPES = [
    (pa.int32(), [0, 1, -1]),
    (pa.int64(), [0, 7, 2**40]),
    (pa.string(), ["", "a", "é"]),
    (pa.decimal128(12, 2), [Decimal("0.00"), Decimal("0.01"), Decimal("-9999999999.99")]),
    (pa.date32(), [dt.date(1970, 1, 1), dt.date(2024, 2, 29), dt.date(1969, 12, 31)]),
    (pa.timestamp("us"), [dt.datetime(1970, 1, 1), dt.datetime(2024, 1, 1, 12), dt.datetime(1900, 1, 1)]),
    (pa.bool_(), [False, True, False]),
    (pa.float64(), [0.0, 1.5, -2.0]),
]


def rows(table: pa.Table) -> list[tuple]:
    return list(zip(*(table.column(n).to_pylist() for n in table.column_names), strict=True))


@pytest.mark.parametrize(("typ", "values"), KEY_TYPES, ids=[str(t) for t, _ in KEY_TYPES])
def test_left_join_matches_null_with_null_only(typ, values):
    # the first value is the one join_keys fills NULLs with (zero, '', epoch): it must not match NULL
    zero, a, b = values
    left = pa.table({VNODE: pa.array([0, 0, 0, 0, 1], pa.int16()), "k": pa.array([None, zero, a, b, None], typ)})
    right = pa.table({VNODE: pa.array([0, 0, 0], pa.int16()), "k": pa.array([a, None, zero], typ),
                      "v": ["is-a", "is-null", "is-zero"]})
    out = left_join(left, right, [VNODE, "k"])
    assert out.column_names == [VNODE, "k", "k__r", "v__r", f"{PRESENT}__r"]
    got = sorted(((r[0], repr(r[1]), r[3], r[4]) for r in rows(out)), key=repr)
    want = [(0, repr(None), "is-null", True), (0, repr(zero), "is-zero", True), (0, repr(a), "is-a", True),
            (0, repr(b), None, False), (1, repr(None), None, False)]
    if b == zero:  # bool: only two values
        want[3] = (0, repr(b), "is-zero", True)
    assert got == sorted(want, key=repr)


def test_left_join_on_several_keys_with_one_null():
    left = pa.table({VNODE: pa.array([3, 3, 3], pa.int16()), "a": pa.array([1, 1, None], pa.int64()),
                     "b": ["x", None, None]})
    right = pa.table({VNODE: pa.array([3, 3, 3], pa.int16()), "a": pa.array([1, None, 1], pa.int64()),
                      "b": [None, None, "x"], "v": [10, 20, 30]})
    out = left_join(left, right, [VNODE, "a", "b"], right_suffix="__o")
    got = sorted(((r["a"], r["b"], r["v__o"], r["__present__o"]) for r in out.to_pylist()), key=repr)
    assert got == sorted([(1, "x", 30, True), (1, None, 10, True), (None, None, 20, True)], key=repr)


def test_left_join_with_empty_right():
    left = pa.table({VNODE: pa.array([0], pa.int16()), "k": pa.array([None], pa.string())})
    right = pa.table({VNODE: pa.array([], pa.int16()), "k": pa.array([], pa.string()), "v": pa.array([], pa.int64())})
    out = left_join(left, right, [VNODE, "k"])
    assert out.to_pylist() == [{VNODE: 0, "k": None, "k__r": None, "v__r": None, "__present__r": False}]


def test_join_keys_and_drop():
    t = pa.table({VNODE: pa.array([1, 2], pa.int16()), "k": pa.array([None, 5], pa.int64())})
    joined, names = join_keys(t, [VNODE, "k"])
    assert names[0] == VNODE and len(names) == 3
    assert joined.column(names[1]).to_pylist() == [True, False]
    assert joined.column(names[2]).null_count == 0
    assert drop_join_keys(joined).equals(t)


def test_same_key_as_previous_treats_nulls_as_equal():
    t = pa.table({"a": pa.array([None, None, 1, 1, 1, 2], pa.int64()),
                  "b": pa.array([None, None, None, "x", "x", "x"], pa.string())})
    assert same_key_as_previous(t, ["a", "b"]).to_pylist() == [False, True, False, False, True, False]
    assert same_key_as_previous(t, ["a"]).to_pylist() == [False, True, False, True, True, False]
    assert same_key_as_previous(t.slice(0, 0), ["a"]).to_pylist() == []


def test_last_per_key_and_first_per_key():
    t = pa.table({"k": pa.array([None, 1, None, 1, 2, None], pa.int64()), "seq": [5, 2, 9, 7, 1, 3],
                  "v": ["n5", "a2", "n9", "a7", "b1", "n3"]})
    last = last_per_key(t, ["k"], "seq")
    assert sorted(rows(last), key=repr) == sorted([(None, 9, "n9"), (1, 7, "a7"), (2, 1, "b1")], key=repr)
    first = first_per_key(t, ["k"])
    assert sorted(r[0] or 0 for r in rows(first)) == [0, 1, 2]  # one row per key, NULL included
    assert last_per_key(t.slice(0, 0), ["k"], "seq").num_rows == 0


@pytest.mark.parametrize("seed", range(5))
def test_last_per_key_random(seed):
    rng = random.Random(seed)
    n = 200
    keys = [(rng.choice([None, 0, 1]), rng.choice([None, "", "a"])) for _ in range(n)]
    seqs = rng.sample(range(10 * n), n)
    t = pa.table({"a": pa.array([k[0] for k in keys], pa.int64()), "b": [k[1] for k in keys], "seq": seqs})
    want: dict[tuple, int] = {}
    for k, s in zip(keys, seqs, strict=True):
        want[k] = max(want.get(k, -1), s)
    got = {(r[0], r[1]): r[2] for r in rows(last_per_key(t, ["a", "b"], "seq"))}
    assert got == want
    assert {(r[0], r[1]) for r in rows(distinct_keys([t.slice(0, 50), t.slice(0, 0), t.slice(50)], ["a", "b"]))} \
        == set(keys)


def test_distinct_keys_of_nothing_keeps_the_schema():
    t = pa.table({"k": pa.array([], pa.int64()), "v": pa.array([], pa.string())})
    out = distinct_keys([t, t], ["k"])
    assert out.num_rows == 0 and out.schema.names == ["k"]


def test_rows_equal_null_safe():
    a = pa.table({"x": pa.array([1, None, None, 2], pa.int64()), "y": ["a", "b", None, None]})
    b = pa.table({"x": pa.array([1, None, 3, 2], pa.int64()), "y": ["a", "b", None, "c"]})
    assert rows_equal(a, b, ["x", "y"]).to_pylist() == [True, True, False, False]
    assert rows_equal(a, b, ["y"]).to_pylist() == [True, True, True, False]
    assert rows_equal(a, b, []).to_pylist() == [True] * 4


def test_nan_keys_are_one_key():
    """Postgres (and the storage layer's key comparison) hold NaN equal to NaN; so do Arrow's hash
    joins and group-bys, and the dedup helpers must agree with them."""
    nan = float("nan")
    t = pa.table({VNODE: pa.array([0, 0, 0, 0], pa.int16()), "k": [nan, 1.0, nan, None], "seq": [1, 2, 3, 4]})
    last = last_per_key(t, [VNODE, "k"], "seq")
    assert sorted(last.column("seq").to_pylist()) == [2, 3, 4]
    assert first_per_key(t, [VNODE, "k"]).num_rows == 3
    assert distinct_keys([t, t], [VNODE, "k"]).num_rows == 3
    s = pa.table({"k": [nan, nan, 1.0]})
    assert same_key_as_previous(s, ["k"]).to_pylist() == [False, True, False]
    a = pa.table({"x": [nan, nan, 1.0, None]})
    b = pa.table({"x": [nan, 1.0, nan, nan]})
    assert rows_equal(a, b, ["x"]).to_pylist() == [True, False, False, False]
    right = pa.table({VNODE: pa.array([0], pa.int16()), "k": [nan], "v": [7]})
    out = left_join(last, right, [VNODE, "k"])
    assert sorted(out.column("v__r").to_pylist(), key=repr) == [7, None, None]


def test_list_columns_cross_joins_and_changes() -> None:
    """array_agg results are lists, which Arrow's hash join cannot carry: joins by position."""
    from compute.executor.materialize import emit, pairs_from_changes
    from risingspark.storage.desc import StateTableDesc
    from risingspark.types import INT4, DataType, Field

    desc = StateTableDesc(9, (Field("g", INT4), Field("xs", DataType.array_of(INT4))), (0,), (0,))
    rows = pa.table({"_op": pa.array([2, 1, 3, 4, 1], pa.int8()), VNODE: pa.array([1, 1, 2, 2, 3], pa.int16()),
                     "g": pa.array([1, 1, 2, 2, 3], pa.int32()),
                     "xs": pa.array([[1, None], [1, None], [2], [2, 5], None], pa.list_(pa.int32()))})
    out = emit(desc, pairs_from_changes(desc, rows), 1 << 16)
    got = sorted(zip(out.changes.column("_op").to_pylist(), out.changes.column("g").to_pylist(),
                     out.changes.column("xs").to_pylist(), strict=True), key=lambda r: (r[1], r[0]))
    assert got == [(3, 2, [2]), (4, 2, [2, 5]), (1, 3, None)]  # group 1 did not change
    kept = filter_by_keys(rows, pa.table({VNODE: pa.array([2], pa.int16()), "g": pa.array([2], pa.int32())}),
                          [VNODE, "g"], keep=True)
    assert kept.column("xs").to_pylist() == [[2], [2, 5]]
