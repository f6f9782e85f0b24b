"""DataRow messages from result rows: Arrow tables column at a time, or lists of tuples.

For an Arrow table each column becomes an Arrow binary array of wire cells (an int32 length and
the encoded value; length -1 for NULL) computed with Arrow kernels and numpy, and the DataRow
messages are the element-wise concatenation of a header column (``'D'``, message length, column
count) with the cell columns. The values Arrow cannot format as Postgres does (floats outside the
fixed-notation range, tiny decimals) are formatted one by one with `frontend.pgwire.codec`.
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Callable
from typing import TypeAlias

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from risingspark.interval import is_interval_struct
from risingspark.types import DataType

from . import codec
from .api import ColumnDesc
from .backend import data_row

Rows: TypeAlias = pa.Table | pa.RecordBatch | list[tuple]

_NULL_CELL = pa.scalar(b"\xff\xff\xff\xff", pa.large_binary())
_EMPTY = pa.scalar(b"", pa.large_binary())

# OID -> (Arrow type to cast to, numpy big-endian dtype) for fixed-width binary output
_FIXED_BINARY: dict[int, tuple[pa.DataType, str]] = {
    codec.INT2: (pa.int16(), ">i2"),
    codec.INT4: (pa.int32(), ">i4"),
    codec.INT8: (pa.int64(), ">i8"),
    codec.OID: (pa.uint32(), ">u4"),
    codec.FLOAT4: (pa.float32(), ">f4"),
    codec.FLOAT8: (pa.float64(), ">f8"),
    codec.BOOL: (pa.bool_(), "u1"),
}


def row_count(rows: Rows | None) -> int:
    return 0 if rows is None else (rows.num_rows if isinstance(rows, pa.Table | pa.RecordBatch) else len(rows))


def slice_rows(rows: Rows, start: int, stop: int) -> Rows:
    if isinstance(rows, pa.Table | pa.RecordBatch):
        return rows.slice(start, stop - start)
    return rows[start:stop]


def encode_rows(columns: list[ColumnDesc], formats: list[int], rows: Rows, time_zone: str | None = None) -> bytes:
    """The DataRow messages of `rows`; `formats` holds one format code (0 text, 1 binary) per column.
    `time_zone`: the session's (`frontend.pgwire.time_zone`), None for UTC. Another code is 22023
    (`codec.check_result_formats`) when there is a row to send."""
    if row_count(rows):
        codec.check_result_formats(formats)
    if isinstance(rows, pa.Table | pa.RecordBatch):
        return _encode_arrow(columns, formats, rows, time_zone)
    return _encode_tuples(columns, formats, rows, time_zone)


def _encode_tuples(columns: list[ColumnDesc], formats: list[int], rows: list[tuple], time_zone: str | None = None
                   ) -> bytes:
    text = codec.text_value if time_zone is None else functools.partial(codec.text_value, time_zone=time_zone)
    encoders = [(codec.binary_value if fmt else text, col.type_oid, col.type_mod)
                for col, fmt in zip(columns, formats, strict=True)]
    out = []
    for row in rows:
        out.append(data_row([None if v is None else enc(v, oid, mod)
                             for v, (enc, oid, mod) in zip(row, encoders, strict=True)]))
    return b"".join(out)


SMALL_ROWS = 16  # results up to this long are encoded value by value (Arrow kernels cost more)


def per_value(t: pa.DataType) -> bool:
    """Whether Python values of type `t` encode as the Arrow path encodes them (tested on random
    values of each: tests/unit/pgwire/test_datarows.py)."""
    return (pa.types.is_integer(t) or pa.types.is_boolean(t) or pa.types.is_floating(t)
            or pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_decimal(t)
            or pa.types.is_date32(t) or pa.types.is_null(t)
            or (pa.types.is_timestamp(t) and t.unit != "ns"))


def _encode_arrow(columns: list[ColumnDesc], formats: list[int], rows: pa.Table | pa.RecordBatch,
                  time_zone: str | None = None) -> bytes:
    if 0 < rows.num_rows <= SMALL_ROWS and all(per_value(t) for t in rows.schema.types):
        try:
            values = list(zip(*(c.to_pylist() for c in rows.columns), strict=True))
        except (OverflowError, ValueError):  # a date or timestamp Python cannot hold ('infinity', year 10000)
            return encode_columns(columns, formats, rows, time_zone)
        return _encode_tuples(columns, formats, values, time_zone)
    return encode_columns(columns, formats, rows, time_zone)


def encode_columns(columns: list[ColumnDesc], formats: list[int], rows: pa.Table | pa.RecordBatch,
                   time_zone: str | None = None) -> bytes:
    """The DataRow messages of an Arrow table, computed a column at a time (see the module doc);
    timestamptz text in `time_zone` (None: UTC)."""
    n = rows.num_rows
    if n == 0:
        return b""
    cells = []
    for i, (col, fmt) in enumerate(zip(columns, formats, strict=True)):
        arr = rows.column(i)
        if isinstance(arr, pa.ChunkedArray):
            arr = arr.combine_chunks()
        if pa.types.is_dictionary(arr.type):
            arr = arr.dictionary_decode()
        cells.append(_binary_cells(arr, col) if fmt else _prefixed(_text_array(arr, col, time_zone)))
    lengths = np.full(n, 6, dtype=np.int64)
    for c in cells:
        lengths += pc.binary_length(c).to_numpy()
    header = np.empty(n, dtype=[("kind", "S1"), ("length", ">i4"), ("ncols", ">i2")])
    header["kind"] = b"D"
    header["length"] = lengths
    header["ncols"] = len(columns)
    joined = pc.binary_join_element_wise(_fixed_width(header.tobytes(), 7, n), *cells, _EMPTY)
    _, offsets, data = joined.buffers()
    start, end = np.frombuffer(offsets, dtype=np.int64)[[joined.offset, joined.offset + n]]
    return data[int(start):int(end)].to_pybytes()


def _fixed_width(data: bytes, width: int, n: int) -> pa.Array:
    """A large_binary array of `n` values of `width` bytes each, taken from `data`."""
    offsets = np.arange(0, (n + 1) * width, width, dtype=np.int64)
    return pa.Array.from_buffers(pa.large_binary(), n, [None, pa.py_buffer(offsets), pa.py_buffer(data)])


def _prefixed(values: pa.Array) -> pa.Array:
    """Wire cells from encoded values: big-endian int32 length, then the bytes; -1 for NULL."""
    values = values.cast(pa.large_binary())
    lengths = pc.binary_length(values).fill_null(-1).to_numpy(zero_copy_only=False).astype(">i4")
    return pc.binary_join_element_wise(_fixed_width(lengths.tobytes(), 4, len(values)),
                                       values.fill_null(_EMPTY), _EMPTY)


def _valid_mask(arr: pa.Array) -> np.ndarray:
    return arr.is_valid().to_numpy(zero_copy_only=False)


def _replace(texts: pa.Array, fix: np.ndarray, values: list[str]) -> pa.Array:
    if not values:
        return texts
    return pc.replace_with_mask(texts, pa.array(fix), pa.array(values, pa.string()))


# ---- text ---------------------------------------------------------------------------------------
def _text_array(arr: pa.Array, col: ColumnDesc, time_zone: str | None = None) -> pa.Array:
    """The text format of every value of `arr` (NULLs stay null)."""
    if isinstance(arr, pa.ExtensionArray):  # jsonb results (arrow.json): their text
        arr = arr.storage
    t = arr.type
    if pa.types.is_struct(t) and not is_interval_struct(t):
        return _record_text(arr, time_zone)
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return arr
    if pa.types.is_boolean(t):
        return pc.if_else(arr, "t", "f")
    if pa.types.is_integer(t):
        return pc.cast(arr, pa.string())
    if pa.types.is_floating(t):
        if col.type_oid == codec.FLOAT4 or (col.type_oid != codec.FLOAT8 and t.bit_width <= 32):
            return _float_text(arr.cast(pa.float32()), codec.format_float4, float(np.float32(1e-4)), 1e6)
        return _float_text(arr.cast(pa.float64()), codec.format_float8, 1e-4, 1e15)
    if pa.types.is_decimal(t):
        return _decimal_text(arr, col)
    if pa.types.is_date(t):
        return pc.cast(arr, pa.string())
    if pa.types.is_timestamp(t):
        with_tz = t.tz is not None or col.type_oid == codec.TIMESTAMPTZ
        return _timestamp_text(arr, with_tz, time_zone if with_tz else None)
    if pa.types.is_null(t):
        return pa.nulls(len(arr), pa.string())
    return pa.array([None if v is None else codec.text_value(v, col.type_oid, col.type_mod, time_zone)
                     for v in arr.to_pylist()], pa.large_binary())


def _record_text(arr: pa.StructArray, time_zone: str | None = None) -> pa.Array:
    """PostgreSQL's record text of every struct of `arr`: each field's text (a column of its own
    type, nested structs included), quoted as ``record_out`` does."""
    fields = arr.flatten()
    texts = []
    for f, child in zip(arr.type, fields, strict=True):
        t = DataType.from_arrow(f.type)
        texts.append(_text_array(child, ColumnDesc(f.name, t.oid, t.typlen, t.typmod), time_zone).to_pylist())
    valid = _valid_mask(arr)
    out = [codec.format_record([b.decode() if isinstance(b, bytes) else b for b in row]) if ok else None
           for ok, row in zip(valid, zip(*texts, strict=True), strict=True)]
    return pa.array(out, pa.string())


def _record_binary(arr: pa.StructArray) -> pa.Array:
    """PostgreSQL's binary record (``record_send``): the field count, then each field's type OID
    and its cell (length and binary value, -1 for NULL)."""
    parts = [pa.scalar(struct.pack("!i", arr.type.num_fields), pa.large_binary())]
    for f, child in zip(arr.type, arr.flatten(), strict=True):
        t = DataType.from_arrow(f.type)
        parts.append(pa.scalar(struct.pack("!I", t.oid), pa.large_binary()))
        parts.append(_binary_cells(child, ColumnDesc(f.name, t.oid, t.typlen, t.typmod)).cast(pa.large_binary()))
    out = pc.binary_join_element_wise(*parts, _EMPTY) if len(arr) else pa.array([], pa.large_binary())
    return pc.if_else(arr.is_valid(), out, pa.scalar(None, pa.large_binary())) if arr.null_count else out


def _float_text(arr: pa.Array, fmt: Callable[[float], str], low: float, high: float) -> pa.Array:
    """Arrow prints shortest round-trip digits; Postgres' layout differs outside [1e-4, high)."""
    texts = pc.cast(arr, pa.string())
    values = arr.to_numpy(zero_copy_only=False)
    with np.errstate(invalid="ignore"):
        magnitude = np.abs(values)
        fixed = ((magnitude >= low) & (magnitude < high)) | (values == 0)
    fixed &= ~pc.match_substring(texts, "e").fill_null(False).to_numpy(zero_copy_only=False)
    fix = ~fixed & _valid_mask(arr)
    return _replace(texts, fix, [fmt(float(v)) for v in values[fix]])


def _decimal_text(arr: pa.Array, col: ColumnDesc) -> pa.Array:
    scale = codec.numeric_scale(col.type_mod)
    if scale is not None and scale != arr.type.scale:
        return pa.array([None if v is None else codec.format_numeric(v, col.type_mod)
                         for v in arr.to_pylist()], pa.string())
    texts = pc.cast(arr, pa.string())
    fix = pc.match_substring(texts, "E").fill_null(False).to_numpy(zero_copy_only=False)
    if scale is None and arr.type.scale > 0:
        texts = _strip_fraction_zeros(texts)
    return _replace(texts, fix, [codec.format_numeric(v.as_py(), col.type_mod)
                                 for v in arr.filter(pa.array(fix))])


def _strip_fraction_zeros(texts: pa.Array) -> pa.Array:
    """``61.5000`` -> ``61.5``, ``100.000`` -> ``100``; every value must contain a point."""
    return pc.ascii_rtrim(pc.ascii_rtrim(texts, characters="0"), characters=".")


def _timestamp_text(arr: pa.Array, with_tz: bool, zone: str | None = None) -> pa.Array:
    unit = arr.type.unit
    if unit == "ns":
        arr, unit = arr.cast(pa.timestamp("us", arr.type.tz), safe=False), "us"
    if zone is not None:
        return _zoned_text(arr, zone)
    texts = pc.cast(arr.view(pa.timestamp(unit)), pa.string())  # UTC wall time
    if unit != "s":
        texts = _strip_fraction_zeros(texts)
    if with_tz:
        texts = pc.binary_join_element_wise(texts, pa.scalar("+00"), pa.scalar(""))
    return texts


def _zoned_text(arr: pa.Array, zone: str) -> pa.Array:
    """timestamptz text in IANA zone `zone`, a value at a time with Python's zone rules (Arrow's
    stop adding daylight saving after 2037); infinities as PostgreSQL prints them, a value Python's
    datetime cannot hold in UTC, as before a zone was set."""
    out: list[str | None] = []
    for m in arr.cast(pa.timestamp("us", arr.type.tz)).view(pa.int64()).to_pylist():
        if m is None:
            out.append(None)
            continue
        try:
            stamp = codec.naive_timestamp(m)
        except OverflowError:
            single = pa.array([m], pa.int64()).view(pa.timestamp("us"))
            out.append(_strip_fraction_zeros(pc.cast(single, pa.string()))[0].as_py() + "+00")
            continue
        if stamp is None:
            out.append("infinity" if m > 0 else "-infinity")
        else:
            out.append(codec.format_timestamptz_in(stamp, zone))
    return pa.array(out, pa.string())


# ---- binary -------------------------------------------------------------------------------------
def _binary_cells(arr: pa.Array, col: ColumnDesc) -> pa.Array:
    """Wire cells in the binary format of the column's type."""
    oid, t = col.type_oid, arr.type
    fixed = _FIXED_BINARY.get(oid)
    if fixed is not None and (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t)):
        target, dtype = fixed
        values = arr.cast(target, safe=False).fill_null(False if oid == codec.BOOL else 0)
        return _fixed_cells(values.to_numpy(zero_copy_only=False).astype(dtype), arr)
    if oid == codec.DATE and pa.types.is_date(t):
        days = arr.cast(pa.date32()).view(pa.int32()).fill_null(0).to_numpy(zero_copy_only=False)
        return _fixed_cells((days.astype(np.int64) - codec.POSTGRES_EPOCH_DAYS).astype(">i4"), arr)
    if oid in (codec.TIMESTAMP, codec.TIMESTAMPTZ) and pa.types.is_timestamp(t):
        micros = arr.cast(pa.timestamp("us", t.tz), safe=False).view(pa.int64()).fill_null(0)
        return _fixed_cells((micros.to_numpy(zero_copy_only=False) - codec.POSTGRES_EPOCH_MICROS).astype(">i8"), arr)
    if oid in codec.TEXT_LIKE:
        return _prefixed(_text_array(arr, col))
    if pa.types.is_struct(t) and not is_interval_struct(t):
        return _prefixed(_record_binary(arr))
    if isinstance(arr, pa.ExtensionArray):
        arr = arr.storage
    if oid == codec.JSONB:
        return _prefixed(pc.binary_join_element_wise(pa.scalar(codec.JSONB_VERSION, pa.large_binary()),
                                                     _text_array(arr, col).cast(pa.large_binary()), _EMPTY))
    return _prefixed(pa.array([None if v is None else codec.binary_value(v, oid, col.type_mod)
                               for v in arr.to_pylist()], pa.large_binary()))


def _fixed_cells(values: np.ndarray, arr: pa.Array) -> pa.Array:
    """Wire cells of fixed-width big-endian values; NULL where `arr` is null."""
    n, width = len(values), values.dtype.itemsize
    cells = np.empty(n, dtype=[("length", ">i4"), ("value", values.dtype)])
    cells["length"] = width
    cells["value"] = values
    out = _fixed_width(cells.tobytes(), 4 + width, n)
    if arr.null_count:
        out = pc.if_else(arr.is_valid(), out, _NULL_CELL)
    return out
