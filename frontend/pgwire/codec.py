"""Value encoding by type OID: Postgres text and binary formats, for results and parameters.

Text output follows what Postgres 12+ prints (`float8out`, `numeric_out`, `timestamp_out` with
``DateStyle=ISO`` and ``TimeZone=UTC``). Whole Arrow columns are encoded by `frontend.pgwire.datarows`,
which uses the scalar functions here only for the few values it cannot vectorize.

>>> format_float8(1e16), format_float8(100.0), format_float4(1234567.0)
('1e+16', '100', '1.234567e+06')
>>> format_numeric(Decimal("61.5000000000"))
'61.5'
"""

from __future__ import annotations

import datetime as dt
import struct
from collections.abc import Sequence
from decimal import Decimal, InvalidOperation, localcontext
from typing import Any

import pyarrow as pa

from frontend.catalog.oids import type_oid
from risingspark.errors import (
    DataException,
    InvalidDatetimeFormat,
    InvalidParameterValue,
    InvalidTextRepresentation,
    NumericValueOutOfRange,
    ProtocolViolation,
)
from risingspark.float_text import format_float4, format_float8
from risingspark.interval import Interval

# pg_type OIDs the codec knows
BOOL, BYTEA, CHAR, NAME, INT8, INT2, INT4, TEXT, OID = 16, 17, 18, 19, 20, 21, 23, 25, 26
JSON, FLOAT4, FLOAT8, UNKNOWN, BPCHAR, VARCHAR = 114, 700, 701, 705, 1042, 1043
DATE, TIMESTAMP, TIMESTAMPTZ, NUMERIC, INTERVAL = 1082, 1114, 1184, 1700, 1186
RECORD, JSONB, REGTYPE = 2249, 3802, 2206

TEXT_LIKE = frozenset({0, TEXT, VARCHAR, NAME, CHAR, BPCHAR, UNKNOWN, JSON})
JSONB_VERSION = b"\x01"  # the first byte of jsonb's binary format
# array type OID -> element type OID
ARRAY_ELEMENTS = {1000: BOOL, 1001: BYTEA, 1002: CHAR, 1003: NAME, 1005: INT2, 1007: INT4, 1009: TEXT,
                  1014: BPCHAR, 1015: VARCHAR, 1016: INT8, 1021: FLOAT4, 1022: FLOAT8, 1028: OID, 1182: DATE,
                  1115: TIMESTAMP, 1185: TIMESTAMPTZ, 1231: NUMERIC, 1187: INTERVAL, 3807: JSONB,
                  2287: RECORD}
VECTOR_ELEMENTS = {22: INT2, 30: OID}  # int2vector and oidvector: "1 2" in text, arrays in binary
_INT_RANGES = {INT2: (16, "smallint"), INT4: (32, "integer"), INT8: (64, "bigint"), OID: (33, "oid")}
_TYPE_NAMES = {BOOL: "boolean", FLOAT4: "real", FLOAT8: "double precision", NUMERIC: "numeric",
               DATE: "date", TIMESTAMP: "timestamp", TIMESTAMPTZ: "timestamp with time zone", BYTEA: "bytea"}

POSTGRES_EPOCH = dt.datetime(2000, 1, 1)
UNIX_EPOCH = dt.datetime(1970, 1, 1)
INFINITY_MICROS = 2**63 - 1  # DuckDB's (and Arrow's int64) infinity; -infinity is its negation
POSTGRES_EPOCH_DATE = dt.date(2000, 1, 1)
POSTGRES_EPOCH_DAYS = 10957  # days from 1970-01-01 to 2000-01-01
POSTGRES_EPOCH_MICROS = POSTGRES_EPOCH_DAYS * 86_400_000_000


def naive_timestamp(micros: int) -> dt.datetime | None:
    """Microseconds since 1970 as a naive datetime (UTC wall time); None for ±infinity. Raises
    OverflowError outside Python's years 1 to 9999."""
    if abs(micros) == INFINITY_MICROS:
        return None
    return UNIX_EPOCH + dt.timedelta(microseconds=micros)

_NUMERIC_POS, _NUMERIC_NEG, _NUMERIC_NAN = 0x0000, 0x4000, 0xC000
_NUMERIC_PINF, _NUMERIC_NINF = 0xD000, 0xF000


class InvalidBinaryRepresentation(DataException):
    sqlstate = "22P03"


class CharacterNotInRepertoire(DataException):
    sqlstate = "22021"


# ---- text output ------------------------------------------------------------------------------
def numeric_scale(typmod: int) -> int | None:
    """The declared scale of ``numeric(p, s)`` from its typmod; None when unconstrained."""
    return None if typmod < 4 else (typmod - 4) & 0xFFFF


def format_numeric(d: Decimal, typmod: int = -1) -> str:
    """A numeric without exponent; unconstrained ones lose trailing fractional zeros."""
    if d.is_nan():
        return "NaN"
    if d.is_infinite():
        return "Infinity" if d > 0 else "-Infinity"
    scale = numeric_scale(typmod)
    if scale is not None:
        return f"{d:.{scale}f}"
    text = f"{d:f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


def format_timestamp(value: dt.datetime, with_tz: bool = False) -> str:
    """``YYYY-MM-DD HH:MM:SS[.ffffff]``, fraction zeros removed; ``+00`` for timestamptz (UTC)."""
    if value.tzinfo is not None:
        value = value.astimezone(dt.UTC).replace(tzinfo=None)
    text = value.isoformat(" ")
    if value.microsecond:
        text = text.rstrip("0")
    return text + "+00" if with_tz else text


def format_timestamptz_in(value: dt.datetime, zone: str) -> str:
    """A timestamptz as the wall time of IANA zone `zone` with its offset there (the session's
    ``TimeZone``, `frontend.pgwire.time_zone`): ``2024-06-15 08:00:00-04``."""
    from .time_zone import offset_text, zone_info

    local = (value if value.tzinfo is not None else value.replace(tzinfo=dt.UTC)).astimezone(zone_info(zone))
    offset = local.utcoffset() or dt.timedelta(0)
    return format_timestamp(local.replace(tzinfo=None)) + offset_text(offset)


def format_bytea(value: bytes) -> str:
    return "\\x" + value.hex()


def _array_item(value: Any, oid: int, time_zone: str | None = None) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, list):
        return format_array(value, oid, time_zone)
    text = text_value(value, oid, time_zone=time_zone).decode()
    if text == "" or text.upper() == "NULL" or any(c in text for c in '{}",\\ \t\n'):
        return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return text


def format_array(values: list, elem_oid: int, time_zone: str | None = None) -> str:
    """A Postgres array literal: ``{1,2}``, ``{"a b",NULL}``; timestamptz elements in `time_zone`."""
    return "{" + ",".join(_array_item(v, elem_oid, time_zone) for v in values) + "}"


def record_field(text: str | None) -> str:
    """One field of PostgreSQL's record text (``record_out``): nothing for NULL; quoted when empty
    or holding a quote, backslash, parenthesis, comma or white space, with quotes and backslashes
    doubled.

    >>> [record_field(v) for v in ("1", None, "", "a b", 'q"u', "x,y")]
    ['1', '', '""', '"a b"', '"q""u"', '"x,y"']
    """
    if text is None:
        return ""
    if text == "" or any(c in _RECORD_SPECIAL for c in text):
        return '"' + text.replace("\\", "\\\\").replace('"', '""') + '"'
    return text


_RECORD_SPECIAL = frozenset('"\\(),' + " \t\n\r\v\f")


def format_record(fields: Sequence[str | None]) -> str:
    """A record's text from its fields' texts: ``(1,"a b",)``."""
    return "(" + ",".join(record_field(f) for f in fields) + ")"


def text_value(value: Any, oid: int, typmod: int = -1, time_zone: str | None = None) -> bytes:
    """One non-null value in text format; a timestamptz (also in an array or a record: an aware
    datetime) as the wall time of IANA zone `time_zone` (None: UTC, ``+00``)."""
    if isinstance(value, dict) and oid != INTERVAL:  # a struct's fields, in order
        return format_record([None if v is None else text_value(v, 0, time_zone=time_zone).decode()
                              for v in value.values()]).encode()
    if isinstance(value, list | tuple) and oid in VECTOR_ELEMENTS:
        return " ".join(str(v) for v in value).encode()
    if isinstance(value, list | tuple):
        return format_array(list(value), ARRAY_ELEMENTS.get(oid, TEXT), time_zone).encode()
    if oid == INTERVAL or isinstance(value, Interval | pa.MonthDayNano):
        return Interval.from_value(value).pg_text().encode()
    if isinstance(value, bool):
        return b"t" if value else b"f"
    if isinstance(value, int):
        return str(value).encode()
    if isinstance(value, float):
        return (format_float4(value) if oid == FLOAT4 else format_float8(value)).encode()
    if isinstance(value, Decimal):
        return format_numeric(value, typmod).encode()
    if isinstance(value, dt.datetime):
        if time_zone is not None and (oid == TIMESTAMPTZ or value.tzinfo is not None):
            return format_timestamptz_in(value, time_zone).encode()
        return format_timestamp(value, oid == TIMESTAMPTZ).encode()
    if isinstance(value, dt.date):
        return value.isoformat().encode()
    if isinstance(value, str):
        return value.encode()
    if isinstance(value, bytes | bytearray | memoryview):
        return format_bytea(bytes(value)).encode()
    return str(value).encode()


# ---- binary output ----------------------------------------------------------------------------
def numeric_to_binary(d: Decimal, typmod: int = -1) -> bytes:
    """Postgres' binary numeric: ndigits, weight, sign, dscale, then base-10000 digits."""
    if d.is_nan():
        return struct.pack("!hhHh", 0, 0, _NUMERIC_NAN, 0)
    if d.is_infinite():
        return struct.pack("!hhHh", 0, 0, _NUMERIC_PINF if d > 0 else _NUMERIC_NINF, 0)
    scale = numeric_scale(typmod)
    if scale is None:
        d = Decimal(format_numeric(d))
        dscale = max(0, -int(d.as_tuple().exponent))
    else:
        with localcontext() as ctx:
            ctx.prec = 1000
            d = d.quantize(Decimal(1).scaleb(-scale))
        dscale = scale
    sign, digits, exp = d.as_tuple()
    exp = int(exp)
    coef = int("".join(map(str, digits)) or "0")
    shift = exp % 4  # bring the exponent down to a multiple of 4
    coef, exp = coef * 10 ** shift, exp - shift
    groups: list[int] = []
    while coef:
        coef, g = divmod(coef, 10000)
        groups.append(g)
    groups.reverse()
    weight = len(groups) - 1 + exp // 4
    while groups and groups[-1] == 0:
        groups.pop()
    if not groups:
        weight = 0
    header = struct.pack("!hhHh", len(groups), weight, _NUMERIC_NEG if sign else _NUMERIC_POS, dscale)
    return header + struct.pack(f"!{len(groups)}H", *groups)


def numeric_from_binary(data: bytes) -> Decimal:
    ndigits, weight, sign, dscale = struct.unpack_from("!hhHh", data)
    if sign == _NUMERIC_NAN:
        return Decimal("NaN")
    if sign in (_NUMERIC_PINF, _NUMERIC_NINF):
        return Decimal("Infinity" if sign == _NUMERIC_PINF else "-Infinity")
    if sign not in (_NUMERIC_POS, _NUMERIC_NEG) or len(data) != 8 + 2 * ndigits:
        raise InvalidBinaryRepresentation("invalid numeric")
    groups = struct.unpack_from(f"!{ndigits}H", data, 8)
    coef = 0
    for g in groups:
        coef = coef * 10000 + g
    exp = 4 * (weight - ndigits + 1)
    digits = str(coef)
    if exp < -dscale:  # drop digits below the display scale (always zeros)
        digits, exp = digits[:len(digits) - (-dscale - exp)] or "0", -dscale
    elif exp > -dscale:
        digits, exp = digits + "0" * (exp + dscale), -dscale
    return Decimal((1 if sign == _NUMERIC_NEG else 0, tuple(map(int, digits)), exp))


def array_to_binary(values: list, elem_oid: int) -> bytes:
    """A one-dimensional array in Postgres' binary format."""
    head = struct.pack("!iiiii", 1 if values else 0, int(any(v is None for v in values)), elem_oid, len(values), 1)
    if not values:
        return head[:12]
    parts = [head]
    for v in values:
        if v is None:
            parts.append(struct.pack("!i", -1))
        else:
            data = binary_value(v, elem_oid)
            parts.append(struct.pack("!i", len(data)) + data)
    return b"".join(parts)


def binary_value(value: Any, oid: int, typmod: int = -1) -> bytes:
    """One non-null value in the binary format of type `oid` (text bytes for text-like types)."""
    if isinstance(value, list | tuple):
        return array_to_binary(list(value), VECTOR_ELEMENTS.get(oid) or ARRAY_ELEMENTS.get(oid, TEXT))
    if oid == BOOL:
        return b"\x01" if value else b"\x00"
    if oid == INT2:
        return struct.pack("!h", value)
    if oid == INT4:
        return struct.pack("!i", value)
    if oid == INT8:
        return struct.pack("!q", value)
    if oid == OID:
        return struct.pack("!I", value)
    if oid == FLOAT4:
        return struct.pack("!f", value)
    if oid == FLOAT8:
        return struct.pack("!d", value)
    if oid == NUMERIC:
        return numeric_to_binary(value if isinstance(value, Decimal) else Decimal(str(value)), typmod)
    if oid == DATE:
        return struct.pack("!i", (value - POSTGRES_EPOCH_DATE).days)
    if oid in (TIMESTAMP, TIMESTAMPTZ):
        if value.tzinfo is not None:
            value = value.astimezone(dt.UTC).replace(tzinfo=None)
        delta = value - POSTGRES_EPOCH
        return struct.pack("!q", (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds)
    if oid == BYTEA and isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    if oid == INTERVAL:
        return Interval.from_value(value).to_binary()
    if oid == JSONB:
        return JSONB_VERSION + text_value(value, oid, typmod)
    if oid == REGTYPE and isinstance(value, str):  # (the type's OID: a regtype's text is its name)
        return struct.pack("!I", type_oid(value) or 0)
    return text_value(value, oid, typmod)


# ---- parameters -------------------------------------------------------------------------------
_TRUE = frozenset({"t", "true", "y", "yes", "on", "1"})
_FALSE = frozenset({"f", "false", "n", "no", "off", "0"})


def _invalid(oid: int, text: str) -> Exception:
    name = _TYPE_NAMES.get(oid) or _INT_RANGES.get(oid, (0, "unknown"))[1]
    cls = InvalidDatetimeFormat if oid in (DATE, TIMESTAMP, TIMESTAMPTZ) else InvalidTextRepresentation
    return cls(f'invalid input syntax for type {name}: "{text}"')


def _parse_int(text: str, oid: int) -> int:
    bits, name = _INT_RANGES[oid]
    try:
        v = int(text.strip())
    except ValueError:
        raise _invalid(oid, text) from None
    lo, hi = (0, (1 << 32) - 1) if oid == OID else (-(1 << (bits - 1)), (1 << (bits - 1)) - 1)
    if not lo <= v <= hi:
        raise NumericValueOutOfRange(f'value "{text}" is out of range for type {name}')
    return v


def decode_text(text: str, oid: int, time_zone: str | None = None) -> Any:
    """A parameter sent in text format as a Python value; unknown types stay `str`. A timestamptz
    without an offset is in the session's `time_zone` (None: UTC), as PostgreSQL reads it."""
    try:
        if oid in _INT_RANGES:
            return _parse_int(text, oid)
        if oid in (FLOAT4, FLOAT8):
            return float(text.strip())
        if oid == NUMERIC:
            return Decimal(text.strip())
        if oid == BOOL:
            word = text.strip().lower()
            if word in _TRUE or word in _FALSE:
                return word in _TRUE
            raise ValueError(text)
        if oid == DATE:
            return dt.date.fromisoformat(text.strip())
        if oid in (TIMESTAMP, TIMESTAMPTZ):
            value = dt.datetime.fromisoformat(text.strip())
            if oid == TIMESTAMPTZ and value.tzinfo is None:
                if time_zone is not None:
                    from .time_zone import zone_info

                    return value.replace(tzinfo=zone_info(time_zone)).astimezone(dt.UTC)
                value = value.replace(tzinfo=dt.UTC)
            return value
        if oid == BYTEA:
            return bytes.fromhex(text[2:]) if text.startswith("\\x") else text.encode()
    except (ValueError, InvalidOperation):
        raise _invalid(oid, text) from None
    return text


def decode_binary(data: bytes, oid: int) -> Any:
    """A parameter sent in binary format as a Python value; unknown types stay `bytes`."""
    try:
        if oid == INT2:
            return struct.unpack("!h", data)[0]
        if oid == INT4:
            return struct.unpack("!i", data)[0]
        if oid == INT8:
            return struct.unpack("!q", data)[0]
        if oid == OID:
            return struct.unpack("!I", data)[0]
        if oid == FLOAT4:
            return struct.unpack("!f", data)[0]
        if oid == FLOAT8:
            return struct.unpack("!d", data)[0]
        if oid == BOOL:
            if len(data) != 1:
                raise ValueError("bool")
            return data != b"\x00"
        if oid == NUMERIC:
            return numeric_from_binary(data)
        if oid == DATE:
            return POSTGRES_EPOCH_DATE + dt.timedelta(days=struct.unpack("!i", data)[0])
        if oid in (TIMESTAMP, TIMESTAMPTZ):
            value = POSTGRES_EPOCH + dt.timedelta(microseconds=struct.unpack("!q", data)[0])
            return value.replace(tzinfo=dt.UTC) if oid == TIMESTAMPTZ else value
    except (struct.error, ValueError, OverflowError):
        raise InvalidBinaryRepresentation("incorrect binary data format") from None
    if oid in TEXT_LIKE:
        return _utf8(data)
    return data


def _utf8(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise CharacterNotInRepertoire('invalid byte sequence for encoding "UTF8"') from None


def decode_params(values: Sequence[bytes | None], oids: Sequence[int], formats: Sequence[int],
                  time_zone: str | None = None) -> list[Any]:
    """Decode a Bind message's parameter values (text timestamptz without offset in `time_zone`).

    Args:
        values: the raw values (None for SQL NULL).
        oids: one type OID per value (0 when unknown: decoded as `str`).
        formats: none (all text), one (applies to all) or one per value; 0 text, 1 binary.
    """
    if len(formats) not in (0, 1, len(values)):
        raise ProtocolViolation(f"bind message has {len(formats)} parameter formats but "
                                f"{len(values)} parameters")
    out: list[Any] = []
    for i, (value, oid) in enumerate(zip(values, oids, strict=True)):
        fmt = formats[0] if len(formats) == 1 else (formats[i] if formats else 0)
        if value is None:
            out.append(None)
        elif fmt == 0:
            out.append(decode_text(_utf8(value), oid, time_zone))
        elif fmt == 1:
            try:
                out.append(decode_binary(value, oid))
            except InvalidBinaryRepresentation:
                raise InvalidBinaryRepresentation(
                    f"incorrect binary data format in bind parameter {i + 1}") from None
        else:
            raise ProtocolViolation(f"unsupported format code: {fmt}")
    return out


def result_formats(formats: Sequence[int], ncols: int) -> list[int]:
    """Expand a Bind message's result format codes to one per column. A code other than 0 (text) and
    1 (binary) is kept: PostgreSQL describes the column with it and fails when it sends a row
    (`check_result_formats`)."""
    if not formats:
        return [0] * ncols
    if len(formats) == 1:
        return [formats[0]] * ncols
    if len(formats) != ncols:
        raise ProtocolViolation(f"bind message has {len(formats)} result formats but query has "
                                f"{ncols} columns")
    return list(formats)


def check_result_formats(formats: Sequence[int]) -> None:
    """22023 for a result format code other than 0 and 1, as PostgreSQL's ``printtup`` raises it
    before it sends the first row."""
    for f in formats:
        if f not in (0, 1):
            raise InvalidParameterValue(f"unsupported format code: {f}")
