"""One client connection: startup, the simple query flow, and the message loop.

The extended query flow (Parse/Bind/Describe/Execute/Close) lives in
`frontend.pgwire.extended`. `error_message` is the one place where exceptions become
ErrorResponse messages.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, cast

from risingspark.errors import (
    AdminShutdown,
    FeatureNotSupported,
    ProtocolViolation,
    RisingSparkError,
    TooManyConnections,
)

from . import backend as be
from . import messages as m
from .api import ColumnDesc, ConnectionInfo, PgSession, StatementResult
from .auth import PasswordAuth
from .copy import copy_in
from .datarows import Rows, encode_rows, row_count, slice_rows
from .extended import CYCLE_TAIL, SYNC, ExtendedQuery, is_empty_query
from .row_stream import RowStream

logger = logging.getLogger(__name__)

STARTUP_TIMEOUT_S = 60.0
CHUNK_ROWS = 8192  # rows encoded per DataRow batch
THREAD_MIN_ROWS = 2048  # Arrow batches at least this long are encoded off the event loop

# Announced at startup unless the session's `startup` returns another value.
DEFAULT_PARAMETER_STATUS = {
    "server_version": "13.14.0",
    "server_encoding": "UTF8",
    "client_encoding": "UTF8",
    "DateStyle": "ISO, MDY",
    "IntervalStyle": "postgres",
    "TimeZone": "UTC",
    "integer_datetimes": "on",
    "standard_conforming_strings": "on",
}


def error_message(exc: BaseException, *, fatal: bool = False) -> bytes:
    """The ErrorResponse for an exception: a `RisingSparkError` keeps its SQLSTATE and fields,
    anything else is an internal error (XX000), logged with its traceback."""
    if isinstance(exc, RisingSparkError):
        severity = "FATAL" if fatal else exc.severity
        return be.error_response(severity, exc.sqlstate, exc.message, detail=exc.detail, hint=exc.hint,
                                position=exc.position)
    logger.error("internal error: %s", exc, exc_info=exc)
    return be.error_response("FATAL" if fatal else "ERROR", "XX000", str(exc) or type(exc).__name__)


def cancel_in(registry: dict[int, Connection], pid: int, secret: int) -> bool:
    """A CancelRequest for `pid`: cancels the statement of the connection of `registry` with that id
    and `secret`; False when there is none."""
    target = registry.get(pid)
    if target is None or target.secret != secret:
        return False
    target.cancel_statement()
    return True


def _holds_bytes(reader: asyncio.StreamReader) -> bool:
    """Whether the stream holds bytes not read yet (its buffer is private: a stream without one is
    taken to hold some, so nothing is answered ahead of them)."""
    buffer: Any = getattr(reader, "_buffer", None)
    return buffer is None or len(buffer) > 0


class AnsweringProtocol(asyncio.StreamReaderProtocol):
    """The server's socket protocol: a stream reader's, where a started connection may answer what
    arrives before it reaches the stream (`Connection._answer_now`): a statement answered so takes no
    wake-up of the connection's task (a future, a loop iteration, the message loop's dispatch), about
    a tenth of a point query's time on the server."""

    answer: Callable[[bytes], bool] | None = None

    def data_received(self, data: bytes) -> None:
        answer = self.answer
        if answer is None or not answer(data):
            super().data_received(data)


class ConnectionSlots:
    """At most `limit` connections served at once (0: no limit). Taken and given back on the event
    loop, with no await between the check and the taking."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._taken: set[int] = set()

    def take(self, pid: int) -> bool:
        if 0 < self.limit <= len(self._taken):
            return False
        self._taken.add(pid)
        return True

    def give_back(self, pid: int) -> None:
        self._taken.discard(pid)

    def __len__(self) -> int:
        return len(self._taken)


class Connection:
    """Serves one client socket with a session made by `session_factory`.

    Args:
        reader, writer: the socket streams.
        pid, secret: the BackendKeyData a CancelRequest must quote to cancel this connection.
        session_factory: makes the connection's session after the startup packet.
        registry: connections by pid, where this one is listed once started (for CancelRequest).
        auth: password authentication; None trusts every user.
        slots: the server's connection limit: a connection takes a slot after its startup packet
            (before authentication, as a PostgreSQL backend counts from its start) or is refused with
            FATAL 53300; a CancelRequest takes none.
        forward_cancel: passes on a CancelRequest for a connection of another process of the
            server's group (`process_group`); returns False for an id of this process.
    """

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, pid: int, secret: int,
                 session_factory: Callable[[], PgSession], registry: dict[int, Connection],
                 auth: PasswordAuth | None = None, slots: ConnectionSlots | None = None, *,
                 forward_cancel: Callable[[int, int], Awaitable[bool]] | None = None) -> None:
        self.reader = reader
        self.messages = m.MessageReader(reader)  # (after the startup packets, which are read from `reader`)
        self.writer = writer
        self.sink = be.MessageSink(writer)
        self.pid = pid
        self.secret = secret
        self.session: PgSession | None = None
        self.in_transaction = False
        self._session_factory = session_factory
        self._registry = registry
        self._auth = auth
        self._slots = slots
        self._forward_cancel = forward_cancel
        self._extended = ExtendedQuery(self)
        self._task: asyncio.Task | None = None
        self._shutting_down = False
        self._sending: RowStream | None = None  # the streamed result being sent (a cancel stops it too)
        self._reading = False  # waiting for the client's next message: nothing runs to cancel
        self._skipping = False  # after an error in the extended flow: messages are discarded until Sync
        self.answered_now = 0  # executions answered as they arrived (`_answer_now`)

    # ---- lifecycle ------------------------------------------------------------------------------
    async def run(self) -> None:
        """Serve until Terminate, EOF, a fatal error or `shutdown`."""
        self._task = asyncio.current_task()
        protocol = self.writer.transport.get_protocol()
        try:
            if await self._startup():
                if isinstance(protocol, AnsweringProtocol):
                    protocol.answer = self._answer_now
                await self._serve()
        except (asyncio.IncompleteReadError, ConnectionError):
            logger.debug("connection %d: client went away", self.pid)
        except asyncio.CancelledError:
            if self._shutting_down:
                self.sink.send(error_message(AdminShutdown("terminating connection due to administrator "
                                                           "command"), fatal=True))
                with contextlib.suppress(ConnectionError):  # (the client went away first)
                    self.sink.flush_nowait()
            raise
        except ProtocolViolation as exc:
            logger.info("connection %d: protocol violation: %s", self.pid, exc.message)
            self._fatal(exc)
        except Exception as exc:  # never let one connection's failure reach the server
            self._fatal(exc)
        finally:
            if isinstance(protocol, AnsweringProtocol):
                protocol.answer = None
            await self._close()

    def shutdown(self) -> None:
        """Stop serving: the client gets FATAL 57P01 and the connection closes."""
        self._shutting_down = True
        if self._task is not None:
            self._task.cancel()

    def cancel_statement(self) -> None:
        """A CancelRequest named this connection. One that finds the connection waiting for the
        client's next message is ignored, as PostgreSQL ignores it while it reads a command: it must
        not fail the next statement, or the next Execute of a suspended portal."""
        if self.session is None:
            return
        if self._reading:
            logger.info("connection %d: cancel requested while idle: nothing to cancel", self.pid)
            return
        logger.info("connection %d: cancel requested", self.pid)
        sending = self._sending
        if sending is not None and sending.cancel_event is not None:
            sending.cancel_event.set()  # (a suspended portal's rows, resumed after other statements ran)
        try:
            self.session.cancel()
        except Exception:
            logger.exception("connection %d: session cancel failed", self.pid)

    def _fatal(self, exc: BaseException) -> None:
        try:
            self.sink.send(error_message(exc, fatal=True))
            self.sink.flush_nowait()
        except Exception:
            logger.debug("connection %d: could not report a fatal error", self.pid, exc_info=True)

    async def _close(self) -> None:
        self._extended.close()
        if self._registry.get(self.pid) is self:
            del self._registry[self.pid]
        if self._slots is not None:
            self._slots.give_back(self.pid)
        if self.session is not None:
            try:
                await self.session.close()
            except Exception:
                logger.exception("connection %d: session close failed", self.pid)
        self.writer.close()
        with contextlib.suppress(ConnectionError, OSError):
            await self.writer.wait_closed()

    # ---- startup --------------------------------------------------------------------------------
    async def _read_startup_packet(self) -> m.StartupMessage | m.CancelRequest:
        packet = await m.read_startup(self.reader)
        while isinstance(packet, m.SSLRequest | m.GSSENCRequest):
            self.writer.write(b"N")  # no TLS, no GSSAPI encryption: continue in the clear
            await self.writer.drain()
            packet = await m.read_startup(self.reader)
        return packet

    async def _startup(self) -> bool:
        """Answer the startup packets; True once ReadyForQuery was sent."""
        try:
            async with asyncio.timeout(STARTUP_TIMEOUT_S):
                packet = await self._read_startup_packet()
        except TimeoutError:
            logger.info("connection %d: no startup packet in %.0f s", self.pid, STARTUP_TIMEOUT_S)
            return False
        if isinstance(packet, m.CancelRequest):
            if not cancel_in(self._registry, packet.pid, packet.secret) and not (
                    # (another process's connection: that process checks the secret and cancels)
                    self._forward_cancel is not None and await self._forward_cancel(packet.pid, packet.secret)):
                logger.info("connection %d: cancel request for unknown backend %d", self.pid, packet.pid)
            return False
        if self._slots is not None and not self._slots.take(self.pid):
            raise TooManyConnections("sorry, too many clients already")
        major, minor = packet.protocol >> 16, packet.protocol & 0xFFFF
        if major != 3:
            raise ProtocolViolation(f"unsupported frontend protocol {major}.{minor}: server supports "
                                    "3.0 to 3.0")
        options = sorted(k for k in packet.params if k.startswith("_pq_."))
        if minor > 0 or options:
            self.sink.send(be.negotiate_protocol_version(0, options))
        params = {k: v for k, v in packet.params.items() if not k.startswith("_pq_.")}
        if self._auth is not None:
            await self._auth.authenticate(self, params.get("user", ""))
        self.session = self._session_factory()
        bind = getattr(self.session, "bind_connection", None)
        if bind is not None:
            peer = self.writer.get_extra_info("peername")
            bind(ConnectionInfo(self.pid, peer[0] if isinstance(peer, tuple) else "local"))
        statuses = {**DEFAULT_PARAMETER_STATUS, "application_name": params.get("application_name", "")}
        statuses.update(await self.session.startup(params))
        self.sink.send(be.authentication_ok())
        for name, value in statuses.items():
            self.sink.send(be.parameter_status(name, value))
        self.sink.send(be.backend_key_data(self.pid, self.secret))
        self.sink.send(be.ready_for_query(b"I"))
        await self.sink.flush()
        self._registry[self.pid] = self
        logger.info("connection %d: started for user %r database %r", self.pid, params.get("user"),
                    params.get("database"))
        return True

    # ---- message loop ---------------------------------------------------------------------------
    async def _serve(self) -> None:
        ext = self._extended
        while True:
            self._reading = True
            try:
                msg = await self.messages.read()
            finally:
                self._reading = False
            if isinstance(msg, m.Terminate):
                return
            if isinstance(msg, m.Sync):
                self._skipping = False
                ext.sync()
                self.sink.send(be.ready_for_query(self.status))
                await self.sink.flush()
            elif self._skipping:
                continue
            elif isinstance(msg, m.Query):
                await self._simple_query(msg.sql)
            elif isinstance(msg, m.Bind) and not msg.portal and self.messages.take_if(CYCLE_TAIL):
                try:  # (a prepared statement's execution, pipelined: `ExtendedQuery.cycle`)
                    await ext.cycle(msg)
                except Exception as exc:
                    self.send_error(exc)
                    self._skipping = True
            elif isinstance(msg, m.Parse | m.Bind | m.Describe | m.Execute | m.Close):
                try:
                    await ext.handle(msg)
                except Exception as exc:
                    self.send_error(exc)
                    self._skipping = True
            elif isinstance(msg, m.Flush):
                await self.sink.flush()
            elif isinstance(msg, m.FunctionCall):
                self.send_error(FeatureNotSupported("function call messages are not supported"))
                self.sink.send(be.ready_for_query(self.status))
                await self.sink.flush()
            elif isinstance(msg, m.CopyData | m.CopyDone | m.CopyFail):
                continue  # outside COPY these are ignored, as Postgres does
            else:
                raise ProtocolViolation(f"unexpected message {type(msg).__name__}")

    def _answer_now(self, data: bytes) -> bool:
        """Answer what the socket delivered, before it reaches the message loop, when it is one
        pipelined execution of a prepared statement (Bind, `CYCLE_TAIL`, Sync: what drivers send for
        each) that the session answers at once (`ExtendedQuery.answer_now`); False leaves it to the
        loop. Only while the loop waits for a message with nothing buffered (so nothing is answered
        out of turn), not skipping after an error, with nothing unsent before it and the socket's send
        buffer empty (the loop waits on a client that does not read; this would not), and not once
        `shutdown` was asked (the cancelled task has yet to run: the client gets only its FATAL).
        An answer that must wait (a durable INSERT's, for its sync: `Answer.ready`) is sent when it
        may be; the socket is not read meanwhile."""
        if not self._reading or self._skipping or self._shutting_down or not self.messages.idle or self.sink.pending \
                or _holds_bytes(self.reader):  # (bytes the loop has yet to take come first)
            return False
        end = len(data) - len(CYCLE_TAIL) - len(SYNC)
        if end < 5 or data[0] != 0x42 or not data.endswith(SYNC, end + len(CYCLE_TAIL)) \
                or not data.startswith(CYCLE_TAIL, end) or int.from_bytes(data[1:5], "big") != end - 1:
            return False  # (0x42: a Bind)
        transport = self.writer.transport
        if transport.is_closing() or transport.get_write_buffer_size():
            return False
        try:
            answer = self._extended.answer_now(m.decode_bind(data[5:end]))
        except Exception:  # noqa: BLE001 - (the loop runs it again and reports the error)
            return False
        if answer is None:
            return False
        self.answered_now += 1  # (before the write: a client that reads the answer sees it counted)
        if answer.ready is None:
            transport.write(answer.data)
            return True
        # (what the client sends next, its end of input too, stays in the socket until the answer is
        # sent: nothing may be answered first, and a client that closes still gets it)
        reading = cast(asyncio.ReadTransport, transport)  # (a socket's transport reads and writes)
        reading.pause_reading()

        def send(error: BaseException | None) -> None:
            if self._shutting_down or transport.is_closing():  # (the client gets its FATAL alone)
                return
            # (as the loop answers a statement that fails in `ExtendedQuery.cycle`: after its BindComplete)
            transport.write(answer.data if error is None else
                            be.bind_complete() + error_message(error) + be.ready_for_query(self.status))
            reading.resume_reading()

        answer.ready(send)
        return True

    @property
    def status(self) -> bytes:
        """The ReadyForQuery status. Statements auto-commit, so an error never leaves ``E``."""
        return b"T" if self.in_transaction else b"I"

    def send_error(self, exc: BaseException) -> None:
        self.sink.send(error_message(exc))

    async def _simple_query(self, sql: str) -> None:
        self._extended.discard_unnamed()
        assert self.session is not None
        try:
            if is_empty_query(sql):
                self.sink.send(be.empty_query_response())
            elif m_ := _DEALLOCATE.fullmatch(sql):
                name = m_.group("name")
                everything = name.upper() == "ALL" and not name.startswith('"')
                self._extended.deallocate(None if everything else _unquote_ident(name))
                self.sink.send(be.command_complete("DEALLOCATE ALL" if everything else "DEALLOCATE"))
            else:
                count = 0
                results = self.session.execute_simple(sql)
                try:
                    async for result in results:
                        count += 1
                        await self.send_result(result)
                finally:
                    await _aclose(results)
                if count == 0:
                    self.sink.send(be.empty_query_response())
        except Exception as exc:
            self.send_error(exc)
        self.sink.send(be.ready_for_query(self.status))
        await self.sink.flush()

    # ---- results --------------------------------------------------------------------------------
    async def send_result(self, result: StatementResult, formats: list[int] | None = None, *,
                          describe: bool = True, start: int = 0, max_rows: int = 0) -> int:
        """Send a statement's notices, row description, rows and completion.

        Args:
            result: the statement's outcome.
            formats: one format code per column; None for all text.
            describe: send the RowDescription (the simple flow does; the extended one answered Describe).
            start: the first row to send (a resumed portal); notices go only with the first batch.
            max_rows: send at most this many rows (0: all), then PortalSuspended.

        Returns:
            The row position after this batch; less than the row count when suspended.
        """
        if result.copy_in is not None:
            result = await copy_in(self, result.copy_in)
        if start == 0:
            for notice in result.notices:
                self.sink.send(be.notice_response(notice) if isinstance(notice, str) else
                               be.notice_response(notice.message, severity=notice.severity, sqlstate=notice.sqlstate))
        if result.empty:
            self.sink.send(be.empty_query_response())
            return 0
        columns = result.columns
        if columns is not None and formats is None:
            formats = [0] * len(columns)
        if columns is not None and describe:
            self.sink.send(be.row_description(columns, formats or []))
        if isinstance(result.rows, RowStream):
            return await self._send_stream(result, result.rows, columns or [], formats or [], start, max_rows)
        total = row_count(result.rows)
        stop = total if max_rows <= 0 else min(total, start + max_rows)
        if columns is not None and result.rows is not None and stop > start:
            await self._send_rows(columns, formats or [], result.rows, start, stop)
        if stop < total:
            self.sink.send(be.portal_suspended())
            return stop
        tag = result.tag
        if start > 0 and tag.startswith("SELECT "):  # a resumed portal counts this batch's rows
            tag = f"SELECT {stop - start}"
        self._note_transaction(result)
        for name, value in result.parameters.items():
            self.sink.send(be.parameter_status(name, value))
        self.sink.send(be.command_complete(tag))
        return stop

    def session_time_zone(self) -> str | None:
        """The session's ``TimeZone`` for timestamptz text (`frontend.pgwire.time_zone`)."""
        return getattr(self.session, "time_zone", None)  # (a session without the setting: UTC)

    async def _send_rows(self, columns: list[ColumnDesc], formats: list[int], rows: Rows, start: int,
                         stop: int) -> None:
        arrow = not isinstance(rows, list)
        for lo in range(start, stop, CHUNK_ROWS):
            chunk = slice_rows(rows, lo, min(stop, lo + CHUNK_ROWS))
            if arrow and row_count(chunk) >= THREAD_MIN_ROWS:
                data = await asyncio.to_thread(encode_rows, columns, formats, chunk, self.session_time_zone())
            else:
                data = encode_rows(columns, formats, chunk, self.session_time_zone())
            self.sink.send(data)
            await self.sink.maybe_flush()

    async def _send_stream(self, result: StatementResult, stream: RowStream, columns: list[ColumnDesc],
                           formats: list[int], start: int, max_rows: int) -> int:
        """`send_result` of rows produced while they are sent: each batch is taken and encoded in a
        thread and written before the next is taken. Past `max_rows` (a portal's limit) the stream
        keeps the rest for the next Execute. The stream is closed once its rows are sent or failed."""
        sent = 0
        self._sending = stream
        try:
            while max_rows <= 0 or sent < max_rows:
                want = CHUNK_ROWS if max_rows <= 0 else min(CHUNK_ROWS, max_rows - sent)
                data, n = await asyncio.to_thread(_take_encoded, stream, columns, formats, want, self.session_time_zone())
                if n == 0:
                    break
                sent += n
                self.sink.send(data)
                await self.sink.maybe_flush()
            if max_rows > 0 and sent == max_rows and await asyncio.to_thread(stream.more):
                stream.suspended()
                self.sink.send(be.portal_suspended())
                return start + sent
        except BaseException:
            stream.close()
            raise
        finally:
            self._sending = None
        stream.close()
        self._note_transaction(result)
        # (a resumed portal counts this batch's rows, as for a table)
        self.sink.send(be.command_complete(f"SELECT {sent if start > 0 else stream.taken}"))
        return start + sent

    def _note_transaction(self, result: StatementResult) -> None:
        # DISCARD ALL: the session reset its settings, the prepared statements go here (its portals end
        # with the statement's implicit transaction: DISCARD ALL does not run in a block)
        if result.tag == "DISCARD ALL":
            self._extended.deallocate(None)
        state = result.in_transaction
        if state is None:
            tag = result.tag.upper()
            if tag in ("BEGIN", "START TRANSACTION"):
                state = True
            elif tag in ("COMMIT", "ROLLBACK"):
                state = False
        if state is not None:
            if self.in_transaction and not state:
                self._extended.close()  # (portals end with their transaction, as PostgreSQL's)
            self.in_transaction = state


_DEALLOCATE = re.compile(r'\s*DEALLOCATE\s+(?:PREPARE\s+)?(?P<name>"(?:[^"]|"")+"|\w+)\s*;?\s*', re.IGNORECASE)


def _take_encoded(stream: RowStream, columns: list[ColumnDesc], formats: list[int], max_rows: int,
                  time_zone: str | None = None) -> tuple[bytes, int]:
    rows = stream.take(max_rows)
    if rows is None:
        return b"", 0
    return encode_rows(columns, formats, rows, time_zone), rows.num_rows


def _unquote_ident(name: str) -> str:
    return name[1:-1].replace('""', '"') if name.startswith('"') else name.lower()


async def _aclose(results: AsyncIterator[StatementResult]) -> None:
    aclose = getattr(results, "aclose", None)
    if aclose is not None:
        await aclose()
