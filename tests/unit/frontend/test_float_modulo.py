"""``%`` with a real or double operand in batch queries (`frontend.catalog.float_modulo`) against
PostgreSQL (the oracle): 42883, as PostgreSQL has the operator for integers and numerics only."""

from __future__ import annotations

import pytest
from catalog_session import fail_both, select_both

ERRORS = ["2.5::float8 % 2", "2.5::real % 2", "5 % 2.5::float8", "'2.5' % 2.5::float8", "2.5::float8 % NULL",
          "(1::float8 + 1) % 2"]
VALUES = ["2.5 % 2", "7 % 3", "-7 % 3", "'7' % 3", "7::bigint % 3::smallint"]


@pytest.mark.parametrize("expression", ERRORS)
def test_a_float_operand_fails_as_in_postgresql(oracle_dsn: str, expression: str) -> None:
    got, want = fail_both(oracle_dsn, f"SELECT {expression}")
    assert (got.sqlstate, got.message) == (want.sqlstate, want.diag.message_primary)


def test_integers_and_numerics_answer_as_in_postgresql(oracle_dsn: str) -> None:
    table, want, _ = select_both(oracle_dsn, VALUES)
    assert tuple(table.to_pylist()[0].values()) == want
