"""Wire servers of one process group (`frontend.pgwire.process_group`): two servers of a group, here
in one process, each on an event loop of its own; real sockets, fake sessions."""

from __future__ import annotations

import socket
import struct
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from frontend.pgwire.process_group import (
    DRAIN_REQUEST,
    KILL_REQUEST,
    SESSIONS_REQUEST,
    ProcessGroup,
    SharedConnectionSlots,
)
from meta.child_process import free_port
from risingspark.errors import InternalError, RisingSparkError, UndefinedObject

from .fakes import RawClient, ServerThread, error_fields


@pytest.fixture(params=["uvloop", "asyncio"])
def pair(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[ServerThread, ServerThread]]:
    """Processes 0 and 1 of a group, each on a port of its own (so a test picks which one a
    connection reaches)."""
    with ServerThread(event_loop=request.param, group=ProcessGroup(0, 2, tmp_path), max_connections=3) as a, \
            ServerThread(event_loop=request.param, group=ProcessGroup(1, 2, tmp_path), max_connections=3) as b:
        yield a, b


def test_connection_ids_name_their_process(tmp_path: Path) -> None:
    groups = [ProcessGroup(i, 3, tmp_path) for i in range(3)]
    ids = {g.index: [next(p) for p in [g.pids()] for _ in range(50)] for g in groups}
    seen = [pid for pids in ids.values() for pid in pids]
    assert len(set(seen)) == len(seen) and min(seen) == 1
    for index, pids in ids.items():
        assert {groups[0].owner(pid) for pid in pids} == {index}
    with pytest.raises(ValueError, match="not one of 2"):
        ProcessGroup(2, 2, tmp_path)


def _cancel(port: int, pid: int, secret: int) -> None:
    raw = socket.create_connection(("127.0.0.1", port), timeout=10)
    raw.sendall(struct.pack("!iiII", 16, 80877102, pid, secret))
    assert raw.recv(1) == b""  # (nothing is answered; the server closes)
    raw.close()


def test_a_cancel_request_reaching_another_process_is_passed_on(pair: tuple[ServerThread, ServerThread]) -> None:
    a, b = pair
    c = RawClient(a.port)
    pid, secret = next(struct.unpack("!II", body) for kind, body in c.startup() if kind == b"K")
    assert a.server._group.owner(pid) == 0  # noqa: SLF001
    c.send(b"Q", b"select pg_sleep(30)\0")
    assert a.state.sleeping.wait(10)
    _cancel(b.port, pid, secret ^ 1)  # (the owner checks the secret: a wrong one cancels nothing)
    time.sleep(0.3)
    assert a.state.cancels == 0
    _cancel(b.port, pid, secret)
    msgs = c.until(b"Z")
    assert next(error_fields(body)["C"] for kind, body in msgs if kind == b"E") == "57014"
    assert a.state.cancels == 1 and b.state.cancels == 0
    c.close()


def test_max_connections_counts_the_whole_group(pair: tuple[ServerThread, ServerThread]) -> None:
    a, b = pair
    first = [psycopg.connect(a.dsn(), autocommit=True) for _ in range(2)]
    third = psycopg.connect(b.dsn(), autocommit=True)
    try:
        for server in (a, b):
            with pytest.raises(psycopg.OperationalError, match="too many clients"):
                psycopg.connect(server.dsn(), autocommit=True)
        first.pop().close()
        deadline = time.monotonic() + 10
        while True:  # (the slot is given back once the server saw the connection end)
            try:
                psycopg.connect(b.dsn(), autocommit=True).close()
                break
            except psycopg.OperationalError:
                assert time.monotonic() < deadline
                time.sleep(0.05)
    finally:
        for conn in [*first, third]:
            conn.close()


def test_the_group_s_requests_are_answered_off_the_event_loop_with_their_errors(tmp_path: Path) -> None:
    asked = []

    def answer(code: int, payload: Any) -> Any:
        asked.append((code, payload, threading.current_thread().name))
        if code == KILL_REQUEST:
            raise UndefinedObject(f"no session with process id {payload['pid']}")
        if code == DRAIN_REQUEST:
            raise RuntimeError("meta is down")
        return [{"pid": 2, "user": "root"}]

    with ServerThread(group=ProcessGroup(1, 2, tmp_path)) as other:
        other.server._answer = answer  # noqa: SLF001 - (what `frontend.main` gives it: `GroupMember.answer`)
        asker = ProcessGroup(0, 2, tmp_path)
        assert asker.others() == [1]
        assert asker.ask(1, SESSIONS_REQUEST) == [{"pid": 2, "user": "root"}]
        with pytest.raises(UndefinedObject, match="no session with process id 4"):
            asker.ask(1, KILL_REQUEST, {"pid": 4})
        with pytest.raises(RisingSparkError, match="meta is down") as err:
            asker.ask(1, DRAIN_REQUEST)
        assert err.value.sqlstate == "XX000"
        assert [(code, payload) for code, payload, _ in asked] == [
            (SESSIONS_REQUEST, None), (KILL_REQUEST, {"pid": 4}), (DRAIN_REQUEST, None)]
        assert all(thread != "pgwire-test-server" for _, _, thread in asked)  # (not on the event loop)
    with pytest.raises(InternalError, match="process 1 of this frontend .* did not answer"):
        asker.ask(1, SESSIONS_REQUEST)


def test_connection_counts_of_a_restarted_process_start_at_zero(tmp_path: Path) -> None:
    a = SharedConnectionSlots(2, tmp_path / "connections", 0, 2)
    b = SharedConnectionSlots(2, tmp_path / "connections", 1, 2)
    assert a.take(1) and b.take(2)
    assert not a.take(3) and not b.take(4)
    assert a.group_total() == 2
    # process 1 dies without giving back its slot, and starts again
    b2 = SharedConnectionSlots(2, tmp_path / "connections", 1, 2)
    assert b2.take(6) and a.group_total() == 2
    a.give_back(1)
    a.give_back(1)  # (given back once)
    assert b2.group_total() == 1
    unlimited = SharedConnectionSlots(0, tmp_path / "connections", 0, 2)
    assert all(unlimited.take(pid) for pid in range(1, 100, 2))
    assert b2.group_total() == 51
    for s in (a, b, b2, unlimited):
        s.close()


def test_two_processes_share_one_port(tmp_path: Path) -> None:
    port = free_port("127.0.0.1")
    with ServerThread(group=ProcessGroup(0, 2, tmp_path), port=port) as a, \
            ServerThread(group=ProcessGroup(1, 2, tmp_path), port=port) as b:
        conns = [psycopg.connect(a.dsn(), autocommit=True) for _ in range(24)]
        try:
            owners = {(c.info.backend_pid - 1) % 2 for c in conns}
            assert len(a.state.startups) + len(b.state.startups) == 24
            # (the kernel hashes each connection to a socket: all 24 on one has odds of 2^-23)
            assert owners == {0, 1} and a.state.startups and b.state.startups
            assert all(c.execute("select 1").fetchone() == (1,) for c in conns)
        finally:
            for c in conns:
                c.close()


def test_a_flush_asks_every_other_process_at_once(tmp_path: Path) -> None:
    from frontend.group_member import GroupMember

    both = threading.Barrier(2, timeout=10)  # (asked one after the other, the first would wait in vain)

    def answer(code: int, payload: Any) -> Any:
        assert code == DRAIN_REQUEST
        both.wait()

    with ServerThread(group=ProcessGroup(1, 3, tmp_path)) as one, ServerThread(group=ProcessGroup(2, 3, tmp_path)) as two:
        one.server._answer = two.server._answer = answer  # noqa: SLF001
        GroupMember(None, ProcessGroup(0, 3, tmp_path)).drain_others()  # type: ignore[arg-type]
    with pytest.raises(InternalError, match="FLUSH: process 1 of this frontend could not record its statements"):
        GroupMember(None, ProcessGroup(0, 3, tmp_path)).drain_others()  # type: ignore[arg-type]  # (both gone)
