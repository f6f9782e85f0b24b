"""Protocol flows no driver exposes directly, checked message by message with a raw client."""

from __future__ import annotations

import logging
import socket
import struct
import time
from collections.abc import Iterator

import psycopg
import pytest

from frontend.pgwire.backend import frame

from .fakes import BIG_ROWS, RawClient, ServerThread, error_fields

P, B, E = RawClient.parse, RawClient.bind, RawClient.execute


@pytest.fixture
def client(server: ServerThread) -> Iterator[RawClient]:
    c = RawClient(server.port)
    c.startup()
    yield c
    c.close()


def kinds(messages: list[tuple[bytes, bytes]]) -> list[bytes]:
    return [k for k, _ in messages]


def sqlstate(messages: list[tuple[bytes, bytes]]) -> str:
    return next(error_fields(body)["C"] for kind, body in messages if kind == b"E")


def assert_closed(c: RawClient) -> None:
    with pytest.raises((EOFError, ConnectionError)):
        c.recv()


def test_startup_messages(server: ServerThread) -> None:
    c = RawClient(server.port)
    c.send_startup(80877103)  # SSLRequest
    assert c.recv_bytes(1) == b"N"
    c.send_startup(80877104)  # GSSENCRequest
    assert c.recv_bytes(1) == b"N"
    msgs = c.startup(application_name="raw")
    assert kinds(msgs)[0] == b"R" and kinds(msgs)[-2:] == [b"K", b"Z"]
    statuses = dict(body.rstrip(b"\0").decode().split("\0") for kind, body in msgs if kind == b"S")
    assert statuses["application_name"] == "raw"
    assert statuses["DateStyle"] == "ISO, MDY" and statuses["integer_datetimes"] == "on"
    c.close()


def test_unsupported_protocol_version(server: ServerThread) -> None:
    c = RawClient(server.port)
    c.send_startup(2 << 16, {"user": "root"})
    kind, body = c.recv()
    assert kind == b"E" and error_fields(body)["S"] == "FATAL" and error_fields(body)["C"] == "08P01"
    assert_closed(c)


def test_newer_minor_version_is_negotiated_down(server: ServerThread) -> None:
    c = RawClient(server.port)
    c.send_startup((3 << 16) | 2, {"user": "root", "_pq_.extension": "x"})
    msgs = c.until(b"Z")
    kind, body = msgs[0]
    assert kind == b"v" and body == struct.pack("!ii", 0, 1) + b"_pq_.extension\0"
    assert "_pq_.extension" not in server.state.startups[0]
    c.close()


def test_describe_statement(client: RawClient) -> None:
    client.send(b"P", P("select $1::int8, $2", "s1", (0, 0)))
    client.send(b"D", b"Ss1\0")
    client.send(b"P", P("create table x (a int)", "s2"))
    client.send(b"D", b"Ss2\0")
    client.send(b"S")
    msgs = client.until(b"Z")
    assert kinds(msgs) == [b"1", b"t", b"T", b"1", b"t", b"n", b"Z"]
    assert msgs[1][1] == struct.pack("!hII", 2, 20, 25)
    assert msgs[4][1] == struct.pack("!h", 0)


def test_binary_result_format_in_row_description(client: RawClient) -> None:
    client.send(b"P", P("select 1"))
    client.send(b"B", B(result_formats=(1,)))
    client.send(b"D", b"P\0")
    client.send(b"E", E())
    client.send(b"S")
    msgs = client.until(b"Z")
    assert kinds(msgs) == [b"1", b"2", b"T", b"D", b"C", b"Z"]
    assert msgs[2][1].endswith(struct.pack("!h", 1))  # the field's format code
    assert msgs[3][1] == struct.pack("!hi", 1, 4) + struct.pack("!i", 1)


def test_max_rows_suspends_and_resumes(client: RawClient) -> None:
    client.send(b"P", P("select * from big"))
    client.send(b"B", B())
    client.send(b"D", b"P\0")
    client.send(b"E", E(max_rows=3))
    client.send(b"E", E(max_rows=0))
    client.send(b"S")
    msgs = client.until(b"Z")
    assert kinds(msgs[:6]) == [b"1", b"2", b"T", b"D", b"D", b"D"]
    assert msgs[6] == (b"s", b"")
    assert kinds(msgs[7:-2]) == [b"D"] * (BIG_ROWS - 3)
    assert msgs[-2] == (b"C", f"SELECT {BIG_ROWS - 3}\0".encode())
    assert msgs[7][1] == struct.pack("!hi", 1, 1) + b"3"


def test_error_discards_until_sync(server: ServerThread, client: RawClient) -> None:
    client.send(b"P", P("select * from missing"))
    client.send(b"B", B())
    client.send(b"D", b"P\0")
    client.send(b"E", E())
    client.send(b"P", P("create table never (a int)"))
    client.send(b"B", B())
    client.send(b"E", E())
    client.send(b"S")
    msgs = client.until(b"Z")
    assert kinds(msgs) == [b"1", b"2", b"E", b"Z"]
    assert sqlstate(msgs) == "42P01"
    assert "create table never (a int)" not in server.state.statements
    client.send(b"Q", b"select 1\0")
    assert kinds(client.until(b"Z")) == [b"T", b"D", b"C", b"Z"]


def test_empty_queries(client: RawClient) -> None:
    for sql in (b"", b" ; ", b"-- only a comment"):
        client.send(b"Q", sql + b"\0")
        assert client.until(b"Z") == [(b"I", b""), (b"Z", b"I")]
    client.send(b"P", P(""))
    client.send(b"B", B())
    client.send(b"D", b"P\0")
    client.send(b"E", E())
    client.send(b"S")
    assert kinds(client.until(b"Z")) == [b"1", b"2", b"n", b"I", b"Z"]


@pytest.mark.parametrize(("messages", "code"), [
    ([(b"B", B(statement="nope"))], "26000"),
    ([(b"P", P("select $1", "s1", (23,))), (b"B", B(statement="s1"))], "08P01"),  # 1 param, 0 given
    ([(b"E", E("nope"))], "34000"),
    ([(b"P", P("select 1", "s1")), (b"P", P("select 2", "s1"))], "42P05"),
    ([(b"P", P("select $1::int")), (b"B", B(params=(b"x",)))], "22P02"),
    ([(b"P", P("select $1::int")), (b"B", B(params=(b"\0",), param_formats=(1,)))], "22P03"),
    ([(b"P", P("select 1")), (b"B", B(result_formats=(0, 1)))], "08P01"),  # checked at Bind
])
def test_extended_errors(client: RawClient, messages: list[tuple[bytes, bytes]], code: str) -> None:
    for kind, body in messages:
        client.send(kind, body)
    client.send(b"D", b"P\0")
    client.send(b"E", E())
    client.send(b"S")
    msgs = client.until(b"Z")
    assert sqlstate(msgs) == code
    assert kinds(msgs).count(b"E") == 1


@pytest.mark.parametrize(("sql", "result_formats"), [
    ("select 1", (2,)),  # described with the code, 22023 at the row
    ("select 1, 2", (0, 2)),
    ("select 1", (0, 0)),  # two codes for one column: 08P01 at Bind, no BindComplete
    ("select 1 where false", (2,)),  # no row: no error
    ("select 1", (1,)),
    ("set search_path to public", (0, 0)),  # no row description: the codes are not counted
])
def test_result_format_codes_as_postgresql(server: ServerThread, oracle_dsn: str, sql: str,
                                            result_formats: tuple[int, ...]) -> None:
    """The messages (and the SQLSTATE) for result format codes that do not fit, as PostgreSQL's."""
    dbname = oracle_dsn.rsplit("=", 1)[1]
    answers = []
    for port, user, database in ((server.port, "root", "dev"), (5432, "postgres", dbname)):
        c = RawClient(port)
        c.startup(user=user, database=database)
        c.send(b"P", P(sql))
        c.send(b"B", B(result_formats=result_formats))
        c.send(b"D", b"P\0")
        c.send(b"E", E())
        c.send(b"S")
        msgs = c.until(b"Z")
        answers.append((kinds(msgs), sqlstate(msgs) if b"E" in kinds(msgs) else None))
        c.close()
    assert answers[0] == answers[1]


def test_close_and_unnamed_statement_lifetime(client: RawClient) -> None:
    client.send(b"P", P("select 1", "s1"))
    client.send(b"C", b"Ss1\0")
    client.send(b"C", b"Pnever-opened\0")
    client.send(b"S")
    assert kinds(client.until(b"Z")) == [b"1", b"3", b"3", b"Z"]
    client.send(b"B", B(statement="s1"))
    client.send(b"S")
    assert sqlstate(client.until(b"Z")) == "26000"
    # a simple Query destroys the unnamed statement
    client.send(b"P", P("select 1"))
    client.send(b"S")
    client.until(b"Z")
    client.send(b"Q", b"select 2\0")
    client.until(b"Z")
    client.send(b"B", B())
    client.send(b"S")
    assert sqlstate(client.until(b"Z")) == "26000"


def test_portals_live_until_sync_outside_a_block(client: RawClient) -> None:
    client.send(b"P", P("select 1", "s1"))
    client.send(b"B", B("p1", "s1"))
    client.send(b"S")
    client.until(b"Z")
    client.send(b"E", E("p1"))
    client.send(b"S")
    assert sqlstate(client.until(b"Z")) == "34000"
    client.send(b"Q", b"begin\0")
    assert client.until(b"Z")[-1] == (b"Z", b"T")
    client.send(b"B", B("p1", "s1"))
    client.send(b"S")
    client.until(b"Z")
    client.send(b"E", E("p1"))
    client.send(b"S")
    assert kinds(client.until(b"Z")) == [b"D", b"C", b"Z"]


def test_ready_for_query_status(client: RawClient) -> None:
    client.send(b"Q", b"select * from missing\0")
    assert client.until(b"Z")[-1] == (b"Z", b"I")
    client.send(b"Q", b"begin\0")
    assert client.until(b"Z")[-1] == (b"Z", b"T")
    client.send(b"Q", b"select * from missing\0")
    assert client.until(b"Z")[-1] == (b"Z", b"T")  # never "E": statements auto-commit
    client.send(b"Q", b"savepoint a; rollback to savepoint a\0")
    assert client.until(b"Z")[-1] == (b"Z", b"T")
    client.send(b"Q", b"commit\0")
    assert client.until(b"Z")[-1] == (b"Z", b"I")


def test_ignored_and_unsupported_messages(client: RawClient) -> None:
    client.send(b"d", b"stray copy data")
    client.send(b"c")
    client.send(b"F", b"\0\0\0\0")
    msgs = client.until(b"Z")
    assert kinds(msgs) == [b"E", b"Z"] and sqlstate(msgs) == "0A000"
    client.send(b"Q", b"select 1\0")
    assert kinds(client.until(b"Z")) == [b"T", b"D", b"C", b"Z"]


def test_invalid_message_type_is_fatal(client: RawClient) -> None:
    client.send(b"z")
    kind, body = client.recv()
    assert kind == b"E" and error_fields(body)["S"] == "FATAL" and error_fields(body)["C"] == "08P01"
    assert_closed(client)


def test_cancel_request_needs_the_secret(server: ServerThread) -> None:
    c = RawClient(server.port)
    pid, secret = next(struct.unpack("!II", body) for kind, body in c.startup() if kind == b"K")
    c.send(b"Q", b"select pg_sleep(30)\0")  # (a cancel that finds the connection idle is ignored)
    assert server.state.sleeping.wait(10)
    for key in (secret ^ 1, secret):
        raw = socket.create_connection(("127.0.0.1", server.port), timeout=10)
        raw.sendall(struct.pack("!iiII", 16, 80877102, pid, key))
        assert raw.recv(1) == b""  # the server answers nothing and closes
        raw.close()
        if key != secret:
            time.sleep(0.3)
            assert server.state.cancels == 0  # (the wrong key cancels nothing)
    assert sqlstate(c.until(b"Z")) == "57014"
    assert server.state.cancels == 1
    c.send(b"Q", b"select 1\0")
    assert kinds(c.until(b"Z")) == [b"T", b"D", b"C", b"Z"]
    c.close()


def test_truncated_cancel_request(server: ServerThread, client: RawClient) -> None:
    raw = socket.create_connection(("127.0.0.1", server.port), timeout=10)
    raw.sendall(struct.pack("!ii", 8, 80877102))
    kind = raw.recv(1)
    raw.close()
    assert kind == b"E"
    client.send(b"Q", b"select 1\0")
    assert kinds(client.until(b"Z")) == [b"T", b"D", b"C", b"Z"]


def test_garbage_connection_does_not_affect_others(server: ServerThread) -> None:
    with psycopg.connect(server.dsn(), autocommit=True) as conn:
        raw = socket.create_connection(("127.0.0.1", server.port), timeout=10)
        raw.sendall(struct.pack("!i", 3) + b"garbage")
        assert raw.recv(1024).startswith(b"E")
        raw.close()
        assert conn.execute("select 1").fetchone() == (1,)


def test_stop_sends_admin_shutdown(server: ServerThread, client: RawClient) -> None:
    server.stop()
    kind, body = client.recv()
    assert kind == b"E"
    assert error_fields(body)["C"] == "57P01" and error_fields(body)["S"] == "FATAL"
    assert_closed(client)
    assert server.state.closes == 1


def test_a_client_reset_during_a_statement_is_no_error(server: ServerThread, caplog: pytest.LogCaptureFixture) -> None:
    """A client that resets its connection while a statement runs (a pool's reset, a killed client)
    went away; nothing failed on the server, on either event loop (uvloop's transport raises on a write
    to a reset socket where the standard loop's drops it)."""
    c = RawClient(server.port)
    c.startup()
    c.send(b"Q", b"select pg_sleep(0.3)\0")
    assert server.state.sleeping.wait(5)
    c.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    c.close()  # (an RST: the statement's answer has nowhere to go)
    deadline = time.monotonic() + 10
    while server.state.closes == 0:
        assert time.monotonic() < deadline, "the connection was not closed"
        time.sleep(0.02)
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []


@pytest.mark.parametrize(("sql", "params", "result_formats"), [
    ("select $1::int4", (struct.pack("!i", 7),), (1,)),
    ("select $1", (b"text",), ()),
    ("select * from big", (), ()),
    ("select * from stream 3", (), ()),
    ("create table x (a int)", (), ()),
    ("select * from missing", (), ()),
    ("select * from failing_stream", (), ()),
    ("begin", (), ()),
    ("copy t from stdin", (), ()),
])
def test_a_pipelined_execution_answers_as_its_messages_one_by_one(server: ServerThread, sql: str, params: tuple,
                                                                  result_formats: tuple,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Bind + Describe P + Execute (+ Sync) in one packet (a prepared statement's execution, as psycopg
    sends it) is answered by `ExtendedQuery.cycle` with the bytes the messages get one by one (here:
    the same messages to a named portal, which the cycle does not take)."""
    from frontend.pgwire.extended import CYCLE_TAIL, ExtendedQuery

    cycles = []
    real_cycle = ExtendedQuery.cycle

    async def counting_cycle(self: ExtendedQuery, bind) -> None:
        cycles.append(bind.statement)
        await real_cycle(self, bind)

    monkeypatch.setattr(ExtendedQuery, "cycle", counting_cycle)
    answers = []
    for portal in ("", "p"):
        c = RawClient(server.port)
        c.startup()
        c.sock.sendall(frame(b"P", P(sql, "s")) + frame(b"S"))
        assert kinds(c.until(b"Z")) == [b"1", b"Z"]
        bind = frame(b"B", B(portal, "s", params, (1,) * len(params) if result_formats else (), result_formats))
        if portal:
            tail = frame(b"D", b"P" + portal.encode() + b"\0") + frame(b"E", E(portal)) + frame(b"S")
        else:
            tail = CYCLE_TAIL + frame(b"S")
        if sql.startswith("copy"):  # (then the data and another Sync, as libpq sends an extended COPY's)
            tail += frame(b"d", b"abc") + frame(b"c") + frame(b"S")
        c.sock.sendall(bind + tail)
        answers.append(c.until(b"Z"))
        c.sock.sendall(frame(b"B", B("", "missing")) + CYCLE_TAIL + frame(b"S"))  # an error in the Bind: skipped to the Sync
        answers.append(c.until(b"Z"))
        c.close()
    assert answers[0] == answers[2] and answers[1] == answers[3]
    if sql.startswith("copy"):
        assert kinds(answers[0]) == [b"2", b"n", b"G", b"C", b"Z"] and answers[0][3][1] == b"COPY 3\0"
    assert kinds(answers[1]) == [b"E", b"Z"]
    assert cycles == ["s", "missing", "missing"]  # (the named portal's connection: its bad Bind only)
