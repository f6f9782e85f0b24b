"""The wire server against psycopg2: autocommit off, BEGIN sent first, status tracked from 'Z'."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from .fakes import ServerThread

psycopg2 = pytest.importorskip("psycopg2")
extensions = pytest.importorskip("psycopg2.extensions")
errorcodes = pytest.importorskip("psycopg2.errorcodes")


def test_transaction_flow_and_types(server: ServerThread) -> None:
    conn = psycopg2.connect(server.dsn())
    try:
        cur = conn.cursor()
        cur.execute("select 1")
        assert cur.fetchall() == [(1,)]
        assert conn.get_transaction_status() == extensions.TRANSACTION_STATUS_INTRANS
        assert server.state.statements[:2] == ["begin", "select 1"]
        cur.execute("select * from t")
        first = cur.fetchone()
        assert first[:8] == (1, 100, 1 << 40, 1.5, 100.0, Decimal("61.5"), Decimal("61.50"), True)
        assert first[9:11] == (dt.date(2024, 1, 2), dt.datetime(2024, 1, 2, 3, 4, 5, 120000))
        with pytest.raises(psycopg2.errors.UndefinedTable) as err:
            cur.execute("select * from missing")
        assert err.value.pgcode == errorcodes.UNDEFINED_TABLE
        # never "in failed transaction": the next statement works without a rollback
        assert conn.get_transaction_status() == extensions.TRANSACTION_STATUS_INTRANS
        cur.execute("select 2")
        assert cur.fetchone() == (2,)
        conn.commit()
        assert conn.get_transaction_status() == extensions.TRANSACTION_STATUS_IDLE
        assert server.state.statements[-1] == "commit"
    finally:
        conn.close()
