"""The RisingSpark Postgres wire server: listens, and serves each connection with its own session.

Usage::

    server = PgServer("0.0.0.0", 4566, Session)
    await server.start()
    await server.serve_forever()
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import secrets
import signal
import threading
from collections.abc import Callable, Coroutine
from typing import Any

from frontend.metrics import CONNECTIONS, CONNECTIONS_TOTAL, NODE

from .api import PgSession
from .auth import PasswordAuth
from .connection import Connection, ConnectionSlots

logger = logging.getLogger(__name__)

EVENT_LOOPS = ("uvloop", "asyncio")


def event_loop_factory(name: str) -> Callable[[], asyncio.AbstractEventLoop]:
    """The event loop a server runs on, by its setting's name (``event_loop``).

    ``uvloop`` (the default) is libuv's loop, written in C, as uvicorn picks it when installed: the
    frontend's event loop reads every message and answers the statements it can take without a
    thread (constant SELECTs, cached point queries, single-row INSERTs), so its own cost is a share
    of every such statement's. ``asyncio`` is the standard library's loop (in Python), kept as the
    baseline the serving benchmark compares with (`bench/serving.py --event-loops`).

    Raises:
        ValueError: an unknown name (before anything starts).
    """
    if name == "uvloop":
        import uvloop

        return uvloop.new_event_loop
    if name == "asyncio":
        return asyncio.SelectorEventLoop  # (not `new_event_loop`: it follows a global policy, which may be uvloop's)
    raise ValueError(f"event_loop must be one of {', '.join(EVENT_LOOPS)}, not {name!r}")


SHUTDOWN_SIGNALS = (signal.SIGINT, signal.SIGTERM)  # what `main` may handle on the loop (`add_signal_handler`)


def run_server(main: Coroutine[Any, Any, None], event_loop: str) -> None:
    """Run `main` on the event loop named `event_loop` (`event_loop_factory`) until it returns.

    The handlers `main` set for `SHUTDOWN_SIGNALS` are removed when it ends, and the ones in effect
    before it are put back, so that a Ctrl-C or a SIGTERM during the process's shutdown after it acts
    as without them (uvloop, unlike the standard loop, leaves them bound to the closed loop, where they
    would be ignored; and either loop's removal sets the default handler, not the one it replaced,
    such as a SparkContext's in the same process)."""
    previous = {sig: signal.getsignal(sig) for sig in SHUTDOWN_SIGNALS}

    async def serve() -> None:
        try:
            await main
        finally:  # (on the running loop: uvloop rebinds them to itself once it stopped)
            loop = asyncio.get_running_loop()
            for sig in SHUTDOWN_SIGNALS:
                loop.remove_signal_handler(sig)

    try:
        with asyncio.Runner(loop_factory=event_loop_factory(event_loop)) as runner:
            runner.run(serve())
    finally:
        if threading.current_thread() is threading.main_thread():  # (only it may set handlers)
            for sig, handler in previous.items():
                if handler is not None:  # (None: set outside Python, which cannot be put back)
                    signal.signal(sig, handler)


class PgServer:
    """An asyncio Postgres protocol 3.0 server.

    Args:
        host: the address to listen on (``"0.0.0.0"``, ``"127.0.0.1"``, ``"localhost"``...).
        port: the TCP port; 0 picks a free one, see `port` once started.
        session_factory: makes one `PgSession` per connection.
        auth: password authentication of every connection; None trusts every user.
        max_connections: connections served at once (0: no limit); past it a new connection gets
            FATAL 53300 after its startup packet, as PostgreSQL's (a CancelRequest is still served).
    """

    def __init__(self, host: str, port: int, session_factory: Callable[[], PgSession],
                 auth: PasswordAuth | None = None, *, max_connections: int = 0) -> None:
        self._host = host
        self._slots = ConnectionSlots(max_connections)
        self._port = port
        self._session_factory = session_factory
        self._auth = auth
        self._server: asyncio.Server | None = None
        self._pids = itertools.count(1)
        self._registry: dict[int, Connection] = {}  # started connections, for CancelRequest
        self._connections: set[Connection] = set()
        self._tasks: set[asyncio.Task] = set()

    async def start(self) -> None:
        """Bind and start accepting connections."""
        self._server = await asyncio.start_server(self._handle, self._host, self._port)
        logger.info("RisingSpark listening on %s:%d", self._host, self.port)

    @property
    def port(self) -> int:
        """The bound port (useful when constructed with port 0)."""
        if self._server is None or not self._server.sockets:
            return self._port
        return self._server.sockets[0].getsockname()[1]

    async def serve_forever(self) -> None:
        """Serve until cancelled (starting first if needed)."""
        if self._server is None:
            await self.start()
        assert self._server is not None
        await self._server.serve_forever()

    async def stop(self) -> None:
        """Close the listeners, then every connection (clients get FATAL 57P01)."""
        if self._server is not None:
            self._server.close()
        for conn in list(self._connections):
            conn.shutdown()
        tasks = list(self._tasks)
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()
            self._server = None
        logger.info("RisingSpark server stopped")

    async def __aenter__(self) -> PgServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        conn = Connection(reader, writer, next(self._pids), secrets.randbits(32), self._session_factory,
                          self._registry, self._auth, self._slots)
        self._tasks.add(task)
        self._connections.add(conn)
        CONNECTIONS.labels(NODE).inc()
        CONNECTIONS_TOTAL.labels(NODE).inc()
        try:
            await conn.run()
        except asyncio.CancelledError:
            pass  # stopped by `stop`
        finally:
            CONNECTIONS.labels(NODE).dec()
            self._connections.discard(conn)
            self._tasks.discard(task)
