"""Quoted literals as the arguments of numeric functions and beside arithmetic operators in batch
queries (`frontend.catalog.unknown_arguments`): PostgreSQL's values and types (a double precision, a
numeric for round's and trunc's two arguments, the other operand's type), its 22P02 for input that
is no number of that type, and its 42725 for trunc of one (trunc(macaddr) beside the numeric ones)."""

from __future__ import annotations

import pyarrow as pa
import pytest
from catalog_session import fail_both, make_session, select_both

CALLS = ["abs('-5')", "ceil('2.5')", "ceiling('-0.5')", "floor('2.5')", "sign('-3')", "round('2.5', 0)",
         "round('2.55', 1)", "round('2.5')", "abs(' 7 ')", "floor(NULL)", "trunc('2.77', 1)", "trunc('-2.77', 0)"]


def _both(oracle_dsn: str, expressions: list[str]) -> tuple[pa.Table, list[int]]:
    """`select_both`, whose row of values must be the same in both."""
    table, want, oids = select_both(oracle_dsn, expressions)
    assert tuple(table.to_pylist()[0].values()) == want
    return table, oids


def test_values_and_types_are_postgresqls(oracle_dsn: str) -> None:
    table, types = _both(oracle_dsn, CALLS)
    numeric, double = 1700, 701
    for field, oid, call in zip(table.schema, types, CALLS, strict=True):
        assert oid in (numeric, double), call
        assert pa.types.is_decimal(field.type) if oid == numeric else pa.types.is_floating(field.type), call


OPERATIONS = ["'5' + 1", "10 / '4'", "'7' % 3", "'1'::int + '2'", "5000000000 - '1'", "'3' * 2::smallint",
              "'1.5' + 2.5::float8", "'1.005' + 1::numeric(12,2)", "'123456' + 1::numeric(3,0)"]


def test_a_literal_beside_an_operator_takes_the_other_operands_type(oracle_dsn: str) -> None:
    table, oids = _both(oracle_dsn, OPERATIONS)
    arrow = {23: pa.int32(), 20: pa.int64(), 21: pa.int16(), 701: pa.float64()}  # (integer, bigint, smallint, double)
    assert [arrow.get(o) for o in oids] == [t if not pa.types.is_decimal(t) else None for t in table.schema.types]


def test_a_literal_beside_a_catalog_column_takes_its_type() -> None:
    # (orders.amount is a numeric(12,2): PostgreSQL's numeric * numeric)
    session = make_session()
    table = session.run_batch(session.parse_sql("SELECT amount * '2' AS a, customer + '1' AS c FROM orders"), typed=True)
    assert pa.types.is_decimal(table.schema.field("a").type) and table.schema.field("c").type == pa.int32()


@pytest.mark.parametrize("call", ["abs('x')", "round('two', 1)", "'2.5' * 2", "'a' + 1", "trunc('x', 1)"])
def test_input_that_is_no_number_fails_as_in_postgresql(oracle_dsn: str, call: str) -> None:
    got, want = fail_both(oracle_dsn, f"SELECT {call}")
    assert got.sqlstate == want.sqlstate == "22P02"


@pytest.mark.parametrize("call", ["trunc('2.7')", "trunc(NULL)", "trunc('x')"])
def test_trunc_of_one_literal_is_not_unique_as_in_postgresql(oracle_dsn: str, call: str) -> None:
    got, want = fail_both(oracle_dsn, f"SELECT {call}")
    assert (got.sqlstate, got.message) == (want.sqlstate, want.diag.message_primary) == \
        ("42725", "function trunc(unknown) is not unique")
