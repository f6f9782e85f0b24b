"""Casts to ``varchar(n)``/``char(n)``, and of string literals to booleans and integers, in batch
queries (`frontend.catalog.literal_casts`) against PostgreSQL (the oracle)."""

from __future__ import annotations

import psycopg
import pytest
from catalog_session import make_session

from risingspark.errors import RisingSparkError

VALUES = ["'abc'::varchar(2)", "'a'::char(3)", "'abcdef'::character varying(4)", "12345::varchar(3)",
          "'on'::boolean", "'OFF'::boolean", "' yes '::boolean", "'n'::boolean", "'tr'::boolean", "'0'::boolean",
          "' 12 '::int", "'-7'::smallint", "'+9000000000'::bigint", "'abc'::varchar"]
ERRORS = ["'1.5'::int", "'1e3'::int", "'0x1F'::int", "'o'::boolean", "'maybe'::boolean", "'40000'::smallint",
          "'9999999999'::int", "''::int"]


def test_casts_answer_as_postgresql(oracle_dsn: str):
    session = make_session()
    query = "SELECT " + ", ".join(f"{v} AS c{i}" for i, v in enumerate(VALUES))
    got = list(session.run_batch(session.parse_sql(query)).to_pylist()[0].values())
    with psycopg.connect(oracle_dsn, autocommit=True) as pg:
        assert list(zip(VALUES, got, strict=True)) == list(zip(VALUES, pg.execute(query).fetchone(), strict=True))


@pytest.mark.parametrize("cast", ERRORS)
def test_bad_literals_fail_as_in_postgresql(oracle_dsn: str, cast: str):
    session = make_session()
    with psycopg.connect(oracle_dsn, autocommit=True) as pg, pytest.raises(psycopg.Error) as want:
        pg.execute(f"SELECT {cast}")
    with pytest.raises(RisingSparkError) as got:
        session.run_batch(session.parse_sql(f"SELECT {cast}"))
    assert (got.value.sqlstate, got.value.message) == (want.value.sqlstate, want.value.diag.message_primary)
