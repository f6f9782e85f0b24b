"""The wire server against psycopg 3 (libpq) over real sockets, with fake sessions."""

from __future__ import annotations

import datetime as dt
import logging
import subprocess
import sys
import threading
import time
from decimal import Decimal

import psycopg
import pytest
from psycopg import errors
from psycopg.pq import TransactionStatus

from .fakes import BIG_ROWS, ServerThread

UTC = dt.UTC
EXPECTED_T = [
    (1, 100, 1 << 40, 1.5, 100.0, Decimal("61.5"), Decimal("61.50"), True, "héllo", dt.date(2024, 1, 2),
     dt.datetime(2024, 1, 2, 3, 4, 5, 120000), dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)),
    (-2, None, 0, None, 1e16, Decimal("100"), None, False, "", None, None,
     dt.datetime(1970, 1, 1, 0, 0, 0, 1, tzinfo=UTC)),
    (None, -7, None, 1e6, None, None, Decimal("-0.01"), None, None, dt.date(1999, 12, 31),
     dt.datetime(2000, 1, 1), None),
]
PARAM_VALUES = [
    pytest.param(1, id="int2"),
    pytest.param(100_000, id="int4"),
    pytest.param(1 << 40, id="int8"),
    pytest.param(-1.25, id="float8"),
    pytest.param(Decimal("61.50"), id="numeric"),
    pytest.param(Decimal("-12345678901234567890.000000001"), id="numeric-long"),
    pytest.param("héllo", id="text"),
    pytest.param(True, id="bool"),
    pytest.param(dt.date(2024, 2, 29), id="date"),
    pytest.param(dt.datetime(2024, 1, 2, 3, 4, 5, 6), id="timestamp"),
    pytest.param(dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC), id="timestamptz"),
    pytest.param(None, id="null"),
]


def _wait_for(predicate, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.01)


@pytest.fixture
def conn(server: ServerThread):
    with psycopg.connect(server.dsn(), autocommit=True) as c:
        yield c


def test_simple_query(conn: psycopg.Connection) -> None:
    cur = conn.execute("select 1")
    assert cur.fetchall() == [(1,)]
    assert cur.description[0].name == "?column?"
    assert cur.statusmessage == "SELECT 1"


def test_startup_parameters(server: ServerThread, conn: psycopg.Connection) -> None:
    assert conn.info.parameter_status("server_version") == "13.14.0"
    assert conn.info.parameter_status("TimeZone") == "UTC"
    assert conn.info.parameter_status("standard_conforming_strings") == "on"
    assert conn.info.backend_pid > 0
    assert server.state.startups[0]["user"] == "root"
    assert server.state.startups[0]["database"] == "dev"


@pytest.mark.parametrize("binary", [False, True], ids=["text", "binary"])
def test_result_types(conn: psycopg.Connection, binary: bool) -> None:
    assert conn.cursor(binary=binary).execute("select * from t").fetchall() == EXPECTED_T


@pytest.mark.parametrize("binary", [False, True], ids=["text-results", "binary-results"])
@pytest.mark.parametrize("placeholder", ["%s", "%t", "%b"])
@pytest.mark.parametrize("value", PARAM_VALUES)
def test_parameter_round_trip(conn: psycopg.Connection, value: object, placeholder: str, binary: bool) -> None:
    cur = conn.cursor(binary=binary)
    assert cur.execute(f"select {placeholder}", [value]).fetchone() == (value,)


def test_typed_and_untyped_parameters(conn: psycopg.Connection) -> None:
    # psycopg sends (21, 0) with formats (1, 0): the untyped one is resolved by `describe`
    assert conn.execute("select %s::int, %s::int8", [1, "78"]).fetchone() == (1, 78)
    assert conn.execute("select %s, %s", [1, "78"]).fetchone() == (1, "78")


def test_prepared_statements(server: ServerThread, conn: psycopg.Connection) -> None:
    for i in range(3):
        assert conn.execute("select %s::int", [i], prepare=True).fetchone() == (i,)
    assert conn.execute("select 1", prepare=True).fetchone() == (1,)
    assert conn.execute("select 1", prepare=True).fetchone() == (1,)
    with conn.cursor(binary=True) as cur:
        assert cur.execute("select * from t", prepare=True).fetchall() == EXPECTED_T


def test_error_then_next_query(conn: psycopg.Connection) -> None:
    with pytest.raises(errors.UndefinedTable) as err:
        conn.execute("select * from missing")
    assert err.value.sqlstate == "42P01"
    assert err.value.diag.statement_position == "15"
    assert conn.execute("select 1").fetchone() == (1,)
    with pytest.raises(errors.UndefinedTable):  # the extended protocol too
        conn.execute("select * from missing where x = %s", [1])
    assert conn.execute("select %s::int", [2]).fetchone() == (2,)


def test_syntax_error(conn: psycopg.Connection) -> None:
    with pytest.raises(errors.SyntaxError) as err:
        conn.execute("selec 1")
    assert err.value.sqlstate == "42601"


def test_internal_error_is_xx000_and_logged(conn: psycopg.Connection, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.ERROR, logger="frontend.pgwire"), pytest.raises(errors.InternalError_) as err:
        conn.execute("boom")
    assert err.value.sqlstate == "XX000"
    assert "boom" in str(err.value)
    assert any(r.exc_info and "boom" in r.getMessage() for r in caplog.records)
    assert conn.execute("select 1").fetchone() == (1,)


def test_several_statements_in_one_query(server: ServerThread, conn: psycopg.Connection) -> None:
    cur = conn.execute("select 1; select 2")
    assert cur.fetchall() == [(1,)]
    assert cur.nextset()
    assert cur.fetchall() == [(2,)]
    with pytest.raises(errors.UndefinedTable):
        conn.execute("create table a (x int); select * from missing; create table b (x int)")
    assert "create table a (x int)" in server.state.statements
    assert "create table b (x int)" not in server.state.statements
    assert conn.execute("select 1").fetchone() == (1,)


def test_notice(conn: psycopg.Connection) -> None:
    notices = []
    conn.add_notice_handler(lambda diag: notices.append((diag.severity, diag.message_primary)))
    assert conn.execute("notice").statusmessage == "DO"
    assert notices == [("NOTICE", "hello from RisingSpark")]


def test_cancel_safe(server: ServerThread, conn: psycopg.Connection) -> None:
    def cancel() -> None:
        assert server.state.sleeping.wait(10)
        conn.cancel_safe()

    canceller = threading.Thread(target=cancel)
    canceller.start()
    with pytest.raises(errors.QueryCanceled) as err:
        conn.execute("select pg_sleep(30)")
    canceller.join(10)
    assert err.value.sqlstate == "57014"
    assert server.state.cancels == 1
    assert conn.execute("select 1").fetchone() == (1,)


# `Connection.cancel()` calls libpq's blocking PQcancel without releasing the GIL, which would
# freeze the in-process server thread: that client runs in its own process.
CANCEL_CLIENT = """
import sys, threading, psycopg
conn = psycopg.connect(sys.argv[1], autocommit=True)
def cancel():
    sys.stdin.readline()
    conn.cancel()
threading.Thread(target=cancel, daemon=True).start()
try:
    conn.execute("select pg_sleep(30)")
except psycopg.errors.QueryCanceled as exc:
    print(exc.sqlstate)
print(conn.execute("select 1").fetchone()[0])
"""


def test_cancel(server: ServerThread) -> None:
    proc = subprocess.Popen([sys.executable, "-c", CANCEL_CLIENT, server.dsn()], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    try:
        assert server.state.sleeping.wait(10)
        out, _ = proc.communicate("go\n", timeout=20)
    finally:
        proc.kill()
    assert out.split() == ["57014", "1"]
    assert server.state.cancels == 1


def test_cancel_does_not_touch_other_connections(server: ServerThread, conn: psycopg.Connection) -> None:
    with psycopg.connect(server.dsn(), autocommit=True) as other:
        other.cancel_safe()
        assert other.execute("select 1").fetchone() == (1,)
        assert conn.execute("select 2").fetchone() == (2,)


def test_pipeline(conn: psycopg.Connection) -> None:
    with conn.pipeline():
        c1 = conn.execute("select %s::int", [1])
        c2 = conn.execute("select %s", ["two"])
        c3 = conn.cursor(binary=True).execute("select * from t")
    assert c1.fetchone() == (1,)
    assert c2.fetchone() == ("two",)
    assert c3.fetchall() == EXPECTED_T


def test_pipeline_error_discards_until_sync(server: ServerThread, conn: psycopg.Connection) -> None:
    with pytest.raises(errors.UndefinedTable), conn.pipeline():
        conn.execute("select * from missing where x = %s", [1])
        conn.execute("create table never (x int) -- %s", [2])
    assert not any(s.startswith("create table never") for s in server.state.statements)
    assert conn.execute("select 1").fetchone() == (1,)


def test_transaction_status(server: ServerThread) -> None:
    with psycopg.connect(server.dsn()) as conn:  # not autocommit: psycopg sends BEGIN
        conn.execute("select 1")
        assert conn.info.transaction_status == TransactionStatus.INTRANS
        conn.commit()
        assert conn.info.transaction_status == TransactionStatus.IDLE
        with pytest.raises(errors.UndefinedTable):
            conn.execute("select * from missing")
        # statements auto-commit: an error never leaves the block failed
        assert conn.info.transaction_status == TransactionStatus.INTRANS
        assert conn.execute("select 2").fetchone() == (2,)
        conn.rollback()
        with conn.transaction():
            with pytest.raises(errors.UndefinedTable), conn.transaction():
                conn.execute("select * from missing")
            # ROLLBACK TO SAVEPOINT keeps the block open
            assert conn.info.transaction_status == TransactionStatus.INTRANS
            assert conn.execute("select 1").fetchone() == (1,)
        assert conn.info.transaction_status == TransactionStatus.IDLE


def test_big_result(conn: psycopg.Connection) -> None:
    rows = conn.execute("select * from big").fetchall()
    assert len(rows) == BIG_ROWS and rows[-1] == (BIG_ROWS - 1,)
    rows = conn.cursor(binary=True).execute("select * from big").fetchall()
    assert rows[:3] == [(0,), (1,), (2,)] and len(rows) == BIG_ROWS


def test_ssl_and_gss_negotiation_refused(server: ServerThread) -> None:
    with psycopg.connect(server.dsn(sslmode="prefer", gssencmode="prefer")) as conn:
        assert conn.execute("select 1").fetchone() == (1,)
    with pytest.raises(psycopg.OperationalError, match="SSL"):
        psycopg.connect(server.dsn(sslmode="require"))


def test_startup_refused(server: ServerThread) -> None:
    with pytest.raises(psycopg.OperationalError, match='database "nodb" does not exist'):
        psycopg.connect(server.dsn(dbname="nodb"))
    _wait_for(lambda: server.state.closes == 1)


def test_session_closed_on_terminate(server: ServerThread) -> None:
    conn = psycopg.connect(server.dsn())
    conn.close()
    _wait_for(lambda: server.state.closes == 1)


def test_stop_closes_connections(server: ServerThread) -> None:
    conn = psycopg.connect(server.dsn(), autocommit=True)
    server.stop()
    assert server.state.closes == 1
    with pytest.raises(psycopg.OperationalError):
        conn.execute("select 1")
    conn.close()


@pytest.mark.parametrize("loop", ["uvloop", "asyncio"])
def test_connections_past_the_limit_are_refused_as_postgres_does(loop: str) -> None:
    with ServerThread(max_connections=2, event_loop=loop) as server:
        first = psycopg.connect(server.dsn(), autocommit=True)
        second = psycopg.connect(server.dsn(), autocommit=True)
        with pytest.raises(psycopg.OperationalError, match="sorry, too many clients already"):
            psycopg.connect(server.dsn(), autocommit=True)
        assert _startup_error(server) == {"S": "FATAL", "C": "53300", "M": "sorry, too many clients already"}
        assert first.execute("SELECT 1").fetchone() == (1,)  # those served go on
        first.close()
        _wait_for(lambda: len(server.server._slots) < 2)
        third = psycopg.connect(server.dsn(), autocommit=True)  # a slot freed
        assert third.execute("SELECT 1").fetchone() == (1,)
        second.close()
        third.close()


@pytest.mark.parametrize("loop", ["uvloop", "asyncio"])
def test_connections_still_authenticating_take_their_slots(loop: str) -> None:
    """As a PostgreSQL backend counts from its start: clients that have not answered the password
    request yet fill the server as well."""
    import socket
    import struct

    from frontend.pgwire.auth import PasswordAuth

    with ServerThread(PasswordAuth.with_passwords({"root": "pw"}, "md5"), max_connections=2, event_loop=loop) as server:
        waiting = []
        for _ in range(2):
            sock = socket.create_connection(("127.0.0.1", server.server.port), timeout=10)
            body = struct.pack("!i", 196608) + b"user\0root\0\0"
            sock.sendall(struct.pack("!i", len(body) + 4) + body)
            assert sock.recv(1) == b"R"  # asked for its password, not answering
            waiting.append(sock)
        assert _startup_error(server)["C"] == "53300"
        for sock in waiting:
            sock.close()
        _wait_for(lambda: len(server.server._slots) == 0)
        with psycopg.connect(server.dsn(password="pw"), autocommit=True) as c:
            assert c.execute("SELECT 1").fetchone() == (1,)


def _startup_error(server: ServerThread) -> dict[str, str]:
    """The fields of the ErrorResponse a raw startup packet gets (libpq keeps a refused connection's
    SQLSTATE to itself)."""
    import socket
    import struct

    body = struct.pack("!i", 196608) + b"user\0root\0\0"
    with socket.create_connection(("127.0.0.1", server.server.port), timeout=10) as sock:
        sock.sendall(struct.pack("!i", len(body) + 4) + body)
        data = b""
        while len(data) < 5 or len(data) < 1 + struct.unpack("!i", data[1:5])[0]:
            chunk = sock.recv(4096)
            assert chunk, "the server closed the connection without an ErrorResponse"
            data += chunk
    assert data[:1] == b"E"
    fields = data[5:1 + struct.unpack("!i", data[1:5])[0]].split(b"\0")
    return {f[:1].decode(): f[1:].decode() for f in fields if f and f[:1] in (b"S", b"C", b"M")}
