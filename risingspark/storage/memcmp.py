"""Memcomparable keys: ``(_vnode, pk...)`` encoded as one byte string per row, vectorized.

Plain byte-wise comparison of two encoded keys (memcmp; on a common prefix the shorter is smaller)
gives the SQL order of the keys: every pk column ascending, NULL after every value (Postgres
``ASC NULLS LAST``), NaN after every number but before NULL, -0.0 equal to 0.0, strings and binaries
in byte order (UTF-8, i.e. Postgres ``COLLATE "C"``). It is the encoding of RisingWave's
``memcomparable`` crate (itself the TiKV/MySQL one), all in numpy over the Arrow buffers:

* ``_vnode`` (int16, never NULL, no marker): the 2 bytes big-endian of ``vnode ^ 0x8000``.
* every pk column: a marker byte, ``0x01`` for a value and ``0x02`` for NULL (so NULL sorts last),
  then the value:

  - fixed width (NULL: as many zero bytes, so the column has one width whatever the NULLs): bool as
    one byte 0/1; signed integers (int8..int64, and date32 / time32 as int32, date64 / timestamp of
    any unit and zone / time64 / duration as int64 of the stored integer) big-endian two's
    complement with the sign bit flipped; float32/float64 after mapping -0.0 to 0.0 and every NaN
    to the positive quiet NaN, the IEEE bits with all bits flipped if the sign bit is set, else only
    the sign bit (-inf < negatives < 0 < positives < +inf < NaN), big-endian; decimals (one scale
    per column, so the order is that of the unscaled integer, stored little-endian by Arrow)
    big-endian with the sign bit flipped; fixed_size_binary as its bytes.
  - variable width (string, large_string, binary, large_binary; views are cast): the bytes in
    groups of 8, each followed by a marker byte. A full group followed by more data has marker
    ``0xFF``; the last group holds the remaining 0..7 bytes, zero-padded, and has marker
    ``0xF7 + count``. A string of 8k bytes (the empty string too) ends with an all-zero group
    marked ``0xF7``; the encoding is ``9 * (len // 8 + 1)`` bytes. NULL is the ``0x02`` marker alone.

Full keys of one column list are prefix-free, and after the encoding of the vnode and any first
columns comes a marker (``0x01`` / ``0x02``). So for such a prefix ``P`` every key starting with
``P`` lies in ``[P, P + b"\\xff")`` (`upper_bounds`), also between zero-padded rows of a `key_matrix`,
and every other key lies outside.

>>> import pyarrow as pa
>>> keys = encode_keys(pa.array([1, 1], pa.int16()),
...                    [pa.array([-1, None], pa.int32()), pa.array(["ab", ""])])
>>> [k.hex(" ") for k in keys.to_pylist()]
['80 01 01 7f ff ff ff 01 61 62 00 00 00 00 00 00 f9', '80 01 02 00 00 00 00 01 00 00 00 00 00 00 00 00 f7']
>>> m = key_matrix(keys)
>>> m.dtype, bool(m[0] < m[1])
(dtype('S17'), True)
>>> upper_bounds(m[:1])[0][-2:]
b'\\xf9\\xff'
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeAlias

import numpy as np
import pyarrow as pa

from risingspark.errors import FeatureNotSupported, InternalError

Column: TypeAlias = pa.Array | pa.ChunkedArray

VALUE = 0x01  # marker of a non-NULL column value
NULL = 0x02  # marker of a NULL column value
GROUP = 8  # data bytes per group of a variable-width value
_MORE = 0xFF  # marker of a full group followed by more data
_LAST = 0xF7  # marker of the last group, plus its count of real bytes (0..7)
_MAX_BYTES = 2**31 - 1  # a pa.binary() array has 32-bit offsets
_FEW_LENGTHS = 16  # key_matrix copies keys of at most this many distinct lengths length by length

# _LOW_BYTES[c]: the little-endian uint64 mask keeping the first c bytes of a word (c = 0..8)
_LOW_BYTES = np.array([(1 << (8 * c)) - 1 for c in range(GROUP + 1)], dtype="<u8")
# the canonical (positive quiet) NaN of each float width, as the unsigned integer of its bits
_NAN_BITS = {4: 0x7FC00000, 8: 0x7FF8000000000000}


@dataclass(frozen=True)
class _Groups:
    """A variable-width column's 9-byte groups: the data (8 bytes, as a little-endian word) and the
    marker of each group; row i has `counts[i]` consecutive groups (0 for NULL)."""

    data: np.ndarray  # (G,) <u8
    markers: np.ndarray  # (G,) uint8
    counts: np.ndarray  # (n,) int64


_Part: TypeAlias = np.ndarray | _Groups  # a (n, w) uint8 matrix: w fixed bytes per row


def _one_array(col: Column) -> pa.Array:
    """A single `pa.Array` of a column (chunks combined)."""
    if isinstance(col, pa.ChunkedArray):
        if col.num_chunks == 1:
            return col.chunk(0)
        if col.num_chunks == 0:
            return pa.array([], col.type)
        return col.combine_chunks()
    return col


def _bits(buf: pa.Buffer, offset: int, n: int) -> np.ndarray:
    """`n` bits of an Arrow bitmap from bit `offset`, as a numpy bool array."""
    if n == 0:
        return np.zeros(0, dtype=bool)
    start, stop = offset // 8, (offset + n + 7) // 8
    raw = np.frombuffer(buf, dtype=np.uint8, count=stop - start, offset=start)
    shift = offset % 8
    return np.unpackbits(raw, bitorder="little")[shift:shift + n].view(bool)


def _validity(arr: pa.Array) -> np.ndarray | None:
    """The validity of `arr` as a numpy bool array, None when it has no NULL."""
    buf = arr.buffers()[0]
    if buf is None or arr.null_count == 0:
        return None
    return _bits(buf, arr.offset, len(arr))


def _values(arr: pa.Array, dtype: str) -> np.ndarray:
    """The fixed-width value buffer of `arr` (its slice), zero-copy."""
    dt = np.dtype(dtype)
    return np.frombuffer(arr.buffers()[1], dtype=dt, count=len(arr), offset=arr.offset * dt.itemsize)


def _fixed(valid: np.ndarray | None, body: np.ndarray) -> np.ndarray:
    """The (n, 1 + w) encoding of a fixed-width column: the marker, then `body` (n, w) uint8,
    zeroed where the value is NULL."""
    n, w = body.shape
    out = np.empty((n, 1 + w), dtype=np.uint8)
    out[:, 1:] = body
    if valid is None:
        out[:, 0] = VALUE
    else:
        out[:, 0] = np.where(valid, VALUE, NULL)
        out[~valid, 1:] = 0
    return out


def _big_endian(u: np.ndarray) -> np.ndarray:
    """Unsigned integers as their big-endian bytes, (n, itemsize) uint8."""
    w = u.dtype.itemsize
    return u.astype(f">u{w}", copy=False).view(np.uint8).reshape(len(u), w)


def _signed(values: np.ndarray) -> np.ndarray:
    """Signed integers as big-endian bytes with the sign bit flipped, (n, itemsize) uint8."""
    w = values.dtype.itemsize
    u = values.view(f"<u{w}") ^ np.array(1 << (8 * w - 1), dtype=f"<u{w}")
    return _big_endian(u)


def _floats(values: np.ndarray) -> np.ndarray:
    """IEEE floats (-0.0 and NaN normalized) as order-preserving big-endian bytes."""
    w = values.dtype.itemsize
    udt = np.dtype(f"<u{w}")
    bits = values.view(udt).copy()
    bits[values == 0] = 0
    bits[np.isnan(values)] = _NAN_BITS[w]
    sign = np.array(1 << (8 * w - 1), dtype=udt)
    negative = (bits & sign).astype(bool)
    bits ^= np.where(negative, np.array(np.iinfo(udt).max, dtype=udt), sign)
    return _big_endian(bits)


def _var_groups(arr: pa.Array, valid: np.ndarray | None) -> _Groups:
    """The 9-byte groups of a string / binary column (NULL rows have none)."""
    n = len(arr)
    large = pa.types.is_large_string(arr.type) or pa.types.is_large_binary(arr.type)
    odt = np.dtype("<i8" if large else "<i4")
    _, obuf, dbuf = arr.buffers()
    offs = np.frombuffer(obuf, dtype=odt, count=n + 1, offset=arr.offset * odt.itemsize).astype(np.int64)
    base, span = int(offs[0]), int(offs[-1] - offs[0])
    lens = np.diff(offs)
    counts = lens // GROUP + 1
    if valid is not None:
        lens[~valid] = 0
        counts[~valid] = 0
    # a copy of the data with 8 zero bytes after it, read as unaligned little-endian words
    src = np.zeros(span + GROUP, dtype=np.uint8)
    if span:
        src[:span] = np.frombuffer(dbuf, dtype=np.uint8, count=span, offset=base)
    words = np.ndarray((span + 1,), dtype="<u8", buffer=src, strides=(1,))
    total = int(counts.sum())
    first = np.cumsum(counts) - counts  # index of the first group of each row
    row = np.repeat(np.arange(n), counts)
    k8 = (np.arange(total) - first[row]) * GROUP  # offset of the group in its value
    start = (offs[:-1] - base)[row] + k8
    # real bytes of the value in the group: 0..7 in the last group, 8 in a full group followed by
    # more, whose marker is then 0xF7 + 8 = 0xFF
    real = np.minimum(lens[row] - k8, GROUP).astype(np.uint8)
    data = words[start] & _LOW_BYTES[real]
    return _Groups(data, real + np.uint8(_LAST), counts)


def _unsupported(t: pa.DataType) -> FeatureNotSupported:
    return FeatureNotSupported(f"a key column of Arrow type {t} cannot be encoded as a memcomparable key")


def _encode_column(arr: pa.Array) -> list[_Part]:
    """The parts of one pk column's encoding, in order."""
    t = arr.type
    n = len(arr)
    if pa.types.is_string_view(t) or pa.types.is_binary_view(t):
        arr, t = arr.cast(pa.large_binary()), pa.large_binary()
    valid = _validity(arr)
    if pa.types.is_boolean(t):
        body = _bits(arr.buffers()[1], arr.offset, n).view(np.uint8).reshape(n, 1)
        return [_fixed(valid, body)]
    if pa.types.is_signed_integer(t):
        return [_fixed(valid, _signed(_values(arr, f"<i{t.byte_width}")))]
    if pa.types.is_date32(t) or pa.types.is_time32(t):
        return [_fixed(valid, _signed(_values(arr, "<i4")))]
    if pa.types.is_date64(t) or pa.types.is_timestamp(t) or pa.types.is_time64(t) or pa.types.is_duration(t):
        return [_fixed(valid, _signed(_values(arr, "<i8")))]
    if pa.types.is_float32(t) or pa.types.is_float64(t):
        return [_fixed(valid, _floats(_values(arr, f"<f{t.byte_width}")))]
    if pa.types.is_decimal(t):
        w = t.byte_width
        raw = np.frombuffer(arr.buffers()[1], dtype=np.uint8, count=n * w, offset=arr.offset * w)
        out = _fixed(valid, raw.reshape(n, w)[:, ::-1])
        out[:, 1] ^= np.where(out[:, 0] == VALUE, 0x80, 0).astype(np.uint8)
        return [out]
    if pa.types.is_fixed_size_binary(t):
        w = t.byte_width
        raw = np.frombuffer(arr.buffers()[1], dtype=np.uint8, count=n * w, offset=arr.offset * w)
        return [_fixed(valid, raw.reshape(n, w))]
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t) \
            or pa.types.is_large_binary(t):
        marker = np.full((n, 1), VALUE, dtype=np.uint8)
        if valid is not None:
            marker[~valid, 0] = NULL
        return [marker, _var_groups(arr, valid)]
    raise _unsupported(t)


def _encode_vnodes(vnodes: Column) -> np.ndarray:
    """The (n, 2) encoding of the vnodes."""
    arr = _one_array(vnodes)
    if not pa.types.is_integer(arr.type):
        raise InternalError(f"vnodes must be int16, not {arr.type}")
    if arr.type != pa.int16():
        arr = arr.cast(pa.int16())
    if arr.null_count:
        raise InternalError("a vnode is NULL")
    return _signed(_values(arr, "<i2"))


def _scatter(out: np.ndarray, dest: np.ndarray, rows: np.ndarray) -> None:
    """``out[dest[i]:dest[i] + w] = rows[i]`` for every row of `rows` (k, w) uint8, vectorized."""
    w = rows.shape[1]
    if w == 0 or len(dest) == 0:
        return
    view = np.ndarray((len(out) - w + 1,), dtype=f"V{w}", buffer=out, strides=(1,))
    view[dest] = np.ascontiguousarray(rows).view(f"V{w}").reshape(len(rows))


def _binary_array(n: int, offsets: np.ndarray, data: np.ndarray) -> pa.BinaryArray:
    return pa.Array.from_buffers(pa.binary(), n, [None, pa.py_buffer(offsets.astype(np.int32)),
                                                  pa.py_buffer(data)])


def encode_keys(vnodes: Column | None, columns: Sequence[Column]) -> pa.BinaryArray:
    """One memcomparable key per row: the vnode (int16, never NULL; omitted when None) as 2 bytes,
    then each column's encoding. All inputs have the same length.

    Raises:
        FeatureNotSupported: a column's type has no encoding (unsigned, nested, dictionary, null...).
        InternalError: lengths differ, a vnode is NULL, or the keys exceed 2 GiB.
    """
    arrays = [_one_array(c) for c in columns]
    lengths = {len(a) for a in arrays} | ({len(vnodes)} if vnodes is not None else set())
    if len(lengths) > 1:
        raise InternalError(f"key columns of different lengths {sorted(lengths)}")
    n = lengths.pop() if lengths else 0
    parts: list[_Part] = [] if vnodes is None else [_encode_vnodes(vnodes)]
    for arr in arrays:
        parts.extend(_encode_column(arr))
    merged: list[_Part] = []  # adjacent fixed-width parts as one matrix
    for part in parts:
        if isinstance(part, np.ndarray) and merged and isinstance(merged[-1], np.ndarray):
            merged[-1] = np.concatenate([merged[-1], part], axis=1)
        else:
            merged.append(part)
    if not any(isinstance(p, _Groups) for p in merged):
        mat = merged[0] if merged else np.zeros((n, 0), dtype=np.uint8)
        assert isinstance(mat, np.ndarray)
        w = mat.shape[1]
        if n * w > _MAX_BYTES:
            raise InternalError(f"{n} keys of {w} bytes exceed the 2 GiB of one binary array")
        return _binary_array(n, np.arange(n + 1, dtype=np.int64) * w, np.ascontiguousarray(mat).reshape(n * w))
    row_len = np.zeros(n, dtype=np.int64)
    for part in merged:
        row_len += part.shape[1] if isinstance(part, np.ndarray) else (GROUP + 1) * part.counts
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(row_len, out=offsets[1:])
    if offsets[-1] > _MAX_BYTES:
        raise InternalError(f"{n} keys of {int(offsets[-1])} bytes exceed the 2 GiB of one binary array")
    out = np.empty(int(offsets[-1]), dtype=np.uint8)  # the parts tile every key: no byte is left unset
    pos = offsets[:-1].copy()  # where the next part of each key goes
    for part in merged:
        if isinstance(part, np.ndarray):
            _scatter(out, pos, part)
            pos += part.shape[1]
        else:
            first = np.cumsum(part.counts) - part.counts
            dest = np.repeat(pos - (GROUP + 1) * first, part.counts) \
                + (GROUP + 1) * np.arange(len(part.data))
            if len(dest):
                np.ndarray((len(out) - GROUP + 1,), dtype="<u8", buffer=out, strides=(1,))[dest] = part.data
                out[dest + GROUP] = part.markers
            pos += (GROUP + 1) * part.counts
    return _binary_array(n, offsets, out)


_SCALAR_WIDTHS = {pa.int8(): 1, pa.int16(): 2, pa.int32(): 4, pa.int64(): 8}
_SCALAR_TEXT = (pa.string(), pa.large_string())


def encode_scalar_parts(vnode: int, values: Sequence[object], types: Sequence[pa.DataType]) -> list[bytes] | None:
    """`encode_keys` of one key, in Python: the vnode's 2 bytes, then each column's encoding (so a
    prefix of the key is a join of the first parts). For a point lookup, whose one key costs the
    vectorized encoder tens of numpy and Arrow calls. None when a type is not one of the signed
    integers or strings (the caller then uses `encode_keys`).

    >>> b"".join(encode_scalar_parts(1, [-1, None, "ab"], [pa.int32(), pa.int64(), pa.string()])).hex(" ")
    '80 01 01 7f ff ff ff 02 00 00 00 00 00 00 00 00 01 61 62 00 00 00 00 00 00 f9'
    """
    parts = [((vnode ^ 0x8000) & 0xFFFF).to_bytes(2, "big")]
    for value, t in zip(values, types, strict=True):
        width = _SCALAR_WIDTHS.get(t)
        if width is not None:
            if value is None:
                parts.append(bytes([NULL]) + bytes(width))
            elif isinstance(value, int) and not isinstance(value, bool):
                bias = 1 << (8 * width - 1)
                parts.append(bytes([VALUE]) + ((value + bias) & ((bias << 1) - 1)).to_bytes(width, "big"))
            else:
                return None
        elif t in _SCALAR_TEXT:
            if value is None:
                parts.append(bytes([NULL]))
            elif isinstance(value, str):
                data = value.encode()
                out = bytearray([VALUE])
                full = len(data) // GROUP
                for g in range(full):
                    out += data[g * GROUP:(g + 1) * GROUP]
                    out.append(_MORE)
                rest = data[full * GROUP:]
                out += rest + bytes(GROUP - len(rest))
                out.append(_LAST + len(rest))
                parts.append(bytes(out))
            else:
                return None
        else:
            return None
    return parts


def key_matrix(keys: pa.BinaryArray | pa.ChunkedArray, width: int | None = None) -> np.ndarray:
    """The keys as a numpy fixed-width bytes array, ready for ``np.searchsorted`` / comparisons.

    The dtype is ``S{w}``, ``w = max(width or 0, longest key, 1)``, each key zero-padded on the
    right (so the byte order of prefix-free keys is kept). When every key is `w` bytes long the
    result is a read-only view of the Arrow data buffer; otherwise a copy.

    To search for prefixes of `p` bytes, or their `upper_bounds` (``p + 1`` bytes), pass a `width`
    of at least ``p + 1``: numpy would otherwise copy the whole matrix to the wider dtype.
    """
    arr = _one_array(keys)
    t = arr.type
    if not (pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_string(t)
            or pa.types.is_large_string(t)):
        raise InternalError(f"keys must be binary, not {t}")
    if arr.null_count:
        raise InternalError("a key is NULL")
    n = len(arr)
    odt = np.dtype("<i8" if pa.types.is_large_binary(t) or pa.types.is_large_string(t) else "<i4")
    _, obuf, dbuf = arr.buffers()
    offs = np.frombuffer(obuf, dtype=odt, count=n + 1, offset=arr.offset * odt.itemsize).astype(np.int64)
    lens = np.diff(offs)
    shortest, longest = (int(lens.min()), int(lens.max())) if n else (0, 0)
    w = max(width or 0, longest, 1)
    base, span = int(offs[0]), int(offs[-1] - offs[0])
    if n == 0:
        return np.zeros(0, dtype=f"S{w}")
    if shortest == longest == w:
        view = np.frombuffer(dbuf, dtype=f"S{w}", count=n, offset=base)
        view.flags.writeable = False  # Arrow data is immutable
        return view
    if shortest == longest:
        mat = np.zeros((n, w), dtype=np.uint8)
        if longest:
            mat[:, :longest] = np.frombuffer(dbuf, dtype=np.uint8, count=span, offset=base).reshape(n, longest)
        return mat.view(f"S{w}").reshape(n)
    sizes = np.flatnonzero(np.bincount(lens))
    if len(sizes) <= _FEW_LENGTHS:  # as keys of one column list: per length, a row-wise copy
        mat = np.zeros((n, w), dtype=np.uint8)
        for size in sizes[sizes > 0].tolist():
            rows = np.flatnonzero(lens == size)
            src = np.ndarray((span - size + 1,), dtype=f"V{size}", buffer=dbuf, offset=base, strides=(1,))
            dst = np.ndarray((n,), dtype=f"V{size}", buffer=mat, strides=(w,))
            dst[rows] = src[offs[rows] - base]
        return mat.view(f"S{w}").reshape(n)
    # copy word by word: key i's word k goes to word k of row i of an (n, ceil(w / 8)) matrix
    src = np.zeros(span + GROUP, dtype=np.uint8)
    src[:span] = np.frombuffer(dbuf, dtype=np.uint8, count=span, offset=base)
    words = np.ndarray((span + 1,), dtype="<u8", buffer=src, strides=(1,))
    per_row = (w + GROUP - 1) // GROUP
    counts = (lens + GROUP - 1) // GROUP
    first = np.cumsum(counts) - counts
    row = np.repeat(np.arange(n), counts)
    k = np.arange(int(counts.sum())) - first[row]
    start = (offs[:-1] - base)[row] + GROUP * k
    remaining = lens[row] - GROUP * k
    out = np.zeros(n * per_row, dtype="<u8")
    out[row * per_row + k] = words[start] & _LOW_BYTES[np.minimum(remaining, GROUP)]
    mat = out.view(np.uint8).reshape(n, per_row * GROUP)
    if per_row * GROUP != w:
        mat = np.ascontiguousarray(mat[:, :w])
    return mat.view(f"S{w}").reshape(n)


def upper_bounds(prefixes: np.ndarray, *, lengths: np.ndarray | None = None) -> np.ndarray:
    """For an S-dtype array of encoded key prefixes P: ``P + b"\\xff"`` (dtype one byte wider), the
    smallest such bound greater than every stored key that starts with P.

    Every prefix is taken to be ``prefixes.dtype.itemsize`` bytes long, trailing zero bytes
    included (an encoding may end with zeros), as when all prefixes encode the same fixed-width
    columns. For zero-padded prefixes of different lengths pass their true `lengths`: the bound of
    prefix i is then ``P[:lengths[i]] + b"\\xff"``, zero-padded.
    """
    p = np.ascontiguousarray(prefixes)
    if p.dtype.kind != "S":
        raise InternalError(f"prefixes must be a numpy bytes (S) array, not {p.dtype}")
    k = p.dtype.itemsize
    n = p.size
    mat = np.zeros((n, k + 1), dtype=np.uint8)
    if k:
        mat[:, :k] = p.reshape(n).view(np.uint8).reshape(n, k)
    if lengths is None:
        mat[:, k] = 0xFF
    else:
        ends = np.asarray(lengths, dtype=np.int64).reshape(n)
        if n and (ends.min() < 0 or ends.max() > k):
            raise InternalError(f"prefix lengths must be within 0..{k}")
        mat *= np.arange(k + 1) < ends[:, None]
        mat[np.arange(n), ends] = 0xFF
    return mat.view(f"S{k + 1}").reshape(p.shape)


if __name__ == "__main__":  # timings: python -m risingspark.storage.memcmp
    import time

    def _time(label: str, fn: Callable[[], object], repeat: int = 5) -> None:
        best = float("inf")
        for _ in range(repeat):
            t0 = time.perf_counter()
            fn()
            best = min(best, time.perf_counter() - t0)
        print(f"{label}: {best * 1000:.1f} ms")

    rng = np.random.default_rng(0)
    rows = 1_000_000
    vn = pa.array(rng.integers(0, 256, rows, dtype=np.int16))
    i64 = pa.array(rng.integers(-(2**62), 2**62, rows))
    i32 = pa.array(rng.integers(-(2**31), 2**31 - 1, rows, dtype=np.int32))
    alphabet = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz0123456789", dtype=np.uint8)
    chars = alphabet[rng.integers(0, len(alphabet), rows * 16)]
    s16 = pa.Array.from_buffers(pa.string(), rows, [None, pa.py_buffer(np.arange(0, rows * 16 + 1, 16,
                                                                                   dtype=np.int32)),
                                                    pa.py_buffer(chars)])
    _time("encode 1M (vnode, int64)", lambda: encode_keys(vn, [i64]))
    _time("encode 1M (vnode, int32, 16-char string)", lambda: encode_keys(vn, [i32, s16]))
    fixed = encode_keys(vn, [i64])
    _time("key_matrix 1M fixed-width keys", lambda: key_matrix(fixed))
    mixed = encode_keys(vn, [i32, pa.array(["x" * int(n) for n in rng.integers(0, 24, rows)])])
    _time("key_matrix 1M variable-width keys", lambda: key_matrix(mixed))
