"""STRUCT and JSONB column types: parsing RisingWave's syntax, and the Arrow, Spark, DuckDB and
pg_type mappings."""

from __future__ import annotations

import pyarrow as pa
import pytest

from risingspark.errors import FeatureNotSupported
from risingspark.types import INT4, JSONB, VARCHAR, DataType, TypeName


def test_struct_parse_and_mappings() -> None:
    t = DataType.parse('STRUCT<a INT, "B c" STRUCT<x VARCHAR, y NUMERIC(12,2)>, j JSONB>')
    assert t.name is TypeName.STRUCT
    assert [n for n, _ in t.fields] == ["a", "B c", "j"]
    assert t.fields[0][1] == INT4 and t.fields[2][1] == JSONB
    assert t.sql() == 'STRUCT<a INTEGER, "B c" STRUCT<x CHARACTER VARYING, y NUMERIC(12,2)>, j JSONB>'
    assert t.display() == 'struct<a integer, "B c" struct<x character varying, y numeric(12,2)>, j jsonb>'
    assert t.to_spark() == "STRUCT<`a`: INT, `B c`: STRUCT<`x`: STRING, `y`: DECIMAL(12,2)>, `j`: STRING>"
    assert t.to_duckdb() == 'STRUCT("a" INTEGER, "B c" STRUCT("x" VARCHAR, "y" DECIMAL(12,2)), "j" JSON)'
    assert t.to_arrow() == pa.struct([("a", pa.int32()), ("B c", pa.struct([("x", pa.string()),
                                                                           ("y", pa.decimal128(12, 2))])),
                                      ("j", pa.string())])
    assert (t.oid, t.typlen, t.pg_typname) == (2249, -1, "record")
    assert DataType.parse(t.sql()) == t  # the catalog stores sql()
    assert DataType.array_of(t).oid == 2287


def test_unquoted_field_names_fold_to_lower_case() -> None:
    assert DataType.parse("struct<A int>").fields == (("a", INT4),)


def test_jsonb_mappings() -> None:
    assert (JSONB.oid, JSONB.sql(), JSONB.to_spark(), JSONB.to_duckdb(), JSONB.to_arrow()) == \
        (3802, "JSONB", "STRING", "JSON", pa.string())
    assert DataType.from_arrow(pa.json_()) == JSONB
    assert DataType.from_arrow(pa.string()) == VARCHAR
    assert DataType.array_of(JSONB).oid == 3807


def test_struct_from_arrow_names_anonymous_fields() -> None:
    t = DataType.from_arrow(pa.struct([("", pa.int32()), ("", pa.string())]))
    assert [n for n, _ in t.fields] == ["f1", "f2"]


@pytest.mark.parametrize("text", ["json", "STRUCT<months INT, days INT, usecs BIGINT>"])
def test_unsupported_types_are_0a000(text: str) -> None:
    with pytest.raises(FeatureNotSupported):
        DataType.parse(text)
