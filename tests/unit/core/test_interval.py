"""`risingspark.interval`: PostgreSQL's interval input and output, compared with what PostgreSQL 15
prints for the same literals (the expected texts were read from PostgreSQL)."""

from __future__ import annotations

import struct

import pyarrow as pa
import pytest

from frontend.pgwire import codec
from risingspark.errors import InvalidDatetimeFormat
from risingspark.interval import ARROW_TYPE, Interval, from_month_day_nano, parse
from risingspark.types import INTERVAL, DataType

# (literal, qualifier) -> PostgreSQL's text of interval 'literal' [qualifier]
PG = {
    ("1 day 2 hours", None): "1 day 02:00:00", ("71", "day"): "71 days", ("1", "year"): "1 year",
    ("3", "month"): "3 mons", ("5", "minute"): "00:05:00", ("-1", "day"): "-1 days",
    ("-1 year -2 mons +3 days -04:05:06.5", None): "-1 years -2 mons +3 days -04:05:06.5",
    ("1.5 months", None): "1 mon 15 days", ("1.5 days", None): "1 day 12:00:00", ("1.5 years", None): "1 year 6 mons",
    ("@ 1 hour ago", None): "-01:00:00", ("1 12:00", None): "1 day 12:00:00", ("5", None): "00:00:05",
    ("0.5", None): "00:00:00.5", ("2 weeks", None): "14 days", ("1 mon -1 day", None): "1 mon -1 days",
    ("-1 mon 1 day", None): "-1 mons +1 day", ("25 hours", None): "25:00:00", ("1 decade", None): "10 years",
    ("00:00:00.000001", None): "00:00:00.000001", ("-1 days +02:00", None): "-1 days +02:00:00",
    ("1.7 months", None): "1 mon 21 days", ("0.1 days", None): "02:24:00", ("1 min 30 s", None): "00:01:30",
    ("0", None): "00:00:00",
}


@pytest.mark.parametrize(("literal", "unit"), list(PG))
def test_parse_and_print_as_postgres(literal: str, unit: str | None) -> None:
    assert parse(literal, unit).pg_text() == PG[(literal, unit)]


@pytest.mark.parametrize("bad", ["", "abc", "1 fortnight", "1 day day", "@"])
def test_invalid_input_is_22007(bad: str) -> None:
    with pytest.raises(InvalidDatetimeFormat):
        parse(bad)


def test_span_compares_a_month_as_30_days() -> None:
    assert parse("1 mon").span == parse("30 days").span
    assert parse("1 day").span > parse("23:59:59").span
    assert (-parse("1 day 02:00")).pg_text() == "-1 days -02:00:00"


def test_storage_and_wire_forms() -> None:
    assert INTERVAL.to_arrow() == ARROW_TYPE
    assert DataType.from_arrow(ARROW_TYPE) == INTERVAL
    assert DataType.from_arrow(pa.month_day_nano_interval()) == INTERVAL
    assert DataType.parse(INTERVAL.sql()) == INTERVAL and INTERVAL.oid == 1186 and INTERVAL.display() == "interval"
    iv = Interval(14, -3, 4_000_001)
    assert codec.text_value(iv.as_dict(), codec.INTERVAL) == b"1 year 2 mons -3 days +00:00:04.000001"
    assert codec.binary_value(iv.as_dict(), codec.INTERVAL) == struct.pack("!qii", 4_000_001, -3, 14)
    duck = pa.array([pa.MonthDayNano([1, 2, 3000]), None], pa.month_day_nano_interval())
    assert from_month_day_nano(duck).to_pylist() == [{"months": 1, "days": 2, "usecs": 3}, None]
