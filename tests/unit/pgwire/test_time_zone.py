"""timestamptz values shown in the session's ``TimeZone`` (`frontend.pgwire.time_zone`): the text
of Arrow columns (big results), of tuples (small ones) and the binary format, against PostgreSQL's
text for the same instants in the same zone (the oracle)."""

from __future__ import annotations

import datetime as dt

import psycopg
import pyarrow as pa
import pytest

from frontend.pgwire import codec
from frontend.pgwire.api import ColumnDesc
from frontend.pgwire.datarows import encode_columns, encode_rows
from frontend.pgwire.time_zone import display_zone

INSTANTS = ["2024-06-15 12:00:00+00", "2024-01-15 12:00:00.25+00", "2024-03-10 06:59:59.999999+00",
            "2024-11-03 05:30:00+00", "1900-01-01 00:00:00+00", "1969-12-31 23:59:59.5+00"]
ZONES = ["America/New_York", "Asia/Kolkata", "Asia/Kathmandu", "Europe/Amsterdam", "Australia/Lord_Howe", "UTC"]


def _texts(data: bytes) -> list[str]:
    out, pos = [], 0
    while pos < len(data):
        length = int.from_bytes(data[pos + 1:pos + 5], "big")
        n = int.from_bytes(data[pos + 5:pos + 7], "big")
        cell = pos + 7
        for _ in range(n):
            size = int.from_bytes(data[cell:cell + 4], "big", signed=True)
            out.append(data[cell + 4:cell + 4 + size].decode())
            cell += 4 + size
        pos += 1 + length
    return out


@pytest.mark.parametrize("zone", ZONES)
def test_timestamptz_text_in_the_sessions_zone_is_postgresqls(oracle_dsn: str, zone: str):
    with psycopg.connect(oracle_dsn, autocommit=True) as pg:
        pg.execute(f"SET TimeZone = '{zone}'")
        want = [pg.execute(f"SELECT '{i}'::timestamptz::text").fetchone()[0] for i in INSTANTS]
    values = [dt.datetime.fromisoformat(i.replace("+00", "+00:00")) for i in INSTANTS]
    column = [ColumnDesc("t", codec.TIMESTAMPTZ)]
    table = pa.table({"t": pa.array(values, pa.timestamp("us", "UTC"))})
    tz = display_zone(zone)
    assert _texts(encode_columns(column, [0], table, tz)) == want  # (Arrow)
    assert _texts(encode_rows(column, [0], [(v,) for v in values], tz)) == want  # (tuples)
    assert _texts(encode_rows(column, [0], table, tz)) == want
    binary = encode_rows(column, [1], table, tz)  # the instant, whatever the zone
    assert binary == encode_rows(column, [1], table)


@pytest.mark.parametrize("zone", ["America/New_York", "Asia/Kathmandu"])
def test_timestamptz_arrays_and_records_in_the_sessions_zone_are_postgresqls(oracle_dsn: str, zone: str):
    literal = "ARRAY[" + ", ".join(f"'{i}'::timestamptz" for i in INSTANTS[:4]) + ", NULL]"
    with psycopg.connect(oracle_dsn, autocommit=True) as pg:
        pg.execute(f"SET TimeZone = '{zone}'")
        want_array = pg.execute(f"SELECT ({literal})::text").fetchone()[0]
        want_record = pg.execute(f"SELECT ROW(1, '{INSTANTS[0]}'::timestamptz)::text").fetchone()[0]
    values = [dt.datetime.fromisoformat(i.replace("+00", "+00:00")) for i in INSTANTS[:4]] + [None]
    tz = display_zone(zone)
    array = [ColumnDesc("a", 1185)]  # timestamptz[]
    table = pa.table({"a": pa.array([values], pa.list_(pa.timestamp("us", "UTC")))})
    assert _texts(encode_columns(array, [0], table, tz)) == [want_array]  # (Arrow)
    assert _texts(encode_rows(array, [0], [(values,)], tz)) == [want_array]  # (tuples)
    record = pa.table({"r": pa.array([{"f1": 1, "f2": values[0]}],
                                     pa.struct([("f1", pa.int32()), ("f2", pa.timestamp("us", "UTC"))]))})
    assert _texts(encode_columns([ColumnDesc("r", 2249)], [0], record, tz)) == [want_record]


def test_the_settings_postgresql_reads(oracle_dsn: str):
    assert [display_zone(z) for z in ("UTC", "utc", "GMT", "Etc/UTC", "Zulu", "no such zone", "'UTC'")] == [None] * 7
    assert [display_zone(z) for z in ("america/new_york", "Asia/Kolkata", "UTC+5", "-5", "5", "GMT-3")] == \
        ["America/New_York", "Asia/Kolkata", "Etc/GMT+5", "Etc/GMT+5", "Etc/GMT-5", "Etc/GMT-3"]
    # the offsets PostgreSQL gives them: POSIX's sign is inverted, SET TIME ZONE -5 is five hours west
    column = [ColumnDesc("t", codec.TIMESTAMPTZ)]
    instant = [(dt.datetime(2024, 6, 15, 12, tzinfo=dt.UTC),)]
    with psycopg.connect(oracle_dsn, autocommit=True) as pg:
        for setting in ("'UTC+5'", "-5", "5", "'GMT-3'", "'america/new_york'"):
            pg.execute(f"SET TIME ZONE {setting}")
            want = pg.execute("SELECT '2024-06-15 12:00+00'::timestamptz::text").fetchone()[0]
            assert _texts(encode_rows(column, [0], instant, display_zone(setting.strip("'")))) == [want], setting


def test_an_unknown_zone_name_is_refused_as_in_postgresql():
    from frontend.session_vars import SessionVars
    from risingspark.errors import InvalidParameterValue

    with pytest.raises(InvalidParameterValue, match="No/Such"):
        SessionVars().set("timezone", "No/Such")
    SessionVars().set("timezone", "UTC+5")  # (a POSIX offset)


def test_a_text_timestamptz_parameter_without_offset_is_in_the_sessions_zone():
    """PostgreSQL reads ``'2024-06-15 12:00'`` bound as a timestamptz in the session's zone."""
    assert codec.decode_text("2024-06-15 12:00", codec.TIMESTAMPTZ, "America/New_York") == \
        dt.datetime(2024, 6, 15, 16, tzinfo=dt.UTC)
    assert codec.decode_text("2024-06-15 12:00", codec.TIMESTAMPTZ) == dt.datetime(2024, 6, 15, 12, tzinfo=dt.UTC)
    assert codec.decode_text("2024-06-15 12:00+02", codec.TIMESTAMPTZ, "America/New_York") == \
        dt.datetime(2024, 6, 15, 10, tzinfo=dt.UTC)
