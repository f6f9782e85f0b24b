"""Results produced while they are sent (`frontend.pgwire.row_stream`): the stream itself, and the
wire server sending one to real clients (psycopg, and a raw client for portals with a row limit and
for a client that stops reading)."""

from __future__ import annotations

import struct
import threading
import time
from collections.abc import Iterator

import psycopg
import pyarrow as pa
import pytest
from psycopg import errors

from frontend.pgwire.row_stream import RowStream
from risingspark.errors import QueryCanceled

from .fakes import STREAM_BATCH, RawClient, ServerThread

P, B, E = RawClient.parse, RawClient.bind, RawClient.execute


def numbers(*sizes: int) -> Iterator[pa.Table]:
    start = 0
    for n in sizes:
        yield pa.table({"x": pa.array(range(start, start + n), pa.int64())})
        start += n


def values(table: pa.Table | None) -> list[int]:
    return [] if table is None else table.column("x").to_pylist()


def test_take_gathers_over_batches_and_closes_once_at_the_end():
    closed = []
    stream = RowStream(pa.schema([("x", pa.int64())]), numbers(3, 0, 4, 2), lambda: closed.append(1))
    assert values(stream.take(5)) == [0, 1, 2, 3, 4]  # (three rows of one batch, two of the next)
    assert stream.more() and not stream.closed and stream.taken == 5
    assert values(stream.take(100)) == [5, 6, 7, 8]
    assert stream.closed and closed == [1]  # (the producer is let go as soon as it has no more)
    assert stream.take(1) is None and not stream.more() and closed == [1]
    later = []
    stream.on_close(lambda: later.append(1))  # (given after it closed: runs at once)
    assert later == [1]


def test_an_error_of_the_producer_closes_the_stream_and_is_translated():
    def failing() -> Iterator[pa.Table]:
        yield from numbers(2)
        raise QueryCanceled("canceling statement due to user request")

    closed = []
    stream = RowStream(pa.schema([("x", pa.int64())]), failing(), lambda: closed.append(1))
    stream.translate = lambda e: QueryCanceled("canceling statement due to statement timeout")
    assert values(stream.take(2)) == [0, 1]
    with pytest.raises(QueryCanceled, match="statement timeout"):
        stream.take(2)
    assert closed == [1] and stream.take(1) is None


def test_close_during_a_take_waits_for_it():
    release, entered = threading.Event(), threading.Event()

    def slow() -> Iterator[pa.Table]:
        entered.set()
        release.wait(10)
        yield from numbers(3, 3)

    closed = []
    stream = RowStream(pa.schema([("x", pa.int64())]), slow(), lambda: closed.append(1))
    got: list[pa.Table | None] = []
    taker = threading.Thread(target=lambda: got.append(stream.take(2)))
    taker.start()
    assert entered.wait(10)
    stream.close()  # (from another thread while the producer runs: only marks it)
    assert closed == []
    release.set()
    taker.join(10)
    assert values(got[0]) == [0, 1] and closed == [1] and stream.closed
    assert stream.take(2) is None


def test_psycopg_reads_a_streamed_result_whole(server: ServerThread):
    with psycopg.connect(server.dsn(), autocommit=True) as conn:
        for binary in (False, True):
            cur = conn.cursor(binary=binary)
            rows = cur.execute("select * from stream 30").fetchall()
            assert [r[0] for r in rows] == list(range(30 * STREAM_BATCH))
            assert cur.rowcount == 30 * STREAM_BATCH  # (the tag counts what was sent)
        assert server.state.streams_closed == 2
        assert conn.execute("select 1").fetchone() == (1,)


def test_an_error_while_rows_are_sent_reaches_the_client(server: ServerThread):
    with psycopg.connect(server.dsn(), autocommit=True) as conn:
        with pytest.raises(errors.DivisionByZero):
            conn.execute("select * from failing_stream 10").fetchall()
        assert server.state.streams_closed == 1
        assert conn.execute("select 1").fetchone() == (1,)


def test_a_portal_with_a_row_limit_takes_what_it_sends(server: ServerThread):
    c = RawClient(server.port)
    c.startup()
    c.send(b"P", P("select * from stream 50"))
    c.send(b"B", B())
    c.send(b"E", E(max_rows=10))
    c.send(b"H")  # Flush: the suspended portal's rows now, without ending the cycle
    msgs = [c.recv() for _ in range(2 + 10 + 1)]
    assert [k for k, _ in msgs] == [b"1", b"2"] + [b"D"] * 10 + [b"s"]
    assert msgs[2][1] == struct.pack("!hi", 1, 1) + b"0"
    assert server.state.produced <= 2  # (the batch it sent from, and one read ahead to know there is more)
    c.send(b"E", E(max_rows=STREAM_BATCH))
    c.send(b"E", E(max_rows=0))
    c.send(b"S")
    msgs = c.until(b"Z")
    data = [k for k, _ in msgs].count(b"D")
    assert data == 50 * STREAM_BATCH - 10 and msgs[STREAM_BATCH] == (b"s", b"")
    assert msgs[-2] == (b"C", f"SELECT {50 * STREAM_BATCH - 10 - STREAM_BATCH}\0".encode())
    assert server.state.streams_closed == 1
    # a portal left suspended is closed with its cycle (Sync outside a transaction block)
    c.send(b"P", P("select * from stream 50"))
    c.send(b"B", B())
    c.send(b"E", E(max_rows=1))
    c.send(b"S")
    assert [k for k, _ in c.until(b"Z")] == [b"1", b"2", b"D", b"s", b"Z"]
    assert server.state.streams_closed == 2
    c.close()


def settled(read, timeout: float = 30.0) -> int:
    """The value `read` returns once it stops changing for a second."""
    last, since, deadline = read(), time.monotonic(), time.monotonic() + timeout
    while time.monotonic() < deadline:
        time.sleep(0.1)
        now = read()
        if now != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= 1.0:
            return now
    raise AssertionError("the producer never stopped")


def test_a_client_that_stops_reading_stops_the_producer(server: ServerThread):
    total = 4000  # 4M rows: ~70 MB of DataRows, far more than the socket buffers hold
    c = RawClient(server.port)
    c.startup()
    c.send(b"Q", f"select * from stream {total}\0".encode())
    produced = settled(lambda: server.state.produced)
    assert 0 < produced < total // 4
    c.close()  # the client goes away mid-result: the stream is closed, its producer let go
    deadline = time.monotonic() + 10
    while server.state.streams_closed == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.state.streams_closed == 1 and server.state.produced < total // 4



def portal_in_a_block(c: RawClient, sql: str, max_rows: int) -> list[tuple[bytes, bytes]]:
    """BEGIN, then portal "cur" of `sql` executed with `max_rows`, through Sync: what came back."""
    c.send(b"Q", b"begin\0")
    c.until(b"Z")
    c.send(b"P", P(sql))
    c.send(b"B", B(portal="cur"))
    c.send(b"E", E(portal="cur", max_rows=max_rows))
    c.send(b"S")
    return c.until(b"Z")


def assert_portal_gone(c: RawClient) -> None:
    c.send(b"E", E(portal="cur", max_rows=5))
    c.send(b"S")
    msgs = c.until(b"Z")
    assert [k for k, _ in msgs] == [b"E", b"Z"] and b"34000" in msgs[0][1]


def test_a_suspended_portal_ends_with_its_transaction(server: ServerThread):
    c = RawClient(server.port)
    c.startup()
    msgs = portal_in_a_block(c, "select * from stream 50", max_rows=5)
    assert [k for k, _ in msgs] == [b"1", b"2"] + [b"D"] * 5 + [b"s", b"Z"]
    assert server.state.streams_closed == 0  # (a portal lives on in its transaction block)
    c.send(b"Q", b"commit\0")
    c.until(b"Z")
    assert server.state.streams_closed == 1  # (and is closed with it, its producer let go)
    assert_portal_gone(c)
    c.close()


def test_a_portal_whose_rows_failed_cannot_be_executed_again(server: ServerThread):
    c = RawClient(server.port)
    c.startup()
    msgs = portal_in_a_block(c, "select * from failing_stream 10", max_rows=0)
    assert [k for k, _ in msgs][-2:] == [b"E", b"Z"] and b"22012" in msgs[-2][1]
    assert_portal_gone(c)  # (not an empty success: the portal is gone with its rows)
    c.close()


def test_a_cancel_while_idle_leaves_a_suspended_portal_alone(server: ServerThread):
    # (PostgreSQL ignores a cancel that finds the backend waiting for a command)
    c = RawClient(server.port)
    pid, secret = next(struct.unpack("!ii", body) for kind, body in c.startup() if kind == b"K")
    portal_in_a_block(c, "select * from stream 50", max_rows=5)
    canceller = RawClient(server.port)
    canceller.sock.sendall(struct.pack("!iiii", 16, 80877102, pid, secret))  # CancelRequest
    canceller.close()
    time.sleep(0.5)
    assert server.state.cancels == 0
    c.send(b"E", E(portal="cur", max_rows=0))
    c.send(b"S")
    msgs = c.until(b"Z")
    assert [k for k, _ in msgs].count(b"D") == 50 * STREAM_BATCH - 5 and msgs[-2][0] == b"C"
    c.close()
