"""The RisingSpark Postgres wire server: listens, and serves each connection with its own session.

Usage::

    server = PgServer("0.0.0.0", 4566, Session)
    await server.start()
    await server.serve_forever()
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import os
import secrets
import signal
import struct
import threading
from collections.abc import Callable, Coroutine
from typing import Any

from frontend.metrics import CONNECTIONS, CONNECTIONS_TOTAL, NODE
from risingspark.errors import InternalError, ProtocolViolation, RisingSparkError

from . import messages as m
from .api import PgSession
from .auth import PasswordAuth
from .connection import AnsweringProtocol, Connection, ConnectionSlots, cancel_in
from .event_loops import EVENT_LOOPS, event_loop_factory  # noqa: F401 - (where the wire server's callers find them)
from .process_group import MAX_REQUEST_BYTES, REQUESTS, ProcessGroup

logger = logging.getLogger(__name__)

STREAM_LIMIT = 2 ** 16  # a connection's stream reader's buffer limit (`asyncio.start_server`'s default)
FORWARDED_TIMEOUT_S = 5.0  # to read a request of another process of the group (`_handle_forwarded`)


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
        group: this server is one process of several serving `port` (`process_group`): the port
            is bound with ``SO_REUSEPORT``, connection ids and `max_connections` are the group's, and
            CancelRequests for the other processes' connections are passed on to them.
        answer: answers the requests of the group's other processes (in a thread):
            ``answer(code, payload)`` (`frontend.group_member.GroupMember.answer`).
    """

    def __init__(self, host: str, port: int, session_factory: Callable[[], PgSession],
                 auth: PasswordAuth | None = None, *, max_connections: int = 0,
                 group: ProcessGroup | None = None, answer: Callable[[int, Any], Any] | None = None) -> None:
        self._host = host
        self._group = group
        self._answer = answer
        self._slots = ConnectionSlots(max_connections) if group is None else group.slots(max_connections)
        self._port = port
        self._session_factory = session_factory
        self._auth = auth
        self._server: asyncio.Server | None = None
        self._forwarded: asyncio.Server | None = None  # (a group's: the other processes' requests)
        self._pids = itertools.count(1) if group is None else group.pids()
        self._registry: dict[int, Connection] = {}  # started connections, for CancelRequest
        self._connections: set[Connection] = set()
        self._tasks: set[asyncio.Task] = set()

    async def start(self) -> None:
        """Bind and start accepting connections."""
        group = self._group
        if group is not None:
            path = group.socket_path(group.index)
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)  # (left by a process of the group that died)
            self._forwarded = await asyncio.start_unix_server(self._handle_forwarded, path)
        loop = asyncio.get_running_loop()

        def protocol() -> AnsweringProtocol:  # (as `asyncio.start_server` makes a stream reader's)
            return AnsweringProtocol(asyncio.StreamReader(limit=STREAM_LIMIT, loop=loop), self._handle, loop=loop)

        self._server = await loop.create_server(protocol, self._host, self._port,
                                                reuse_port=True if group is not None else None)
        logger.info("RisingSpark listening on %s:%d%s", self._host, self.port,
                    "" if group is None else f" (process {group.index + 1} of {group.count})")

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
        if self._forwarded is not None:
            self._forwarded.close()
        for conn in list(self._connections):
            conn.shutdown()
        tasks = list(self._tasks)
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()
            self._server = None
        if self._forwarded is not None:
            await self._forwarded.wait_closed()
            self._forwarded = None
        close = getattr(self._slots, "close", None)
        if close is not None:
            close()
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
                          self._registry, self._auth, self._slots,
                          forward_cancel=self._forward_cancel if self._group is not None else None)
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

    async def _forward_cancel(self, pid: int, secret: int) -> bool:
        """Pass on a CancelRequest naming another process's connection; False for this process's."""
        group = self._group
        if group is None or group.owner(pid) == group.index:
            return False
        await group.forward_cancel(pid, secret)
        return True

    async def _handle_forwarded(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """A request of another process of the group (nothing else is served here): a CancelRequest
        it took for one of this process's connections (closing the socket says it was handled), or
        one of the group's requests (`process_group.REQUESTS`), answered by `answer` in a thread."""
        try:
            async with asyncio.timeout(FORWARDED_TIMEOUT_S):
                length, code = struct.unpack("!ii", await reader.readexactly(8))
                if not 8 <= length <= MAX_REQUEST_BYTES:
                    raise ProtocolViolation(f"invalid length {length} of a request")
                body = await reader.readexactly(length - 8)
            if code == m.CANCEL_REQUEST_CODE and length == 16:
                pid, secret = struct.unpack("!II", body)
                if not cancel_in(self._registry, pid, secret):
                    logger.info("cancel request for unknown backend %d (passed on)", pid)
            elif code in REQUESTS and self._answer is not None:
                try:
                    result = await asyncio.get_running_loop().run_in_executor(None, self._answer, code,
                                                                              json.loads(body))
                    reply: dict = {"result": result}
                except RisingSparkError as e:
                    reply = {"error": e.to_json()}
                except Exception as e:  # noqa: BLE001 - (the asking process reports it)
                    logger.exception("a request of another process of this frontend failed")
                    reply = {"error": InternalError(str(e) or type(e).__name__).to_json()}
                writer.write(json.dumps(reply).encode())
                await writer.drain()
            else:
                logger.warning("a process of this frontend sent an unknown request (code %d)", code)
        except Exception as e:  # (never let it reach the server)
            logger.info("a request of another process of this frontend failed: %s", e)
        finally:
            writer.close()
