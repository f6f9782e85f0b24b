from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from frontend.session import substitute_params
from risingspark.errors import ProtocolViolation


def test_parameters_become_typed_literals() -> None:
    sql = "SELECT $1, $2, '$1', $3, $4, $5 -- $1"
    out = substitute_params(sql, [7, "it's", Decimal("1.50"), dt.date(2024, 1, 2), None], [20, 25, 1700, 1082, 23])
    assert out == ("SELECT 7, 'it''s', '$1', CAST('1.50' AS numeric(3, 2)), CAST('2024-01-02' AS date), "
                   "CAST(NULL AS integer) -- $1")


def test_missing_parameter_is_a_protocol_error() -> None:
    with pytest.raises(ProtocolViolation):
        substitute_params("SELECT $2", [1], [23])
