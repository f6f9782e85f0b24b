"""Quoted literals as the arguments of numeric functions in batch queries
(`frontend.catalog.unknown_arguments`): PostgreSQL's values and types (a double precision, a numeric
for round's two arguments), and its 22P02 for input that is no number."""

from __future__ import annotations

import psycopg
import pyarrow as pa
import pytest
from catalog_session import make_session

from risingspark.errors import RisingSparkError

CALLS = ["abs('-5')", "ceil('2.5')", "ceiling('-0.5')", "floor('2.5')", "sign('-3')", "round('2.5', 0)",
         "round('2.55', 1)", "round('2.5')", "abs(' 7 ')", "floor(NULL)"]


def test_values_and_types_are_postgresqls(oracle_dsn: str) -> None:
    session = make_session()
    query = "SELECT " + ", ".join(f"{c} AS c{i}" for i, c in enumerate(CALLS))
    table = session.run_batch(session.parse_sql(query), typed=True)
    with psycopg.connect(oracle_dsn, autocommit=True) as pg:
        cur = pg.execute(query)
        want = cur.fetchone()
        types = [d.type_code for d in cur.description]
    assert list(table.to_pylist()[0].values()) == list(want)
    numeric, double = 1700, 701
    for field, oid, call in zip(table.schema, types, CALLS, strict=True):
        assert oid in (numeric, double), call
        assert pa.types.is_decimal(field.type) if oid == numeric else pa.types.is_floating(field.type), call


@pytest.mark.parametrize("call", ["abs('x')", "round('two', 1)"])
def test_input_that_is_no_number_fails_as_in_postgresql(oracle_dsn: str, call: str) -> None:
    with psycopg.connect(oracle_dsn, autocommit=True) as pg, pytest.raises(psycopg.Error) as want:
        pg.execute(f"SELECT {call}")
    session = make_session()
    with pytest.raises(RisingSparkError) as got:
        session.run_batch(session.parse_sql(f"SELECT {call}"))
    assert got.value.sqlstate == want.value.sqlstate == "22P02"
