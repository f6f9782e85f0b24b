"""DataRow encoding: the vectorized Arrow path must match the per-value path byte for byte.

Small Arrow results are encoded value by value (`SMALL_ROWS`); the tests of the Arrow path call
`encode_columns` so that they test the vectorized path whatever the table's length."""

from __future__ import annotations

import datetime as dt
import random
import struct
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pytest

from frontend.pgwire import codec
from frontend.pgwire.api import ColumnDesc
from frontend.pgwire.datarows import SMALL_ROWS, encode_columns, encode_rows, row_count, slice_rows

from .fakes import TYPES_TABLE, columns_of


def _tuples(table: pa.Table) -> list[tuple]:
    return [tuple(row.values()) for row in table.to_pylist()]


def _cells(data: bytes) -> list[list[bytes | None]]:
    """Parse DataRow messages back into cells."""
    rows, pos = [], 0
    while pos < len(data):
        assert data[pos:pos + 1] == b"D"
        (length,) = struct.unpack_from("!i", data, pos + 1)
        end = pos + 1 + length
        (ncols,) = struct.unpack_from("!h", data, pos + 5)
        p, cells = pos + 7, []
        for _ in range(ncols):
            (n,) = struct.unpack_from("!i", data, p)
            p += 4
            cells.append(None if n < 0 else data[p:p + n])
            p += max(n, 0)
        assert p == end
        rows.append(cells)
        pos = end
    return rows


@pytest.mark.parametrize("fmt", [0, 1])
def test_arrow_matches_tuples(fmt: int) -> None:
    cols = columns_of(TYPES_TABLE)
    formats = [fmt] * len(cols)
    assert encode_columns(cols, formats, TYPES_TABLE) == encode_rows(cols, formats, _tuples(TYPES_TABLE))
    assert encode_rows(cols, formats, TYPES_TABLE) == encode_rows(cols, formats, _tuples(TYPES_TABLE))


def test_text_cells() -> None:
    rows = _cells(encode_columns(columns_of(TYPES_TABLE), [0] * TYPES_TABLE.num_columns, TYPES_TABLE))
    assert [None if c is None else c.decode() for c in rows[0]] == [
        "1", "100", "1099511627776", "1.5", "100", "61.5", "61.50", "t", "héllo", "2024-01-02",
        "2024-01-02 03:04:05.12", "2024-01-02 03:04:05+00"]
    assert [None if c is None else c.decode() for c in rows[1]] == [
        "-2", None, "0", None, "1e+16", "100", None, "f", "", None, None, "1970-01-01 00:00:00.000001+00"]


def test_binary_cells() -> None:
    rows = _cells(encode_columns(columns_of(TYPES_TABLE), [1] * TYPES_TABLE.num_columns, TYPES_TABLE))
    first = rows[0]
    assert first[0] == struct.pack("!h", 1)
    assert first[2] == struct.pack("!q", 1 << 40)
    assert first[3] == struct.pack("!f", 1.5)
    assert codec.numeric_from_binary(first[5]) == Decimal("61.5")
    assert first[7] == b"\x01"
    assert first[9] == struct.pack("!i", 8767)  # 2024-01-02 is 8767 days after 2000-01-01
    assert first[11] == struct.pack("!q", (8767 * 86400 + 3 * 3600 + 4 * 60 + 5) * 1_000_000)
    assert rows[1][1] is None


def test_random_floats_match_scalar_formatting() -> None:
    rng = random.Random(7)
    values = [rng.uniform(-1, 1) * 10 ** rng.randint(-30, 30) for _ in range(2000)]
    values += [1e15, 1e14, 999999999999999.9, 1e-4, 9.999999999999999e-05, 0.0, -0.0, float("nan"),
               float("inf"), None]
    table = pa.table({"f8": pa.array(values, pa.float64()), "f4": pa.array(values, pa.float32())})
    cols = [ColumnDesc("f8", codec.FLOAT8), ColumnDesc("f4", codec.FLOAT4)]
    rows = _cells(encode_rows(cols, [0, 0], table))
    for v, (c8, c4) in zip(values, rows, strict=True):
        if v is None:
            assert c8 is None and c4 is None
        else:
            assert c8.decode() == codec.format_float8(v)
            assert c4.decode() == codec.format_float4(float(np.float32(v)))


def test_decimals_arrow_prints_with_exponent() -> None:
    values = [Decimal("0.0000000001"), Decimal(0), Decimal("-0.0000001"), Decimal("1E+20"), None]
    table = pa.table({"n": pa.array(values, pa.decimal128(38, 10))})
    rows = _cells(encode_columns([ColumnDesc("n", codec.NUMERIC)], [0], table))
    assert [None if r[0] is None else r[0].decode() for r in rows] == ["0.0000000001", "0", "-0.0000001",
                                                      "100000000000000000000", None]


def test_timestamp_units_and_zones() -> None:
    moment = dt.datetime(2024, 1, 2, 3, 4, 5, 123000)
    table = pa.table({
        "s": pa.array([moment.replace(microsecond=0)], pa.timestamp("s")),
        "ms": pa.array([moment], pa.timestamp("ms")),
        "ns": pa.array([moment], pa.timestamp("ns")),
        "ny": pa.array([moment.replace(tzinfo=dt.UTC)], pa.timestamp("us", tz="America/New_York")),
    })
    cols = [ColumnDesc("s", codec.TIMESTAMP), ColumnDesc("ms", codec.TIMESTAMP),
            ColumnDesc("ns", codec.TIMESTAMP), ColumnDesc("ny", codec.TIMESTAMPTZ)]
    rows = _cells(encode_columns(cols, [0] * 4, table))
    assert [c.decode() for c in rows[0]] == ["2024-01-02 03:04:05", "2024-01-02 03:04:05.123",
                                             "2024-01-02 03:04:05.123", "2024-01-02 03:04:05.123+00"]
    binary = _cells(encode_columns(cols, [1] * 4, table))[0]
    assert binary[1] == binary[2] == binary[3] == codec.binary_value(moment, codec.TIMESTAMP)


def test_chunked_dictionary_and_mismatched_types() -> None:
    table = pa.Table.from_batches([
        pa.record_batch({"k": pa.array(["a", "b"]).dictionary_encode(), "v": pa.array([1, 2], pa.int64())}),
        pa.record_batch({"k": pa.array(["c", None]).dictionary_encode(), "v": pa.array([3, None], pa.int64())}),
    ])
    # an int64 column announced as int4 and requested in binary is narrowed to int4
    cols = [ColumnDesc("k", codec.VARCHAR), ColumnDesc("v", codec.INT4)]
    rows = _cells(encode_columns(cols, [0, 1], table))
    assert rows == [[b"a", struct.pack("!i", 1)], [b"b", struct.pack("!i", 2)],
                    [b"c", struct.pack("!i", 3)], [None, None]]


def test_empty_and_zero_columns() -> None:
    cols = columns_of(TYPES_TABLE)
    assert encode_rows(cols, [0] * len(cols), TYPES_TABLE.slice(0, 0)) == b""
    assert encode_rows([], [], [(), ()]) == b"D\x00\x00\x00\x06\x00\x00" * 2


def test_slicing() -> None:
    assert row_count(TYPES_TABLE) == 3 and row_count([(1,), (2,)]) == 2 and row_count(None) == 0
    assert row_count(slice_rows(TYPES_TABLE, 1, 3)) == 2
    assert slice_rows([(1,), (2,), (3,)], 1, 2) == [(2,)]


def _random_table(rng: random.Random, n: int) -> tuple[pa.Table, list[ColumnDesc]]:
    def maybe(v):
        return None if rng.random() < 0.15 else v

    moment = dt.datetime(1970, 1, 1)
    specs = [
        ("i2", pa.int16(), codec.INT2, lambda: rng.randint(-(1 << 15), (1 << 15) - 1)),
        ("i4", pa.int32(), codec.INT4, lambda: rng.randint(-(1 << 31), (1 << 31) - 1)),
        ("i8", pa.int64(), codec.INT8, lambda: rng.randint(-(1 << 63), (1 << 63) - 1)),
        ("f4", pa.float32(), codec.FLOAT4,
         lambda: float(np.float32(rng.choice([rng.uniform(-1, 1) * 10 ** rng.randint(-40, 38), 0.0, -0.0,
                                             float("inf"), float("nan"), 1e6, 1e-4])))),
        ("f8", pa.float64(), codec.FLOAT8,
         lambda: rng.choice([rng.uniform(-1, 1) * 10 ** rng.randint(-300, 300), 1e15, 1e-4, float("-inf"),
                             float("nan"), 0.5])),
        ("b", pa.bool_(), codec.BOOL, lambda: rng.random() < 0.5),
        ("s", pa.string(), codec.VARCHAR, lambda: "".join(rng.choice("aé'\"\\ \n,{}x") for _ in range(rng.randint(0, 6)))),
        ("n", pa.decimal128(20, 4), codec.NUMERIC,
         lambda: Decimal(rng.randint(-10 ** 19, 10 ** 19)).scaleb(-4)),
        ("n0", pa.decimal128(38, 10), codec.NUMERIC, lambda: Decimal(rng.randint(-10 ** 12, 10 ** 12)).scaleb(-10)),
        ("d", pa.date32(), codec.DATE, lambda: dt.date(1, 1, 1) + dt.timedelta(days=rng.randint(0, 3_000_000))),
        ("ts", pa.timestamp("us"), codec.TIMESTAMP,
         lambda: moment + dt.timedelta(microseconds=rng.randint(-10 ** 16, 10 ** 16))),
        ("tz", pa.timestamp("us", tz="UTC"), codec.TIMESTAMPTZ,
         lambda: (moment + dt.timedelta(microseconds=rng.randint(-10 ** 16, 10 ** 16))).replace(tzinfo=dt.UTC)),
        ("ms", pa.timestamp("ms"), codec.TIMESTAMP,
         lambda: moment + dt.timedelta(milliseconds=rng.randint(-10 ** 12, 10 ** 12))),
    ]
    table = pa.table({name: pa.array([maybe(make()) for _ in range(n)], t) for name, t, _, make in specs})
    cols = [ColumnDesc(name, oid) for name, _, oid, _ in specs]
    cols[-5] = ColumnDesc("n0", codec.NUMERIC, type_mod=(38 << 16 | 10) + 4)  # numeric(38, 10)
    return table, cols


@pytest.mark.parametrize("fmt", [0, 1])
def test_small_results_encode_value_by_value_as_the_arrow_path_does(fmt: int) -> None:
    rng = random.Random(11)
    for _ in range(150):
        table, cols = _random_table(rng, rng.randint(1, SMALL_ROWS))
        formats = [fmt] * len(cols)
        assert encode_rows(cols, formats, table) == encode_columns(cols, formats, table)
