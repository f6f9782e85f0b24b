"""``statement_timeout`` in a session (over an in-memory catalog, DuckDB for batch queries): a long
query is cancelled with PostgreSQL's error, and neither a timeout nor a timer firing late touches the
statements after it."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
from catalog_session import make_session

from risingspark.errors import QueryCanceled

LONG = "SELECT count(*) FROM generate_series(1, 100000) a, generate_series(1, 100000) b WHERE a <> b"


def test_a_long_query_times_out_and_the_session_goes_on():
    session = make_session()

    async def run() -> None:
        await session.execute("SET statement_timeout = '200ms'", [], [])
        started = time.monotonic()
        with pytest.raises(QueryCanceled, match="canceling statement due to statement timeout"):
            await session.execute(LONG, [], [])
        assert time.monotonic() - started < 20
        # the cancel of the timed-out statement does not outlive it
        assert (await session.execute("SELECT 1", [], [])).rows.to_pylist() == [{"?column?": 1}]
        oids, columns = await session.describe("SELECT 1 AS x", [])
        assert [c.name for c in columns or []] == ["x"]

    asyncio.run(run())


def test_a_timer_firing_late_cancels_nothing():
    session = make_session()
    seq = session._begin_statement()
    session._begin_statement()  # the next statement started before the old timer fired
    assert not session._time_out(seq)
    assert not session.cancel_event.is_set()


def test_a_flush_waiting_for_its_checkpoint_times_out_and_is_cancelled():
    session = make_session()
    release, flushes = threading.Event(), []

    def slow_flush(timeout=None) -> int:  # a checkpoint that takes long (a long epoch, a stall)
        flushes.append(True)
        release.wait(30)
        return 1

    session.frontend.meta.flush = slow_flush

    async def run() -> None:
        await session.execute("SET statement_timeout = '200ms'", [], [])
        started = time.monotonic()
        with pytest.raises(QueryCanceled, match="canceling statement due to statement timeout"):
            await session.execute("FLUSH", [], [])
        assert time.monotonic() - started < 10
        await session.execute("SET statement_timeout = 0", [], [])
        # a client's cancel request stops it too
        task = asyncio.ensure_future(session.execute("FLUSH", [], []))
        while len(flushes) < 2:
            await asyncio.sleep(0.01)
        session.cancel_event.set()
        with pytest.raises(QueryCanceled, match="canceling statement due to user request"):
            await task
        release.set()
        assert (await session.execute("FLUSH", [], [])).tag == "FLUSH"  # one that ends is answered

    asyncio.run(run())
