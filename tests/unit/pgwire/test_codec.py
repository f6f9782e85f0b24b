"""Scalar encoding against the exact strings Postgres prints, and parameter decoding."""

from __future__ import annotations

import datetime as dt
import struct
from decimal import Decimal

import pytest

from frontend.pgwire import codec
from risingspark.errors import (
    InvalidDatetimeFormat,
    InvalidTextRepresentation,
    NumericValueOutOfRange,
    ProtocolViolation,
)

UTC = dt.UTC


@pytest.mark.parametrize(("value", "text"), [
    (100.0, "100"),
    (1.0, "1"),
    (-1.5, "-1.5"),
    (0.1 + 0.2, "0.30000000000000004"),
    (1e16, "1e+16"),
    (1e15, "1e+15"),
    (1e14, "100000000000000"),
    (123456789012345.6, "123456789012345.6"),
    (1234567890123456.0, "1.234567890123456e+15"),
    (0.0001, "0.0001"),
    (0.00001, "1e-05"),
    (2.5e-5, "2.5e-05"),
    (1.5e-7, "1.5e-07"),
    (1e100, "1e+100"),
    (5e-324, "5e-324"),
    (1.7976931348623157e308, "1.7976931348623157e+308"),
    (float("inf"), "Infinity"),
    (float("-inf"), "-Infinity"),
    (float("nan"), "NaN"),
    (0.0, "0"),
    (-0.0, "-0"),
])
def test_float8_text(value: float, text: str) -> None:
    assert codec.format_float8(value) == text


@pytest.mark.parametrize(("value", "text"), [
    (1.1, "1.1"),
    (100000.0, "100000"),
    (1e6, "1e+06"),
    (1234567.0, "1.234567e+06"),
    (3.4028235e38, "3.4028235e+38"),
    (1.17549435e-38, "1.1754944e-38"),
    (0.0001, "0.0001"),
    (0.1, "0.1"),
    (-2.5, "-2.5"),
    (float("inf"), "Infinity"),
    (float("nan"), "NaN"),
])
def test_float4_text(value: float, text: str) -> None:
    assert codec.format_float4(value) == text


@pytest.mark.parametrize(("value", "typmod", "text"), [
    (Decimal("61.5000000000"), -1, "61.5"),
    (Decimal("100.0000000000"), -1, "100"),
    (Decimal("0E-10"), -1, "0"),
    (Decimal("-0.0010000000"), -1, "-0.001"),
    (Decimal("1E+3"), -1, "1000"),
    (Decimal("1E-10"), -1, "0.0000000001"),
    (Decimal("12345678901234567890123456.0000000001"), -1, "12345678901234567890123456.0000000001"),
    (Decimal("61.5"), (12 << 16 | 2) + 4, "61.50"),
    (Decimal("7"), (5 << 16 | 0) + 4, "7"),
    (Decimal("NaN"), -1, "NaN"),
])
def test_numeric_text(value: Decimal, typmod: int, text: str) -> None:
    assert codec.format_numeric(value, typmod) == text


@pytest.mark.parametrize(("value", "with_tz", "text"), [
    (dt.datetime(2024, 1, 2, 3, 4, 5), False, "2024-01-02 03:04:05"),
    (dt.datetime(2024, 1, 2, 3, 4, 5, 120000), False, "2024-01-02 03:04:05.12"),
    (dt.datetime(2024, 1, 2, 3, 4, 5, 1), False, "2024-01-02 03:04:05.000001"),
    (dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC), True, "2024-01-02 03:04:05+00"),
    (dt.datetime(2024, 1, 2, 3, 4, 5, 500000, tzinfo=dt.timezone(dt.timedelta(hours=2))), True,
     "2024-01-02 01:04:05.5+00"),
    (dt.datetime(999, 1, 2), False, "0999-01-02 00:00:00"),
])
def test_timestamp_text(value: dt.datetime, with_tz: bool, text: str) -> None:
    assert codec.format_timestamp(value, with_tz) == text


def test_text_value_by_python_type() -> None:
    assert codec.text_value(True, codec.BOOL) == b"t"
    assert codec.text_value(False, codec.BOOL) == b"f"
    assert codec.text_value(dt.date(2024, 1, 2), codec.DATE) == b"2024-01-02"
    assert codec.text_value(dt.datetime(2024, 1, 2), codec.TIMESTAMPTZ) == b"2024-01-02 00:00:00+00"
    assert codec.text_value(1.5, codec.FLOAT4) == b"1.5"
    assert codec.text_value(b"\x01\xff", codec.BYTEA) == b"\\x01ff"


def test_numeric_binary_layout() -> None:
    # 61.5 = 61 * 10000^0 + 5000 * 10000^-1: ndigits 2, weight 0, positive, dscale 1
    assert codec.numeric_to_binary(Decimal("61.5")) == struct.pack("!hhHh2H", 2, 0, 0, 1, 61, 5000)
    assert codec.numeric_to_binary(Decimal("0")) == struct.pack("!hhHh", 0, 0, 0, 0)
    assert codec.numeric_to_binary(Decimal("-20000")) == struct.pack("!hhHh1H", 1, 1, 0x4000, 0, 2)


@pytest.mark.parametrize("text", ["0", "0.0001", "12345.6789", "-1E+20", "1E-20", "61.50", "99999999",
                                  "123456789012345678901234567890.123456789", "NaN", "-0.5"])
def test_numeric_binary_round_trip(text: str) -> None:
    value = Decimal(text)
    back = codec.numeric_from_binary(codec.numeric_to_binary(value))
    if value.is_nan():
        assert back.is_nan()
    else:
        assert back == value
        assert codec.format_numeric(back) == codec.format_numeric(value)


def test_numeric_binary_keeps_declared_scale() -> None:
    back = codec.numeric_from_binary(codec.numeric_to_binary(Decimal("61.5"), (12 << 16 | 2) + 4))
    assert str(back) == "61.50"


@pytest.mark.parametrize(("oid", "text", "value"), [
    (codec.INT2, "12", 12),
    (codec.INT4, " -7 ", -7),
    (codec.INT8, "1099511627776", 1 << 40),
    (codec.FLOAT8, "1.5", 1.5),
    (codec.FLOAT8, "Infinity", float("inf")),
    (codec.NUMERIC, "61.50", Decimal("61.50")),
    (codec.BOOL, "t", True),
    (codec.BOOL, "off", False),
    (codec.DATE, "2024-01-02", dt.date(2024, 1, 2)),
    (codec.TIMESTAMP, "2024-01-02 03:04:05.5", dt.datetime(2024, 1, 2, 3, 4, 5, 500000)),
    (codec.TIMESTAMPTZ, "2024-01-02 03:04:05+00", dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)),
    (codec.TEXT, "héllo", "héllo"),
    (0, "78", "78"),
    (99999, "whatever", "whatever"),
])
def test_decode_text(oid: int, text: str, value: object) -> None:
    assert codec.decode_params([text.encode()], [oid], [0]) == [value]


@pytest.mark.parametrize(("oid", "data", "value"), [
    (codec.INT2, b"\x00\x01", 1),
    (codec.INT4, struct.pack("!i", -5), -5),
    (codec.INT8, struct.pack("!q", 1 << 40), 1 << 40),
    (codec.FLOAT8, struct.pack("!d", 1.5), 1.5),
    (codec.FLOAT4, struct.pack("!f", 0.5), 0.5),
    (codec.BOOL, b"\x01", True),
    (codec.NUMERIC, struct.pack("!hhHh2H", 2, 0, 0, 1, 61, 5000), Decimal("61.5")),
    (codec.DATE, struct.pack("!i", 1), dt.date(2000, 1, 2)),
    (codec.TIMESTAMP, struct.pack("!q", 1_500_000), dt.datetime(2000, 1, 1, 0, 0, 1, 500000)),
    (codec.TIMESTAMPTZ, struct.pack("!q", 0), dt.datetime(2000, 1, 1, tzinfo=UTC)),
    (codec.TEXT, "héllo".encode(), "héllo"),
    (codec.BYTEA, b"\x00\x01", b"\x00\x01"),
])
def test_decode_binary(oid: int, data: bytes, value: object) -> None:
    assert codec.decode_params([data], [oid], [1]) == [value]


def test_decode_mixed_formats_and_nulls() -> None:
    # what psycopg 3 sends for `select $1::int, $2` with (1, "78")
    assert codec.decode_params([b"\x00\x01", b"78", None], [21, 0, 23], [1, 0, 0]) == [1, "78", None]


def test_decode_errors() -> None:
    with pytest.raises(InvalidTextRepresentation, match='invalid input syntax for type integer: "abc"'):
        codec.decode_params([b"abc"], [codec.INT4], [])
    with pytest.raises(NumericValueOutOfRange, match='value "99999" is out of range for type smallint'):
        codec.decode_params([b"99999"], [codec.INT2], [])
    with pytest.raises(InvalidDatetimeFormat):
        codec.decode_params([b"yesterday-ish"], [codec.DATE], [])
    with pytest.raises(codec.InvalidBinaryRepresentation, match="bind parameter 2") as err:
        codec.decode_params([b"\x00\x01", b"\x00"], [codec.INT2, codec.INT4], [1])
    assert err.value.sqlstate == "22P03"
    with pytest.raises(ProtocolViolation):
        codec.decode_params([b"1", b"2"], [23, 23], [0, 0, 0])


def test_result_formats() -> None:
    assert codec.result_formats([], 3) == [0, 0, 0]
    assert codec.result_formats([1], 2) == [1, 1]
    assert codec.result_formats([0, 1], 2) == [0, 1]
    with pytest.raises(ProtocolViolation):
        codec.result_formats([0, 1], 3)
