"""An execution of a prepared statement answered as it arrives (`Connection._answer_now`): the same
bytes as the message loop's answer, and only where nothing else may come first."""

from __future__ import annotations

import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest

from frontend.pgwire.api import StatementResult
from frontend.pgwire.backend import frame
from frontend.pgwire.extended import CYCLE_TAIL
from risingspark.errors import InternalError

from .fakes import BIG_ROWS, FakeSession, FakeState, RawClient, ServerThread, _norm

P, B = RawClient.parse, RawClient.bind


class AnsweringSession(FakeSession):
    """A fake session that also answers at once (`PgSession.answer_now`) every statement its `_run`
    answers without waiting, errors included. An INSERT's result is `ready` when the test says
    (`release_inserts`, in the server's loop), with the error its `_run` raises if it does (as a
    durable INSERT's sync fails after its rows were queued)."""

    asked = 0  # (calls of answer_now, every session's)
    waiting: list[Callable[[], None]] = []  # (inserts answered at once, not yet ready: every session's)

    def answer_now(self, sql: str, param_oids: list[int], params: list[Any]) -> StatementResult | None:
        AnsweringSession.asked += 1
        if _norm(sql).startswith(("select pg_sleep", "copy")):
            return None
        if _norm(sql).startswith("insert"):
            error: BaseException | None = None
            try:  # (counted in `statements` either way, as the rows are queued before the sync)
                self._answer(sql, param_oids, params)
            except InternalError as e:
                error = e

            def ready(then: Callable[[BaseException | None], None]) -> None:
                AnsweringSession.waiting.append(lambda: then(error))

            return StatementResult("INSERT 0 1", ready=ready)
        return self._answer(sql, param_oids, params)

    def _answer(self, sql: str, param_oids: list[int], params: list[Any]) -> StatementResult | None:
        run = self._run(sql, param_oids, params)
        try:
            run.send(None)
        except StopIteration as done:
            return done.value
        run.close()
        return None


def release_inserts(server: ServerThread) -> None:
    """Make every INSERT answered at once ready, in the server's loop."""
    waiting, AnsweringSession.waiting = AnsweringSession.waiting, []
    done = threading.Event()

    def run() -> None:
        for then in waiting:
            then()
        done.set()

    server.loop.call_soon_threadsafe(run)
    assert done.wait(10)


@pytest.fixture(params=["uvloop", "asyncio"])
def servers(request: pytest.FixtureRequest) -> Iterator[tuple[ServerThread, ServerThread]]:
    """A server whose sessions answer at once, and one whose sessions do not (the message loop's
    answers, the reference)."""
    with ServerThread(event_loop=request.param, session=AnsweringSession) as answering, \
            ServerThread(event_loop=request.param) as plain:
        yield answering, plain


def answered_now(server: ServerThread) -> int:
    return sum(c.answered_now for c in list(server.server._connections))  # noqa: SLF001


def kinds(messages: list[tuple[bytes, bytes]]) -> list[bytes]:
    return [k for k, _ in messages]


def prepared(server: ServerThread, sql: str) -> RawClient:
    c = RawClient(server.port)
    c.startup()
    c.sock.sendall(frame(b"P", P(sql, "s")) + frame(b"S"))
    assert kinds(c.until(b"Z")) == [b"1", b"Z"]
    return c


# (statement, Bind parameters, their formats, result formats, how many of two executions are answered at
# once: a statement with parameters of types not given at Parse only once the first Bind described it)
EXECUTIONS = [
    ("select 1", (), (), (), 2),
    ("select $1::int4", (struct.pack("!i", 7),), (1,), (1,), 1),
    ("select $1", (b"text",), (), (), 1),
    ("select $1::int4", (b"12",), (), (0,), 1),
    ("select $1::int4", (None,), (), (), 1),
    ("select * from t", (), (), (), 2),  # (an Arrow table of every type)
    ("select * from big", (), (), (), 0),  # (more rows than are answered at once)
    ("select * from stream 2", (), (), (), 0),  # (rows produced as they are sent)
    ("notice", (), (), (), 0),  # (a notice goes before the result)
    ("begin", (), (), (), 0),  # (it opens a transaction block)
    ("create table x (a int)", (), (), (), 0),
    ("select * from missing", (), (), (), 0),  # (an error: the loop reports it)
    ("select $1::int4", (b"x",), (1,), (), 0),  # (a parameter that does not decode: the loop's 22P03)
    ("select 1", (), (), (0, 0), 0),  # (two result formats for one column: the loop's 08P01)
]


@pytest.mark.parametrize(("sql", "params", "param_formats", "result_formats", "at_once"), EXECUTIONS)
def test_an_execution_is_answered_at_once_with_the_loops_bytes(servers, sql: str, params: tuple,
                                                                param_formats: tuple, result_formats: tuple,
                                                                at_once: int) -> None:
    answering, plain = servers
    answers, counts = [], []
    for server in (answering, plain):
        c = prepared(server, sql)
        for _ in range(2):  # (the second: after the first left its state)
            c.sock.sendall(frame(b"B", B("", "s", params, param_formats, result_formats)) + CYCLE_TAIL + frame(b"S"))
            answers.append(c.until(b"Z"))
        c.sock.sendall(frame(b"Q", b"select 2\0"))  # (the loop still serves what follows)
        answers.append(c.until(b"Z"))
        counts.append(answered_now(server))
        c.close()
    assert answers[:3] == answers[3:]
    assert answers[0] == answers[1] or sql == "begin"
    assert counts == [at_once, 0]
    if sql == "select * from big":
        assert sum(k == b"D" for k in kinds(answers[0])) == BIG_ROWS


def test_not_at_once_in_a_transaction_block(servers) -> None:
    answering, _ = servers
    c = prepared(answering, "select $1::int4")
    c.sock.sendall(frame(b"Q", b"begin\0"))
    assert c.until(b"Z")[-1] == (b"Z", b"T")
    c.sock.sendall(frame(b"B", B("", "s", (b"5",))) + CYCLE_TAIL + frame(b"S"))
    got = c.until(b"Z")
    assert kinds(got) == [b"2", b"T", b"D", b"C", b"Z"] and got[-1] == (b"Z", b"T")
    c.sock.sendall(frame(b"Q", b"commit\0"))
    c.until(b"Z")
    c.sock.sendall(frame(b"B", B("", "s", (b"6",))) + CYCLE_TAIL + frame(b"S"))
    assert c.until(b"Z")[-1] == (b"Z", b"I")
    assert answered_now(answering) == 1  # (the one after COMMIT)
    c.close()


@pytest.mark.parametrize("result_formats", [(0, 0), (2,), (0, 2)])
def test_result_formats_that_do_not_fit_leave_the_statement_to_the_loop(servers, result_formats: tuple) -> None:
    """The loop reports them; the session is not asked first (the statement would run twice)."""
    answering, plain = servers
    answers = []
    for server in (answering, plain):
        c = prepared(server, "select 1")
        before = AnsweringSession.asked
        c.sock.sendall(frame(b"B", B("", "s", (), (), result_formats)) + CYCLE_TAIL + frame(b"S"))
        answers.append(c.until(b"Z"))
        assert AnsweringSession.asked == before
        c.close()
    assert answers[0] == answers[1]


def test_not_at_once_once_shutdown_was_asked(servers) -> None:
    """An execution that arrives after `shutdown` and before the cancelled task ran gets only the
    FATAL, as from the loop."""
    answering, _ = servers
    c = prepared(answering, "select 1")
    conn = next(iter(answering.server._connections))  # noqa: SLF001
    data = frame(b"B", B("", "s")) + CYCLE_TAIL + frame(b"S")

    def shutdown_then_deliver() -> None:  # (in the server's loop: nothing runs between the two)
        conn.shutdown()
        conn.writer.transport.get_protocol().data_received(data)

    answering.loop.call_soon_threadsafe(shutdown_then_deliver)
    got = c.until(b"E")
    assert kinds(got) == [b"E"] and b"57P01" in got[0][1]
    assert answered_now(answering) == 0
    c.close()


def test_after_an_error_what_follows_is_skipped_to_the_sync(servers) -> None:
    """An error in the extended flow discards the messages up to the Sync: an execution that arrives
    then is not answered (its error waits unsent in the connection's buffer until the Sync)."""
    answering, plain = servers
    answers = []
    for server in (answering, plain):
        c = prepared(server, "select 1")
        c.sock.sendall(frame(b"B", B("", "missing")))  # (no such statement; no Sync yet)
        time.sleep(0.2)
        c.sock.sendall(frame(b"B", B("", "s")) + CYCLE_TAIL + frame(b"S"))
        answers.append(c.until(b"Z"))
        assert answered_now(server) == 0
        c.close()
    assert answers[0] == answers[1] and kinds(answers[0]) == [b"E", b"Z"]


def test_an_execution_in_two_packets_is_the_loops(servers) -> None:
    answering, _ = servers
    c = prepared(answering, "select 1")
    data = frame(b"B", B("", "s")) + CYCLE_TAIL + frame(b"S")
    c.sock.sendall(data[:7])
    time.sleep(0.2)
    c.sock.sendall(data[7:])
    assert kinds(c.until(b"Z")) == [b"2", b"T", b"D", b"C", b"Z"]
    c.sock.sendall(data + data)  # (two executions in one packet: the loop's too)
    assert kinds(c.until(b"Z")) == [b"2", b"T", b"D", b"C", b"Z"]
    assert kinds(c.until(b"Z")) == [b"2", b"T", b"D", b"C", b"Z"]
    assert answered_now(answering) == 0
    c.close()


def test_psycopg_prepared_statements_are_answered_at_once(servers) -> None:
    answering, _ = servers
    with psycopg.connect(f"host=127.0.0.1 port={answering.port} user=root dbname=dev", autocommit=True) as conn:
        for i in range(20):
            assert conn.execute("select %s::int4", [i], prepare=True).fetchone() == (i,)
            assert conn.execute("select 1", prepare=True).fetchone() == (1,)
        assert answered_now(answering) >= 30  # (psycopg prepares a statement once, then executes it)


def test_a_session_without_the_hook_is_served_by_the_loop() -> None:
    state = FakeState()
    assert not hasattr(FakeSession(state), "answer_now")


def _nothing_arrives(c: RawClient) -> bool:
    c.sock.settimeout(0.3)
    try:
        return c.sock.recv(1, socket.MSG_PEEK) == b""
    except TimeoutError:
        return True
    finally:
        c.sock.settimeout(None)


@pytest.mark.parametrize("table", ["t", "t_failing"])
def test_an_insert_is_answered_once_ready_and_what_follows_waits_for_it(servers, table: str) -> None:
    """A durable INSERT answered at once is sent once its rows are durable, with the loop's bytes (the
    loop's error when its sync failed); an execution pipelined behind it is answered after it, and
    each statement runs once."""
    answering, plain = servers
    answers, statements, counts = [], [], []
    for server in (answering, plain):
        c = RawClient(server.port)
        c.startup()  # (parameter types given at Parse: answered at once from the first execution)
        c.sock.sendall(frame(b"P", P(f"insert into {table} values ($1)", "s", [23]))
                       + frame(b"P", P("select $1::int4", "q", [23])) + frame(b"S"))
        c.until(b"Z")
        before = len(server.state.statements)
        c.sock.sendall(frame(b"B", B("", "s", (b"1",))) + CYCLE_TAIL + frame(b"S"))
        if server is answering:
            _wait_until_held()
            assert _nothing_arrives(c)  # (not durable yet)
            c.sock.sendall(frame(b"B", B("", "q", (b"2",))) + CYCLE_TAIL + frame(b"S"))
            assert _nothing_arrives(c)  # (behind the INSERT)
            release_inserts(server)
        else:
            c.sock.sendall(frame(b"B", B("", "q", (b"2",))) + CYCLE_TAIL + frame(b"S"))
        answers.append([c.until(b"Z"), c.until(b"Z")])
        statements.append(server.state.statements[before:])
        counts.append(answered_now(server))
        c.close()
    assert answers[0] == answers[1]
    assert kinds(answers[0][0]) == ([b"2", b"n", b"C", b"Z"] if table == "t" else [b"2", b"E", b"Z"])
    assert statements[0] == statements[1] == [f"insert into {table} values ($1)", "select $1::int4"]
    assert counts == [2, 0]


def test_an_insert_waiting_to_be_answered_gets_only_the_fatal_at_shutdown(servers) -> None:
    answering, _ = servers
    c = prepared(answering, "insert into t values (1)")
    c.sock.sendall(frame(b"B", B("", "s")) + CYCLE_TAIL + frame(b"S"))
    _wait_until_held()
    conn = next(iter(answering.server._connections))  # noqa: SLF001
    waiting, AnsweringSession.waiting = AnsweringSession.waiting, []

    def shutdown_then_ready() -> None:  # (in the server's loop: the answer is ready before the task ends)
        conn.shutdown()
        for then in waiting:
            then()

    answering.loop.call_soon_threadsafe(shutdown_then_ready)
    got = c.until(b"E")
    assert kinds(got) == [b"E"] and b"57P01" in got[0][1]
    assert c.sock.recv(1) == b""  # (nothing more is sent)
    c.close()


def test_a_client_that_ends_its_input_behind_a_waiting_insert_gets_every_answer(servers) -> None:
    """What the client sends behind an INSERT waiting to be answered, its end of input included, is
    taken once the answer is sent, as the loop takes it."""
    answering, plain = servers
    answers, statements = [], []
    for server in (answering, plain):
        c = prepared(server, "insert into t values (1)")
        before = len(server.state.statements)
        c.sock.sendall(frame(b"B", B("", "s")) + CYCLE_TAIL + frame(b"S"))
        if server is answering:
            _wait_until_held()
        c.sock.sendall(frame(b"B", B("", "s")) + CYCLE_TAIL + frame(b"S"))
        c.sock.shutdown(socket.SHUT_WR)
        if server is answering:
            time.sleep(0.2)
            release_inserts(server)
            _wait_until_held()  # (the second, taken once the first was answered)
            release_inserts(server)
        answers.append([c.until(b"Z"), c.until(b"Z")])
        statements.append(server.state.statements[before:])
        c.close()
    assert answers[0] == answers[1]
    assert statements[0] == statements[1] == ["insert into t values (1)"] * 2


def _wait_until_held() -> None:
    """Until an INSERT answered at once waits to be ready (`AnsweringSession.waiting`)."""
    deadline = time.monotonic() + 10
    while not AnsweringSession.waiting:
        assert time.monotonic() < deadline, "no INSERT was answered at once"
        time.sleep(0.01)
