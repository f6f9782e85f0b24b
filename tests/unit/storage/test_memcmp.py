"""Memcomparable keys: byte order == SQL order (``ASC NULLS LAST``), checked against Python and
PostgreSQL, and the key matrix / prefix bound helpers."""

from __future__ import annotations

import bisect
import datetime as dt
import doctest
import math
import random
import struct
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import numpy as np
import psycopg
import pyarrow as pa
import pytest

from risingspark.errors import FeatureNotSupported, InternalError
from risingspark.storage import memcmp
from risingspark.storage.memcmp import encode_keys, key_matrix, upper_bounds

PG_DSN = "host=127.0.0.1 port=5432 user=postgres dbname=test"
N = 400


# ---------------------------------------------------------------------------------------------
# the reference: SQL order of Python values


def sql_key(v: Any) -> tuple:
    """A Python sort key of one column value in ``ASC NULLS LAST`` order (NaN last before NULL,
    -0.0 == 0.0, strings by their UTF-8 bytes); equal iff the values are equal as key values."""
    if v is None:
        return (2,)
    if isinstance(v, float) and math.isnan(v):
        return (1,)
    if isinstance(v, str):
        return (0, v.encode())
    return (0, v)


def reference_values(arr: pa.Array) -> list:
    """The Python values of `arr` to compare: temporal types as their stored integers."""
    t = arr.type
    if pa.types.is_date32(t) or pa.types.is_time32(t):
        return arr.view(pa.int32()).to_pylist()
    if pa.types.is_temporal(t):
        return arr.view(pa.int64()).to_pylist()
    return arr.to_pylist()


def row_keys(vnodes: pa.Array | None, columns: list[pa.Array]) -> list[tuple]:
    cols = [reference_values(c) for c in columns]
    n = len(vnodes) if vnodes is not None else len(cols[0])
    vn = vnodes.to_pylist() if vnodes is not None else None
    return [((vn[i],) if vn is not None else ()) + tuple(sql_key(c[i]) for c in cols) for i in range(n)]


def assert_same_order(keys: pa.BinaryArray, ref: list[tuple]) -> None:
    """Sorting by the encoded bytes orders the reference keys, with equal encodings exactly for equal
    reference keys; and the keys are prefix-free."""
    enc = keys.to_pylist()
    assert all(isinstance(k, bytes) for k in enc)
    order = sorted(range(len(enc)), key=lambda i: enc[i])
    for a, b in zip(order, order[1:], strict=False):
        assert ref[a] <= ref[b], (ref[a], ref[b], enc[a].hex(), enc[b].hex())
        assert (enc[a] == enc[b]) == (ref[a] == ref[b]), (ref[a], ref[b], enc[a].hex(), enc[b].hex())
        if enc[a] != enc[b]:
            assert not enc[b].startswith(enc[a]), (enc[a].hex(), enc[b].hex())


# ---------------------------------------------------------------------------------------------
# random data of every type


def with_nulls(rng: random.Random, values: list, p: float = 0.1) -> list:
    return [None if rng.random() < p else v for v in values]


def pick(rng: random.Random, special: list, gen: Callable[[], Any], n: int = N) -> list:
    """`n` values: the specials (each at least once), repeats of earlier values, and random ones."""
    out = list(special)
    while len(out) < n:
        r = rng.random()
        out.append(rng.choice(out) if r < 0.2 else gen())
    rng.shuffle(out)
    return out


def ints(rng: random.Random, bits: int) -> list:
    lo, hi = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
    special = [lo, lo + 1, hi, hi - 1, 0, -1, 1, 255, 256, -256]
    return pick(rng, [max(lo, min(hi, v)) for v in special], lambda: rng.randint(lo, hi))


def float_array(rng: random.Random, np_type: type) -> pa.Array:
    info = np.finfo(np_type)
    nans = [np.nan, -np.nan, np.copysign(np.nan, -1.0)]
    if np_type is np.float64:
        nans += [struct.unpack("<d", struct.pack("<Q", b))[0] for b in (0x7FF0000000000001, 0xFFF8000000000123)]
    special = [*nans, np.inf, -np.inf, 0.0, -0.0, float(info.max), -float(info.max), float(info.tiny),
               -float(info.tiny), float(info.smallest_subnormal), -float(info.smallest_subnormal), 1.0, -1.0]
    with np.errstate(over="ignore"):  # float32 overflows to inf
        values = np.array(pick(rng, special, lambda: rng.choice([-1, 1]) * 10 ** rng.uniform(-45, 45)),
                          dtype=np.float64).astype(np_type)
    if np_type is np.float32:  # a NaN with a payload and sign bit of its own
        values[:3] = np.array([0x7F800001, 0xFFC00000, 0x7FC00001], dtype=np.uint32).view(np.float32)
    mask = np.array([rng.random() < 0.1 for _ in values])
    return pa.array(values, mask=mask)


ALPHABET = ["a", "b", "z", "\x00", "\x01", "\x7f", "é", "ÿ", "中", "😀", " "]
BYTES = [b"a", b"b", b"\x00", b"\x01", b"\xf7", b"\xfe", b"\xff", b"\x80"]


def texts(rng: random.Random, units: list) -> list:
    """Strings / bytes around multiples of 8 long, with many prefixes of each other."""
    empty = units[0][:0]

    def gen() -> Any:
        n = rng.choice([0, 1, 6, 7, 8, 9, 15, 16, 17, 23, 24, 25, rng.randint(0, 40)])
        return empty.join(rng.choice(units) for _ in range(n))

    base = [gen() for _ in range(60)]
    special = [empty, units[0] * 7, units[0] * 8, units[0] * 9, units[0] * 8 + units[3], units[0] * 16]
    special += [b[:k] for b in base[:20] for k in range(0, len(b) + 1, 3)]
    return pick(rng, special, lambda: rng.choice(base) if rng.random() < 0.5 else gen())


def decimals(rng: random.Random, precision: int, scale: int) -> list:
    top = 10**precision - 1
    special = [top, -top, 0, 1, -1, top - 1, -top + 1, 2**64, -(2**64), 2**63, -(2**63), 2**64 - 1]
    special = [v for v in special if abs(v) <= top]
    unscaled = pick(rng, special, lambda: rng.randint(-top, top) // 10 ** rng.randint(0, precision))
    return [Decimal(f"{v}e-{scale}") for v in unscaled]  # exact, unlike scaleb (28 digits)


def make_column(rng: random.Random, t: pa.DataType) -> pa.Array:
    if pa.types.is_boolean(t):
        return pa.array(with_nulls(rng, [rng.random() < 0.5 for _ in range(N)]), t)
    if pa.types.is_integer(t):
        return pa.array(with_nulls(rng, ints(rng, t.bit_width)), t)
    if pa.types.is_floating(t):
        return float_array(rng, np.float32 if t == pa.float32() else np.float64)
    if pa.types.is_decimal(t):
        return pa.array(with_nulls(rng, decimals(rng, t.precision, t.scale)), t)
    if pa.types.is_date32(t) or pa.types.is_time32(t):
        return pa.array(with_nulls(rng, ints(rng, 32)), pa.int32()).view(t)
    if pa.types.is_temporal(t):
        return pa.array(with_nulls(rng, ints(rng, 64)), pa.int64()).view(t)
    if pa.types.is_string_view(t):
        return make_column(rng, pa.string()).cast(t)
    if pa.types.is_binary_view(t):
        return make_column(rng, pa.binary()).cast(t)
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return pa.array(with_nulls(rng, texts(rng, ALPHABET)), t)
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return pa.array(with_nulls(rng, texts(rng, BYTES)), t)
    if pa.types.is_fixed_size_binary(t):
        return pa.array(with_nulls(rng, [bytes(rng.choice(BYTES)[0] for _ in range(t.byte_width))
                                         for _ in range(N)]), t)
    raise AssertionError(t)


TYPES = [
    pa.bool_(), pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.float32(), pa.float64(),
    pa.date32(), pa.date64(), pa.timestamp("s"), pa.timestamp("ms"), pa.timestamp("us", tz="UTC"),
    pa.timestamp("ns", tz="Asia/Tokyo"), pa.time32("ms"), pa.time64("us"), pa.time64("ns"), pa.duration("us"),
    pa.decimal128(12, 2), pa.decimal128(38, 0), pa.decimal128(38, 10), pa.decimal128(5, 5),
    pa.decimal256(50, 4), pa.string(), pa.large_string(), pa.binary(), pa.large_binary(), pa.binary(3),
    pa.string_view(), pa.binary_view(),
    *([pa.decimal64(15, 3), pa.decimal32(7, 0)] if hasattr(pa, "decimal32") else []),  # pyarrow >= 18
]


@pytest.mark.parametrize("t", TYPES, ids=str)
def test_single_column_byte_order_is_sql_order(t):
    rng = random.Random(str(t))
    col = make_column(rng, t)
    assert col.null_count > 0
    assert_same_order(encode_keys(None, [col]), row_keys(None, [col]))
    vnodes = pa.array([rng.choice([-32768, -1, 0, 1, 255, 32767]) for _ in range(len(col))], pa.int16())
    assert_same_order(encode_keys(vnodes, [col]), row_keys(vnodes, [col]))


@pytest.mark.parametrize("seed", range(4))
def test_multi_column_byte_order_is_lexicographic_sql_order(seed):
    rng = random.Random(seed)
    n = 800

    def low(values: list) -> list:  # few distinct values, so later columns decide often
        pool = values[:6] + [None]
        return [rng.choice(pool) for _ in range(n)]

    kinds = [
        (pa.string(), low(texts(rng, ALPHABET))),
        (pa.int32(), low(ints(rng, 32))),
        (pa.float64(), low([math.nan, -0.0, 0.0, 1.5, -math.inf, math.inf, 2.0])),
        (pa.decimal128(20, 3), low(decimals(rng, 20, 3))),
        (pa.binary(), low(texts(rng, BYTES))),
        (pa.timestamp("us"), None),
        (pa.bool_(), low([True, False])),
    ]
    cols = []
    for t, values in rng.sample(kinds, 3):
        if values is None:
            cols.append(pa.array(low(ints(rng, 64)), pa.int64()).view(t))
        else:
            cols.append(pa.array(values, t))
    vnodes = pa.array([rng.choice([0, 1, 2, -5]) for _ in range(n)], pa.int16())
    ref = row_keys(vnodes, cols)
    assert_same_order(encode_keys(vnodes, cols), ref)
    assert_same_order(encode_keys(None, cols), row_keys(None, cols))
    # key_matrix sorts the same way
    keys = encode_keys(vnodes, cols)
    order = np.argsort(key_matrix(keys), kind="stable")
    assert [ref[i] for i in order] == sorted(ref)


def test_exact_encodings():
    def enc(col: pa.Array, vnodes: pa.Array | None = None) -> list[str]:
        return [k.hex(" ") for k in encode_keys(vnodes, [col]).to_pylist()]

    assert enc(pa.array([0], pa.int32()), pa.array([0], pa.int16())) == ["80 00 01 80 00 00 00"]
    assert [k.hex() for k in encode_keys(pa.array([-32768, -1, 5], pa.int16()), []).to_pylist()] == [
        "0000", "7fff", "8005"]
    assert enc(pa.array([1, -1, None], pa.int32())) == ["01 80 00 00 01", "01 7f ff ff ff", "02 00 00 00 00"]
    assert enc(pa.array([True, False, None])) == ["01 01", "01 00", "02 00"]
    assert enc(pa.array([0.0, -0.0, 1.0, -1.0, math.nan, None])) == [
        "01 80 00 00 00 00 00 00 00", "01 80 00 00 00 00 00 00 00", "01 bf f0 00 00 00 00 00 00",
        "01 40 0f ff ff ff ff ff ff", "01 ff f8 00 00 00 00 00 00", "02 00 00 00 00 00 00 00 00"]
    assert enc(pa.array([Decimal("-0.01"), Decimal("0.01")], pa.decimal128(10, 2))) == [
        "01 7f" + " ff" * 15, "01 80" + " 00" * 14 + " 01"]
    assert enc(pa.array(["", "abc", "abcdefgh", None, "abcdefghi"])) == [
        "01 00 00 00 00 00 00 00 00 f7",
        "01 61 62 63 00 00 00 00 00 fa",
        "01 61 62 63 64 65 66 67 68 ff 00 00 00 00 00 00 00 00 f7",
        "02",
        "01 61 62 63 64 65 66 67 68 ff 69 00 00 00 00 00 00 00 f8"]
    assert enc(pa.array([b"\x00\xff"], pa.large_binary())) == ["01 00 ff 00 00 00 00 00 00 f9"]
    for s in ["", "é", "x" * 8, "y" * 23]:  # 9 bytes per started group of 8, plus the marker
        assert len(encode_keys(None, [pa.array([s])])[0].as_py()) == 1 + 9 * (len(s.encode()) // 8 + 1)


def test_null_slots_with_garbage_and_all_null_columns():
    validity = pa.py_buffer(np.packbits([1, 0, 1, 0], bitorder="little"))
    ints = pa.Array.from_buffers(pa.int64(), 4, [validity, pa.py_buffer(np.array([5, 6, 5, 7]))])
    floats = pa.Array.from_buffers(pa.float64(), 4, [validity, pa.py_buffer(np.array([1.0, np.nan, 1.0, 3.0]))])
    # NULL slots may have data: here "bb" and "cccccccccc"
    strs = pa.Array.from_buffers(pa.string(), 4, [validity, pa.py_buffer(np.array([0, 1, 3, 4, 14], np.int32)),
                                                  pa.py_buffer(b"abbacccccccccc")])
    for col in (ints, floats, strs):
        keys = encode_keys(None, [col]).to_pylist()
        assert keys[1] == keys[3] and keys[0] == keys[2] and keys[0] < keys[1], col
        assert keys[1][0] == 2 and not any(keys[1][1:])
    for t in TYPES:
        keys = encode_keys(pa.array([7, 7, 7], pa.int16()), [pa.nulls(3, t), pa.array([1, None, 1])]).to_pylist()
        assert keys[0] == keys[2] < keys[1], t


def test_empty_and_no_columns():
    assert encode_keys(None, []).to_pylist() == []
    assert encode_keys(pa.array([], pa.int16()), [pa.array([], pa.string())]).to_pylist() == []
    out = encode_keys(pa.array([3, 4], pa.int16()), [])
    assert out.type == pa.binary() and out.to_pylist() == [b"\x80\x03", b"\x80\x04"]


@pytest.mark.parametrize("t", TYPES, ids=str)
def test_sliced_and_chunked_inputs(t):
    rng = random.Random(f"slice {t}")
    col = make_column(rng, t)
    strings = make_column(rng, pa.string())
    vnodes = pa.array([rng.randint(0, 255) for _ in range(N)], pa.int16())
    expected = encode_keys(vnodes, [col, strings]).to_pylist()
    lo, hi = 37, N - 11
    fresh = [pa.array(c[lo:hi].to_pylist(), c.type) if "view" in str(c.type) else c.take(pa.array(range(lo, hi)))
             for c in (vnodes, col, strings)]  # copies at offset 0 (take has no kernel for views)
    sliced = encode_keys(vnodes.slice(lo, hi - lo), [col.slice(lo, hi - lo), strings.slice(lo, hi - lo)])
    assert sliced.offset == 0 and sliced.type == pa.binary()
    assert sliced.to_pylist() == expected[lo:hi] == encode_keys(fresh[0], fresh[1:]).to_pylist()
    chunked = [pa.chunked_array([c.slice(0, k), c.slice(k, 5), c.slice(k + 5)], c.type)
               for c, k in ((vnodes, 3), (col, 100), (strings, 250))]
    assert encode_keys(chunked[0], chunked[1:]).to_pylist() == expected
    assert encode_keys(pa.chunked_array([], pa.int16()), [pa.chunked_array([], t)]).to_pylist() == []


def test_unsupported_types_and_bad_input():
    for col in [pa.array([[1]], pa.list_(pa.int64())), pa.array([{"a": 1}]), pa.array([1], pa.uint32()),
                pa.array(["a"]).dictionary_encode(), pa.array([None], pa.null()),
                pa.array([np.float16(1)], pa.float16())]:
        with pytest.raises(FeatureNotSupported, match=str(col.type).split("<")[0].split("[")[0]):
            encode_keys(None, [col])
    with pytest.raises(FeatureNotSupported, match="list"):
        encode_keys(pa.array([1], pa.int16()), [pa.array([1]), pa.array([[1]])])
    with pytest.raises(InternalError, match="lengths"):
        encode_keys(pa.array([1, 2], pa.int16()), [pa.array([1])])
    with pytest.raises(InternalError, match="NULL"):
        encode_keys(pa.array([1, None], pa.int16()), [])


def test_module_doctest():
    result = doctest.testmod(memcmp)
    assert result.attempted > 0 and result.failed == 0


# ---------------------------------------------------------------------------------------------
# key_matrix


def padded(m: np.ndarray) -> list[bytes]:
    """The rows of a key matrix with their zero padding (numpy strips it from items)."""
    w = m.dtype.itemsize
    return [bytes(r) for r in np.ascontiguousarray(m).view(np.uint8).reshape(len(m), w)]


def check_matrix(keys: pa.Array | pa.ChunkedArray, width: int | None = None) -> np.ndarray:
    raw = keys.to_pylist()
    m = key_matrix(keys, width)
    w = max(width or 0, max((len(k) for k in raw), default=0), 1)
    assert m.dtype == np.dtype(f"S{w}") and m.shape == (len(raw),)
    assert padded(m) == [k + b"\x00" * (w - len(k)) for k in raw]
    return m


def test_key_matrix_fixed_width_is_zero_copy():
    rng = np.random.default_rng(1)
    vnodes = pa.array(rng.integers(0, 256, 1000, dtype=np.int16))
    keys = encode_keys(vnodes, [pa.array(rng.integers(-50, 50, 1000))])
    m = check_matrix(keys)
    assert m.dtype == np.dtype("S11") and not m.flags.writeable and not m.flags.owndata  # a view
    assert m.ctypes.data == keys.buffers()[2].address
    part = keys.slice(17, 500)
    ms = check_matrix(part)
    assert ms.ctypes.data == keys.buffers()[2].address + 17 * 11
    assert padded(ms) == padded(m)[17:517]
    assert key_matrix(keys, 11).ctypes.data == keys.buffers()[2].address
    wide = check_matrix(keys, 16)  # wider than the keys: a padded copy
    assert wide.flags.owndata or wide.base is not None
    chunked = pa.chunked_array([keys.slice(0, 10), keys.slice(10)])
    assert padded(check_matrix(chunked)) == padded(m)


@pytest.mark.parametrize("key_type", [pa.binary(), pa.large_binary()], ids=str)
def test_key_matrix_variable_width_and_searchsorted(key_type):
    rng = random.Random(5)
    n = 600
    cols = [pa.array([rng.choice([None, "", "a", "ab", "a" * 8, "a" * 9, "b" * 17, "中文"]) for _ in range(n)]),
            pa.array([rng.choice([None, -1, 0, 7]) for _ in range(n)], pa.int64())]
    keys = encode_keys(pa.array([rng.randint(0, 3) for _ in range(n)], pa.int16()), cols).cast(key_type)
    stored = sorted(keys.to_pylist()[: n // 2])
    probes = keys.to_pylist()[n // 2:] + stored[::7]
    store = pa.array(stored, key_type)
    for width in (None, 60):
        m = check_matrix(store, width)
        assert list(np.argsort(m, kind="stable")) == list(range(len(stored)))
        p = key_matrix(pa.array(probes, key_type), m.dtype.itemsize)
        for side, fn in (("left", bisect.bisect_left), ("right", bisect.bisect_right)):
            assert np.searchsorted(m, p, side=side).tolist() == [fn(stored, q) for q in probes]
    check_matrix(store.slice(5, 100))
    check_matrix(store.slice(5, 100), 200)
    check_matrix(pa.chunked_array([store.slice(0, 3), store.slice(3, 50), store.slice(53)]))
    check_matrix(pa.chunked_array([], key_type))
    check_matrix(pa.array([b"", b"", b""], key_type))
    check_matrix(pa.array([b"", b"", b""], key_type), 3)
    check_matrix(pa.array([b"ab\x00", b"cd\x00"], key_type), 9)
    # many distinct lengths (another copy path), garbage after the last key in the data buffer
    many = pa.array([bytes(rng.randrange(256) for _ in range(rng.randint(0, 40))) for _ in range(300)]
                    + [b"\xff" * 64], key_type)
    assert len({len(k) for k in many.to_pylist()}) > 16
    for arr in (many, many.slice(1, 250), many.slice(0, 299), pa.chunked_array([many.slice(0, 9), many.slice(9)])):
        check_matrix(arr)
        check_matrix(arr, 67)


def test_key_matrix_rejects_nulls_and_non_binary():
    with pytest.raises(InternalError, match="NULL"):
        key_matrix(pa.array([b"a", None]))
    with pytest.raises(InternalError, match="binary"):
        key_matrix(pa.array([1, 2]))


# ---------------------------------------------------------------------------------------------
# upper_bounds and the prefix property


def test_upper_bounds():
    p = np.array([b"ab", b"\x80\x00", b"\x00\x00"], dtype="S2")  # a prefix may end with zero bytes
    ub = upper_bounds(p)
    assert ub.dtype == np.dtype("S3") and padded(ub) == [b"ab\xff", b"\x80\x00\xff", b"\x00\x00\xff"]
    ub = upper_bounds(np.array([b"abc", b"a", b"\x01\x00\x00"], dtype="S3"), lengths=np.array([3, 1, 2]))
    assert ub.dtype == np.dtype("S4") and padded(ub) == [b"abc\xff", b"a\xff\x00\x00", b"\x01\x00\xff\x00"]
    assert upper_bounds(np.zeros(0, dtype="S4")).dtype == np.dtype("S5")
    with pytest.raises(InternalError):
        upper_bounds(np.array([1, 2]))
    with pytest.raises(InternalError):
        upper_bounds(np.array([b"ab"]), lengths=np.array([3]))


PREFIX_TYPES = [pa.int32(), pa.string(), pa.float64(), pa.decimal128(9, 2), pa.binary(), pa.int64()]


def prefix_rows(rng: random.Random, n: int) -> tuple[pa.Array, list[pa.Array]]:
    pools: list[list] = [
        [None, -1, 0, 1, 2**31 - 1, -(2**31)],
        [None, "", "a", "a" * 7, "a" * 8, "a" * 8 + "b", "é", "\x00"],
        [None, math.nan, -0.0, 0.0, -math.inf, 3.5],
        [None, Decimal("-0.01"), Decimal("0"), Decimal("12.5")],
        [None, b"", b"\x00", b"\x00\x00", b"\xff" * 9, b"\x01"],
        [None, 0, 5],
    ]
    vnodes = pa.array([rng.choice([0, 1, 255, -1]) for _ in range(n)], pa.int16())
    return vnodes, [pa.array([rng.choice(pool) for _ in range(n)], t) for pool, t in zip(pools, PREFIX_TYPES,
                                                                                        strict=True)]


def test_prefix_property():
    rng = random.Random(11)
    vnodes, cols = prefix_rows(rng, 1500)
    ref = row_keys(vnodes, cols)
    order = sorted(range(len(ref)), key=lambda i: ref[i])
    ref = [ref[i] for i in order]
    take = pa.array(order)
    vnodes, cols = vnodes.take(take), [c.take(take) for c in cols]
    keys = encode_keys(vnodes, cols)
    raw = keys.to_pylist()
    assert raw == sorted(raw)  # the SQL order is the byte order
    assert_same_order(keys, ref)  # and the keys are prefix-free
    m = key_matrix(keys, max(len(k) for k in raw) + 1)
    qv, qcols = prefix_rows(rng, 200)  # probes: mostly present, some absent
    for j in range(len(cols) + 1):
        prefixes = encode_keys(qv, qcols[:j])
        praw = prefixes.to_pylist()
        for k in raw:
            for p in praw:
                if k.startswith(p):
                    assert len(k) == len(p) if j == len(cols) else k[len(p)] in (1, 2)
        pm = key_matrix(prefixes)
        lengths = np.array([len(p) for p in praw])
        bounds = [upper_bounds(pm, lengths=lengths)]
        if j == 0 or lengths.min() == lengths.max():  # the same length: no lengths needed
            bounds.append(upper_bounds(pm))
        for ub in bounds:
            lo = np.searchsorted(m, pm)
            hi = np.searchsorted(m, ub)
            assert m.dtype.itemsize >= ub.dtype.itemsize
            qref = row_keys(qv, qcols[:j])
            for i, q in enumerate(qref):
                inside = [r for r, key in enumerate(ref) if key[:j + 1] == q]
                assert inside == [r for r, k in enumerate(raw) if k.startswith(praw[i])]
                assert list(range(lo[i], hi[i])) == inside, (j, q)


# ---------------------------------------------------------------------------------------------
# PostgreSQL as the oracle


@pytest.fixture(scope="module")
def pg() -> Any:
    try:
        conn = psycopg.connect(PG_DSN, connect_timeout=3, autocommit=True)
    except psycopg.OperationalError as e:
        pytest.skip(f"PostgreSQL is unreachable: {e}")
    with conn:
        yield conn


def pg_rows(rng: random.Random, n: int) -> list[tuple]:
    ints8 = [-(2**63), 2**63 - 1, 0, -1, 1] + [rng.randint(-(2**63), 2**63 - 1) for _ in range(8)]
    floats = [math.nan, math.inf, -math.inf, 0.0, -0.0, 1e-300, -1e300, 2.5, -2.5, 1.0]
    nums = [Decimal(f"{rng.randint(-(10**12) + 1, 10**12 - 1)}e-2") for _ in range(8)]
    nums += [Decimal("-0.01"), Decimal("0.00"), Decimal("9999999999.99"), Decimal("-9999999999.99")]
    strs = ["", "a", "A", "ab", "a" * 8, "a" * 9, "a" * 7 + "é", "é", "e", "中", "😀", "z" * 17, "ÿ", " ", "~"]
    dates = [dt.date(1, 1, 1), dt.date(9999, 12, 31), dt.date(1970, 1, 1), dt.date(1969, 12, 31),
             dt.date(2024, 2, 29)] + [dt.date(1900, 1, 1) + dt.timedelta(days=rng.randint(0, 80000))
                                      for _ in range(6)]
    stamps = [dt.datetime(1, 1, 1), dt.datetime(9999, 12, 31, 23, 59, 59, 999999), dt.datetime(1970, 1, 1),
              dt.datetime(1969, 12, 31, 23, 59, 59, 999999)]
    stamps += [dt.datetime(1950, 1, 1) + dt.timedelta(microseconds=rng.randint(0, 3 * 10**15)) for _ in range(6)]

    def v(pool: list) -> Any:
        return None if rng.random() < 0.12 else rng.choice(pool)

    return [(i, rng.randint(0, 2), v(ints8), v(floats), v(nums), v(strs), v(dates), v(stamps))
            for i in range(n)]


PG_COLUMNS = {"i": ("int8", pa.int64()), "f": ("float8", pa.float64()), "d": ("numeric(12,2)", pa.decimal128(12, 2)),
              "s": ("varchar", pa.string()), "dt": ("date", pa.date32()), "ts": ("timestamp", pa.timestamp("us"))}


@pytest.mark.parametrize("order", [["i"], ["f"], ["d"], ["s"], ["dt"], ["ts"], ["s", "i"], ["d", "f", "ts"],
                                   ["dt", "s", "f"], ["f", "d", "s", "i"]], ids="-".join)
def test_order_matches_postgres(pg, order):
    rng = random.Random("pg" + "-".join(order))
    rows = pg_rows(rng, 700)
    names = ["id", "v", *PG_COLUMNS]
    pg.execute("DROP TABLE IF EXISTS memcmp_keys")
    pg.execute("CREATE TEMP TABLE memcmp_keys (id int, v smallint, "
               + ", ".join(f"{c} {t}" for c, (t, _) in PG_COLUMNS.items()) + ")")
    with pg.cursor() as cur, cur.copy(f"COPY memcmp_keys ({', '.join(names)}) FROM STDIN") as copy:
        for r in rows:
            copy.write_row(r)
    by = ", ".join(f'{c} COLLATE "C" ASC NULLS LAST' if c == "s" else f"{c} ASC NULLS LAST" for c in order)
    pg_rank = dict(pg.execute(f"SELECT id, dense_rank() OVER (ORDER BY v ASC, {by}) FROM memcmp_keys").fetchall())
    vnodes = pa.array([r[1] for r in rows], pa.int16())
    cols = [pa.array([r[names.index(c)] for r in rows], PG_COLUMNS[c][1]) for c in order]
    _, inverse = np.unique(key_matrix(encode_keys(vnodes, cols)), return_inverse=True)
    ours = {r[0]: int(inverse[i]) + 1 for i, r in enumerate(rows)}
    assert ours == pg_rank


def test_scalar_encoding_of_one_key_equals_the_vectorized_one():
    """`encode_scalar_parts` (a point lookup's key, in Python) gives `encode_keys`' bytes, prefixes too."""
    rng = random.Random(7)
    types = [pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.string(), pa.large_string()]
    texts = ["", "a", "a\x00", "abcdefg", "abcdefgh", "abcdefghi", "é" * 9, "x" * 17, None]

    def value(t: pa.DataType) -> Any:
        if rng.random() < 0.1:
            return None
        if pa.types.is_integer(t):
            bits = t.bit_width - 1
            return rng.choice([0, 1, -1, -(1 << bits), (1 << bits) - 1, rng.randrange(-(1 << bits), 1 << bits)])
        return rng.choice(texts)

    for _ in range(400):
        row_types = [rng.choice(types) for _ in range(rng.randint(1, 3))]
        vnode, values = rng.randrange(256), [value(t) for t in row_types]
        parts = memcmp.encode_scalar_parts(vnode, values, row_types)
        assert parts is not None
        for n in range(len(values) + 1):
            want = encode_keys(pa.array([vnode], pa.int16()),
                               [pa.array([v], t) for v, t in zip(values[:n], row_types[:n], strict=True)])
            assert b"".join(parts[:n + 1]) == want[0].as_py(), (values, row_types, n)
    # types without a Python encoding, and values of the wrong kind, are left to `encode_keys`
    assert memcmp.encode_scalar_parts(0, [1.5], [pa.float64()]) is None
    assert memcmp.encode_scalar_parts(0, ["1"], [pa.int32()]) is None
    assert memcmp.encode_scalar_parts(0, [True], [pa.int32()]) is None
