"""The MVCC merge and the vectorized key comparisons."""

from __future__ import annotations

import datetime as dt
import random
from decimal import Decimal

import pyarrow as pa
import pytest

from risingspark.errors import InternalError
from risingspark.storage.desc import StateTableDesc
from risingspark.storage.mvcc import (
    compare_rows,
    keys_after,
    keys_at_or_before,
    merge_versions,
    retain_versions,
    sort_keys,
    sort_table,
)
from risingspark.types import BOOL, DATE, FLOAT8, INT4, INT8, TIMESTAMP, TIMESTAMPTZ, VARCHAR, DataType, Field

NUM = DataType.parse("numeric(10,2)")
# pk = (name, amount): a string then a decimal; `v` is a plain value
DESC = StateTableDesc(3, (Field("name", VARCHAR), Field("v", INT8), Field("amount", NUM)), pk=(0, 2))


def rows(data: list[tuple]) -> pa.Table:
    """(vnode, name, v, amount, epoch, tombstone) tuples, in SST schema."""
    cols = list(zip(*data, strict=True)) if data else [[]] * 6
    schema = DESC.sst_schema()
    return pa.table([pa.array(c, t) for c, t in zip(cols, schema.types, strict=True)], schema=schema)


def d(x: str) -> Decimal:
    return Decimal(x)


def values(table: pa.Table) -> list[tuple]:
    return list(zip(table.column("_vnode").to_pylist(), table.column("name").to_pylist(),
                    table.column("amount").to_pylist(), table.column("v").to_pylist(), strict=True))


def test_newest_version_wins_and_older_epochs_are_readable():
    l0_new = rows([(1, "b", 30, d("1.00"), 30, False), (0, "a", 20, d("1.00"), 20, False)])
    l0_old = rows([(0, "a", 10, d("1.00"), 10, False), (1, "b", 10, d("1.00"), 10, False)])
    l1 = rows([(0, "a", 1, d("1.00"), 1, False), (0, "z", 1, d("9.99"), 1, False)])
    for order in ([l0_new, l0_old, l1], [l1, l0_old, l0_new]):
        assert values(merge_versions(order, DESC, None)) == [
            (0, "a", d("1.00"), 20), (0, "z", d("9.99"), 1), (1, "b", d("1.00"), 30)]
        assert values(merge_versions(order, DESC, 10)) == [
            (0, "a", d("1.00"), 10), (0, "z", d("9.99"), 1), (1, "b", d("1.00"), 10)]
        assert values(merge_versions(order, DESC, 5)) == [(0, "a", d("1.00"), 1), (0, "z", d("9.99"), 1)]
        assert merge_versions(order, DESC, 0).num_rows == 0


def test_tombstones_hide_older_versions_until_rewritten():
    t = rows([(0, "a", 1, d("1"), 10, False), (0, "a", None, d("1"), 20, True),
              (0, "a", 3, d("1"), 30, False), (0, "b", 1, d("1"), 10, False), (0, "b", None, d("1"), 15, True)])
    assert values(merge_versions([t], DESC, 10)) == [(0, "a", d("1.00"), 1), (0, "b", d("1.00"), 1)]
    assert values(merge_versions([t], DESC, 25)) == []
    assert values(merge_versions([t], DESC, None)) == [(0, "a", d("1.00"), 3)]
    kept = merge_versions([t], DESC, 25, keep_tombstones=True)
    assert kept.column("_tombstone").to_pylist() == [True, True]
    assert kept.column("_epoch").to_pylist() == [20, 15]
    assert kept.schema.equals(DESC.sst_schema())


def test_multi_column_pk_order_with_strings_and_decimals():
    t = rows([(0, "b", 1, d("-1.5"), 1, False), (0, "a", 2, d("10.00"), 1, False),
              (0, "a", 3, d("9.99"), 1, False), (0, "ab", 4, d("0"), 1, False), (0, "a", 5, None, 1, False),
              (0, None, 6, d("1"), 1, False), (0, "a", 7, d("9.99"), 2, False)])
    got = merge_versions([t], DESC, None)
    # NULLs sort last within each column; (a, 9.99) has two versions, the newer wins
    assert values(got) == [(0, "a", d("9.99"), 7), (0, "a", d("10.00"), 2), (0, "a", None, 5),
                           (0, "ab", d("0.00"), 4), (0, "b", d("-1.50"), 1), (0, None, d("1.00"), 6)]


def test_merge_matches_a_model_on_random_input():
    rng = random.Random(7)
    data = []
    for _ in range(2000):
        tomb = rng.random() < 0.2
        data.append((rng.randrange(4), rng.choice(["x", "y", "xy", None]), None if tomb else rng.randrange(9),
                     Decimal(rng.randrange(5)), rng.randrange(1, 50), tomb))
    # one version per (key, epoch)
    data = list({(r[0], r[1], r[3], r[4]): r for r in data}.values())
    rng.shuffle(data)
    tables = [rows(data[i::3]) for i in range(3)]
    for epoch in (None, 10, 25):
        newest: dict = {}
        for r in data:
            key = (r[0], r[1], r[3])
            if (epoch is None or r[4] <= epoch) and (key not in newest or newest[key][4] < r[4]):
                newest[key] = r
        order = sorted(newest, key=lambda k: (k[0], k[1] is None, k[1] or "", k[2]))
        expected = [(k[0], k[1], k[2], newest[k][2]) for k in order if not newest[k][5]]
        assert values(merge_versions(tables, DESC, epoch)) == expected


def test_merge_casts_and_rejects_bad_input():
    t = rows([(0, "a", 1, d("1"), 1, False)])
    assert merge_versions([], DESC, None).num_rows == 0
    reordered = t.select(["amount", "_tombstone", "name", "_epoch", "v", "_vnode"])
    assert values(merge_versions([reordered, t.slice(0, 0)], DESC, None)) == values(t)
    with pytest.raises(InternalError):
        merge_versions([t.drop_columns(["_epoch"])], DESC, None)


def test_retain_versions_keeps_what_readers_above_the_safe_epoch_need():
    t = rows([(0, "a", 1, d("1"), 10, False), (0, "a", 2, d("1"), 20, False), (0, "a", None, d("1"), 30, True),
              (0, "a", 4, d("1"), 40, False), (0, "b", None, d("1"), 15, True), (0, "b", 1, d("1"), 5, False),
              (0, "c", None, d("1"), 35, True), (0, "c", 1, d("1"), 5, False)])
    kept = retain_versions([t], DESC, 25, drop_tombstones=True)
    assert list(zip(kept.column("name").to_pylist(), kept.column("_epoch").to_pylist(), strict=True)) == [
        ("a", 40), ("a", 30), ("a", 20), ("c", 35), ("c", 5)]
    for epoch in (25, 30, 35, 40, None):
        assert values(merge_versions([kept], DESC, epoch)) == values(merge_versions([t], DESC, epoch))
    newest = retain_versions([t], DESC, None, drop_tombstones=True)
    assert values(newest) == [(0, "a", d("1.00"), 4)]
    assert retain_versions([t], DESC, None, drop_tombstones=False).num_rows == 3


KEY_DESC = StateTableDesc(4, (Field("i", INT4), Field("s", VARCHAR), Field("n", NUM), Field("b", BOOL),
                              Field("dt", DATE), Field("ts", TIMESTAMP), Field("tz", TIMESTAMPTZ)),
                          pk=(0, 1, 2, 3, 4, 5, 6))


def key_rows(data: list[tuple]) -> pa.Table:
    schema = KEY_DESC.sst_schema()
    cols = list(zip(*data, strict=True))
    arrays = [pa.array(c, schema.field(i).type) for i, c in enumerate(cols)]
    n = len(data)
    return pa.Table.from_arrays(arrays + [pa.array([1] * n, pa.int64()), pa.array([False] * n)],
                                schema=schema)


def test_keys_after_all_types_and_vnode_positions():
    day, t0 = dt.date(2024, 1, 2), dt.datetime(2024, 1, 2, 3, 4, 5)
    tz = dt.datetime(2024, 1, 2, tzinfo=dt.UTC)
    base = (1, "m", d("1.50"), True, day, t0, tz)
    variants = [
        (0, 1, "m", d("1.50"), True, day, t0, tz),  # equal
        (0, 2, "a", d("0"), False, day, t0, tz),  # greater in the first column
        (0, 1, "ma", d("0"), False, day, t0, tz),  # greater string
        (0, 1, "m", d("1.49"), True, day, t0, tz),  # smaller decimal
        (0, 1, "m", d("1.50"), False, day, t0, tz),  # smaller bool
        (0, 1, "m", d("1.50"), True, day + dt.timedelta(1), t0, tz),  # greater date
        (0, 1, "m", d("1.50"), True, day, t0 - dt.timedelta(microseconds=1), tz),  # smaller ts
        (0, 1, "m", d("1.50"), True, day, t0, tz + dt.timedelta(seconds=1)),  # greater tstz
        (0, 1, "m", None, False, day, t0, tz),  # NULL is after every value
        (1, 0, "a", d("0"), False, day, t0, tz),  # vnode 1: not started
        (2, 0, "a", d("0"), False, day, t0, tz),  # vnode 2: absent from positions
    ]
    t = key_rows(variants)
    positions = {0: base, 1: None}
    after = keys_after(t, KEY_DESC, positions).to_pylist()
    assert after == [False, True, True, False, False, True, False, True, True, True, True]
    upto = keys_at_or_before(t, KEY_DESC, positions).to_pylist()
    assert upto == [True, False, False, True, True, False, True, False, False, False, False]
    with pytest.raises(InternalError):
        keys_after(t, KEY_DESC, {0: (1, "m")})


def test_compare_rows_agrees_with_the_sort_order():
    rng = random.Random(3)
    desc = StateTableDesc(9, (Field("f", FLOAT8), Field("s", VARCHAR)), pk=(0, 1))
    vals = [1.0, -2.5, float("nan"), None, 0.0]
    data = [(0, rng.choice(vals), rng.choice(["a", "b", None])) for _ in range(300)]
    t = pa.table({"_vnode": pa.array([r[0] for r in data], pa.int16()),
                  "f": pa.array([r[1] for r in data], pa.float64()), "s": [r[2] for r in data]})
    s = sort_table(t, sort_keys(desc, with_epoch=False))
    cols = [s.column("f"), s.column("s")]
    gt, eq = compare_rows([c.slice(1) for c in cols], [c.slice(0, len(s) - 1) for c in cols], len(s) - 1)
    assert (gt | eq).all()  # every row is >= its predecessor
    assert gt.any() and eq.any()
    positions = {0: (float("nan"), "a")}
    after = keys_after(s, desc, positions).to_pylist()
    assert after == sorted(after)  # monotone over sorted rows
    assert after.index(True) == sum(1 for r in data if r[1] is not None and (
        r[1] == r[1] or (r[2] is not None and r[2] <= "a")))
