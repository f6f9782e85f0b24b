"""A quotient of integers in batch queries (`frontend.catalog.rewrite.integer_quotients`) against
PostgreSQL (the oracle): truncated, and of the operands' type as the client sees it (``10 / 4`` an
integer, OID 23), not a bigint."""

from __future__ import annotations

import pyarrow as pa
from catalog_session import select_both

QUOTIENTS = ["10 / 4", "-7 / 2", "7 / -2", "10::smallint / 4::smallint", "10::bigint / 4", "10 / 4::bigint",
             "5000000000 / 2", "'10' / 4", "(10 / 4) * 3"]
_ARROW = {21: pa.int16(), 23: pa.int32(), 20: pa.int64()}


def test_values_and_types_are_postgresqls(oracle_dsn: str) -> None:
    table, want, oids = select_both(oracle_dsn, QUOTIENTS)
    assert list(zip(QUOTIENTS, table.to_pylist()[0].values(), strict=True)) == list(zip(QUOTIENTS, want, strict=True))
    assert list(zip(QUOTIENTS, table.schema.types, strict=True)) == \
        list(zip(QUOTIENTS, [_ARROW[o] for o in oids], strict=True))
