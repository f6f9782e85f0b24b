from __future__ import annotations

import datetime as dt
from decimal import Decimal

from frontend.values import cast_column, read_values
from risingspark.types import DataType


def test_reads_literals_by_column() -> None:
    cols = read_values("VALUES (1, 'it''s', NULL, true), (-2.5, '', 3e2, FALSE)", 4)
    assert cols == [["1", "-2.5"], ["it's", ""], [None, "3e2"], ["true", "false"]]


def test_anything_but_literals_is_refused() -> None:
    assert read_values("VALUES (1, now())", 2) is None
    assert read_values("VALUES (1, 'x'::text)", 2) is None
    assert read_values("VALUES (1, 2), (3)", 2) is None
    assert read_values("VALUES (1, 2) x", 2) is None


def test_casts_round_numerics_as_postgres() -> None:
    got = cast_column(["1.005", "-1.005", "2", None], DataType.parse("numeric(6,2)"))
    assert got.to_pylist() == [Decimal("1.01"), Decimal("-1.01"), Decimal("2.00"), None]


def test_casts_dates_and_timestamps() -> None:
    assert cast_column(["2024-01-02 03:04:05"], DataType.parse("timestamp")).to_pylist() == [
        dt.datetime(2024, 1, 2, 3, 4, 5)]
    assert cast_column(["2024-01-02"], DataType.parse("date")).to_pylist() == [dt.date(2024, 1, 2)]


def test_values_that_do_not_convert_fall_back() -> None:
    assert cast_column(["abc"], DataType.parse("int")) is None
    assert cast_column(["1.5"], DataType.parse("int")) is None  # Postgres rounds: the general path does it
    assert cast_column(["99999"], DataType.parse("numeric(4,1)")) is None
