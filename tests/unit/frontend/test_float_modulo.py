"""``%`` with a real or double operand in batch queries (`frontend.catalog.float_modulo`) against
PostgreSQL (the oracle): 42883, as PostgreSQL has the operator for integers and numerics only."""

from __future__ import annotations

import psycopg
import pytest
from catalog_session import make_session

from risingspark.errors import RisingSparkError

ERRORS = ["2.5::float8 % 2", "2.5::real % 2", "5 % 2.5::float8", "'2.5' % 2.5::float8", "2.5::float8 % NULL",
          "(1::float8 + 1) % 2"]
VALUES = ["2.5 % 2", "7 % 3", "-7 % 3", "'7' % 3", "7::bigint % 3::smallint"]


@pytest.mark.parametrize("expression", ERRORS)
def test_a_float_operand_fails_as_in_postgresql(oracle_dsn: str, expression: str) -> None:
    with psycopg.connect(oracle_dsn, autocommit=True) as pg, pytest.raises(psycopg.Error) as want:
        pg.execute(f"SELECT {expression}")
    session = make_session()
    with pytest.raises(RisingSparkError) as got:
        session.run_batch(session.parse_sql(f"SELECT {expression}"))
    assert (got.value.sqlstate, got.value.message) == (want.value.sqlstate, want.value.diag.message_primary)


def test_integers_and_numerics_answer_as_in_postgresql(oracle_dsn: str) -> None:
    session = make_session()
    query = "SELECT " + ", ".join(f"{v} AS c{i}" for i, v in enumerate(VALUES))
    got = list(session.run_batch(session.parse_sql(query), typed=True).to_pylist()[0].values())
    with psycopg.connect(oracle_dsn, autocommit=True) as pg:
        assert got == list(pg.execute(query).fetchone())
