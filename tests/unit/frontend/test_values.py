from __future__ import annotations

import datetime as dt
import re
from decimal import Decimal

import psycopg
import pytest

from frontend.values import cast_column, read_values
from risingspark.types import DataType

PG = "host=127.0.0.1 port=5432 user=postgres dbname=postgres"


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


TEXTS = ["0", "7", "-7", "+7", " 12 ", "007", "32767", "32768", "-32768", "-32769", "2147483647", "2147483648",
         "-2147483649", "9223372036854775807", "9223372036854775808", "-9223372036854775808", "1.5", "1e3", "",
         " ", "--5", "+-5", "5-", "²", "١٢", "0x10", "1_000", "abc", None]


@pytest.mark.parametrize("type_name", ["smallint", "integer", "bigint"])
def test_a_few_integer_texts_convert_as_postgres_or_fall_back(type_name: str) -> None:
    """A few values are converted in Python (`cast_column`'s scalar path): each either gives what
    PostgreSQL gives or falls back to the general path (None) where PostgreSQL fails or rounds."""
    with psycopg.connect(PG, autocommit=True) as pg:
        for text in TEXTS:
            got = cast_column([text], DataType.parse(type_name))
            try:
                expected = pg.execute(f"SELECT %s::text::{type_name}", (text,)).fetchone()[0]
            except psycopg.Error:
                assert got is None, text
                continue
            assert got is None or got.to_pylist() == [expected], text
            if text is not None and re.fullmatch(r"[ \t]*[+-]?[0-9]+[ \t]*", text):  # the scalar path's own
                assert got is not None, text
            assert got is None or got.type == DataType.parse(type_name).to_arrow()
    assert cast_column(["1", None, "-3"], DataType.parse("int")).to_pylist() == [1, None, -3]
    assert cast_column(["a", None, ""], DataType.parse("varchar")).to_pylist() == ["a", None, ""]
