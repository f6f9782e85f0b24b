"""Struct values on the wire print as PostgreSQL's record text (``record_out``), nested structs,
NULL fields and quoting included; the expected texts are PostgreSQL's own, checked again against the
oracle server by `test_record_text_agrees_with_postgres`."""

from __future__ import annotations

import struct
from decimal import Decimal

import psycopg
import pyarrow as pa
import pytest

from frontend.pgwire import codec
from frontend.pgwire.api import ColumnDesc
from frontend.pgwire.datarows import _binary_cells, _text_array

PG = "host=127.0.0.1 port=5432 user=postgres dbname=postgres"
FIELDS = [None, "", "a b", "x,y", 'q"u', "p(a)", "b\\s", " ", "ü", "tab\there", "plain", "NULL"]
EXPECTED = '(,"","a b","x,y","q""u","p(a)","b\\\\s"," ",ü,"tab\there",plain,NULL)'


def test_record_field_quoting() -> None:
    assert codec.format_record(FIELDS) == EXPECTED


def test_record_text_agrees_with_postgres() -> None:
    try:
        conn = psycopg.connect(PG, autocommit=True)
    except psycopg.OperationalError:
        pytest.skip("no PostgreSQL oracle on 127.0.0.1:5432")
    with conn:
        placeholders = ", ".join("%s::text" for _ in FIELDS)
        assert conn.execute(f"SELECT ROW({placeholders})::text", FIELDS).fetchone()[0] == EXPECTED
        nested = conn.execute("SELECT ROW(1, ROW(1.5::float8, 'x y'), NULL::int, ROW(NULL::int), "
                              "2.50::numeric(12,2))::text").fetchone()[0]
    arr = pa.array([{"a": 1, "b": {"x": 1.5, "y": "x y"}, "c": None, "d": {"e": None}, "f": Decimal("2.5")}],
                   pa.struct([("a", pa.int32()), ("b", pa.struct([("x", pa.float64()), ("y", pa.string())])),
                              ("c", pa.int32()), ("d", pa.struct([("e", pa.int32())])), ("f", pa.decimal128(12, 2))]))
    assert _text_array(arr, ColumnDesc("s", 2249)).to_pylist() == [nested]


def test_struct_column_text_and_binary() -> None:
    t = pa.struct([("a", pa.int32()), ("b", pa.string())])
    arr = pa.array([{"a": 1, "b": "a b"}, None, {"a": None, "b": ""}], t)
    assert _text_array(arr, ColumnDesc("s", 2249)).to_pylist() == ['(1,"a b")', None, '(,"")']
    cells = _binary_cells(arr, ColumnDesc("s", 2249)).to_pylist()
    # record_send: field count, then (type OID, length, bytes) per field, -1 for NULL
    first = struct.pack("!iIiiIi", 2, 23, 4, 1, 1043, 3) + b"a b"
    assert cells[0] == struct.pack("!i", len(first)) + first
    assert cells[1] == b"\xff\xff\xff\xff"
    third = struct.pack("!iIiIi", 2, 23, -1, 1043, 0)
    assert cells[2] == struct.pack("!i", len(third)) + third


def test_jsonb_text_and_binary() -> None:
    arr = pa.array(['{"a": 1}', None], pa.string())
    col = ColumnDesc("j", 3802)
    assert _text_array(pa.ExtensionArray.from_storage(pa.json_(), arr), col).to_pylist() == ['{"a": 1}', None]
    assert _binary_cells(arr, col).to_pylist() == [struct.pack("!i", 9) + b'\x01{"a": 1}', b"\xff\xff\xff\xff"]
