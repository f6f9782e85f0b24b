"""Test doubles: a fake SQL session, a real wire server in a background event loop, a raw client."""

from __future__ import annotations

import asyncio
import datetime as dt
import re
import socket
import struct
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import pyarrow as pa

from frontend.pgwire.api import ColumnDesc, CopyIn, StatementResult
from frontend.pgwire.auth import PasswordAuth
from frontend.pgwire.process_group import ProcessGroup
from frontend.pgwire.row_stream import RowStream
from frontend.pgwire.server import PgServer, event_loop_factory
from risingspark.errors import (
    DivisionByZero,
    InternalError,
    InvalidCatalogName,
    QueryCanceled,
    SyntaxError_,
    UndefinedTable,
)
from risingspark.types import DataType

TYPE_OIDS = {"int": 23, "int4": 23, "integer": 23, "int2": 21, "smallint": 21, "int8": 20, "bigint": 20,
             "float8": 701, "float4": 700, "numeric": 1700, "text": 25, "varchar": 1043, "bool": 16,
             "boolean": 16, "date": 1082, "timestamp": 1114, "timestamptz": 1184}

TYPES_TABLE = pa.table({
    "i2": pa.array([1, -2, None], pa.int16()),
    "i4": pa.array([100, None, -7], pa.int32()),
    "i8": pa.array([1 << 40, 0, None], pa.int64()),
    "f4": pa.array([1.5, None, 1e6], pa.float32()),
    "f8": pa.array([100.0, 1e16, None]),
    "n": pa.array([Decimal("61.5"), Decimal("100"), None], pa.decimal128(38, 10)),
    "n2": pa.array([Decimal("61.50"), None, Decimal("-0.01")], pa.decimal128(12, 2)),
    "b": pa.array([True, False, None]),
    "s": pa.array(["héllo", "", None]),
    "d": pa.array([dt.date(2024, 1, 2), None, dt.date(1999, 12, 31)]),
    "ts": pa.array([dt.datetime(2024, 1, 2, 3, 4, 5, 120000), None, dt.datetime(2000, 1, 1)], pa.timestamp("us")),
    "tz": pa.array([dt.datetime(2024, 1, 2, 3, 4, 5), dt.datetime(1970, 1, 1, 0, 0, 0, 1), None],
                   pa.timestamp("us", tz="UTC")),
})
BIG_ROWS = 20_000
BIG_TABLE = pa.table({"x": pa.array(range(BIG_ROWS), pa.int64())})
STREAM_BATCH = 1000


def columns_of(table: pa.Table) -> list[ColumnDesc]:
    cols = []
    for f in table.schema:
        t = DataType.from_arrow(f.type)
        cols.append(ColumnDesc(f.name, t.oid, t.typlen, t.typmod))
    return cols


@dataclass
class FakeState:
    """What the sessions of one server saw, for assertions from the test thread."""

    cancels: int = 0
    closes: int = 0
    startups: list[dict[str, str]] = field(default_factory=list)
    statements: list[str] = field(default_factory=list)
    sleeping: threading.Event = field(default_factory=threading.Event)
    produced: int = 0  # batches a streamed result's producer made (`select * from stream N`)
    streams_closed: int = 0


class FakeSession:
    """The SQL half: canned answers keyed by statement text."""

    def __init__(self, state: FakeState) -> None:
        self.state = state
        self._cancel = asyncio.Event()

    async def startup(self, params: dict[str, str]) -> dict[str, str]:
        self.state.startups.append(params)
        if params.get("database") == "nodb":
            raise InvalidCatalogName('database "nodb" does not exist')
        return {"server_version": "13.14.0"}

    async def execute_simple(self, sql: str) -> AsyncIterator[StatementResult]:
        for stmt in sql.split(";"):
            if stmt.strip() and not stmt.strip().startswith("--"):
                yield await self._run(stmt, [], [])

    async def describe(self, sql: str, param_oids: list[int]) -> tuple[list[int], list[ColumnDesc] | None]:
        oids = self._param_oids(sql, param_oids)
        text = _norm(sql)
        if text.startswith("select $"):
            return oids, self._echo_columns(sql, oids)
        result = await self._run(sql, oids, [None] * len(oids))
        return oids, result.columns

    async def execute(self, sql: str, param_oids: list[int], params: list[Any]) -> StatementResult:
        return await self._run(sql, param_oids, params)

    def cancel(self) -> None:
        self.state.cancels += 1
        self._cancel.set()

    async def close(self) -> None:
        self.state.closes += 1

    # ---- canned statements ----------------------------------------------------------------------
    async def _run(self, sql: str, oids: list[int], params: list[Any]) -> StatementResult:
        text = _norm(sql)
        self.state.statements.append(text)
        self._cancel.clear()
        if text in ("begin", "start transaction") or text.startswith("begin "):
            return StatementResult("BEGIN")
        if text in ("commit", "rollback"):
            return StatementResult(text.upper())
        if text.startswith("rollback to"):
            return StatementResult("ROLLBACK", in_transaction=True)
        if text.startswith(("savepoint", "release")):
            return StatementResult(text.split()[0].upper())
        if text.startswith("set "):
            return StatementResult("SET")
        if text == "copy t from stdin":  # (counts the bytes it is sent)
            received = bytearray()

            async def write(data: bytes) -> None:
                received.extend(data)

            async def finish() -> StatementResult:
                return StatementResult(f"COPY {len(received)}")

            async def abort(message: str) -> None:
                pass

            return StatementResult("", copy_in=CopyIn(1, write, finish, abort))
        if text == "select 1":
            return StatementResult("SELECT 1", [ColumnDesc("?column?", 23, 4)], [(1,)])
        if text == "select 2":
            return StatementResult("SELECT 1", [ColumnDesc("?column?", 23, 4)], [(2,)])
        if text == "select 1, 2":
            return StatementResult("SELECT 1", [ColumnDesc("?column?", 23, 4)] * 2, [(1, 2)])
        if text == "select 1 where false":
            return StatementResult("SELECT 0", [ColumnDesc("?column?", 23, 4)], [])
        if text == "select * from t":
            return StatementResult("SELECT 3", columns_of(TYPES_TABLE), TYPES_TABLE)
        if text == "select * from big":
            return StatementResult(f"SELECT {BIG_ROWS}", columns_of(BIG_TABLE), BIG_TABLE)
        if text.startswith("select * from stream"):  # N batches of STREAM_BATCH rows, produced as sent
            return self._stream(int(text.split()[-1]), fail_at=None)
        if text.startswith("select * from failing_stream"):  # fails producing its 3rd batch
            return self._stream(int(text.split()[-1]), fail_at=2)
        if text.startswith("select * from missing"):
            raise UndefinedTable('relation "missing" does not exist', position=15)
        if text.startswith("select pg_sleep"):
            return await self._sleep(float(re.findall(r"[\d.]+", text)[0]))
        if text.startswith("select $"):
            return StatementResult("SELECT 1", self._echo_columns(sql, oids), [tuple(params)])
        if text == "notice":
            return StatementResult("DO", notices=["hello from RisingSpark"])
        if text.startswith("create table"):
            return StatementResult("CREATE_TABLE")
        if text.startswith("insert into t"):  # (counted in `statements`; `insert into t_failing` fails)
            if text.startswith("insert into t_failing"):
                raise InternalError("could not sync the DML log (disk full)")
            return StatementResult("INSERT 0 1")
        if text == "boom":
            raise RuntimeError("boom")
        raise SyntaxError_(f'syntax error at or near "{text.split()[0]}"', position=1)

    def _stream(self, batches: int, fail_at: int | None) -> StatementResult:
        state = self.state

        def produce() -> Iterator[pa.Table]:
            for i in range(batches):
                if i == fail_at:
                    raise DivisionByZero("division by zero")
                state.produced += 1
                yield pa.table({"x": pa.array(range(i * STREAM_BATCH, (i + 1) * STREAM_BATCH), pa.int64())})

        def closed() -> None:
            state.streams_closed += 1

        stream = RowStream(pa.schema([("x", pa.int64())]), produce(), closed)
        return StatementResult("SELECT", [ColumnDesc("x", 20, 8)], stream)

    async def _sleep(self, seconds: float) -> StatementResult:
        self.state.sleeping.set()
        try:
            await asyncio.wait_for(self._cancel.wait(), seconds)
        except TimeoutError:
            return StatementResult("SELECT 1", [ColumnDesc("pg_sleep", 2278, 4)], [("",)])
        raise QueryCanceled("canceling statement due to user request")

    @staticmethod
    def _param_oids(sql: str, given: list[int]) -> list[int]:
        casts: dict[int, int] = {}
        for num, name in re.findall(r"\$(\d+)(?:::(\w+))?", sql):
            casts.setdefault(int(num), TYPE_OIDS.get(name, 25) if name else 25)
        count = max([len(given), *casts])
        return [given[i] if i < len(given) and given[i] else casts.get(i + 1, 25) for i in range(count)]

    @staticmethod
    def _echo_columns(sql: str, oids: list[int]) -> list[ColumnDesc]:
        cols = []
        for i, oid in enumerate(oids):
            m = re.search(rf"\${i + 1}::(\w+)", sql)
            cols.append(ColumnDesc("?column?", TYPE_OIDS.get(m.group(1), oid) if m else oid))
        return cols


def _norm(sql: str) -> str:
    return " ".join(sql.strip().rstrip(";").lower().split())


class ServerThread:
    """A `PgServer` with fake sessions, served by an event loop (`event_loop`: the server's setting) in
    a background thread."""

    def __init__(self, auth: PasswordAuth | None = None, max_connections: int = 0, event_loop: str = "uvloop",
                 group: ProcessGroup | None = None, port: int = 0,
                 session: Callable[[FakeState], FakeSession] | None = None) -> None:
        self.state = FakeState()
        make = session or FakeSession
        self.server = PgServer("127.0.0.1", port, lambda: make(self.state), auth,
                               max_connections=max_connections, group=group)
        self.loop = event_loop_factory(event_loop)()
        self._thread = threading.Thread(target=self._serve, name="pgwire-test-server", daemon=True)
        self._ready = threading.Event()
        self._error: BaseException | None = None

    def _serve(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_until_complete(self.server.start())
        except BaseException as exc:
            self._error = exc
            self._ready.set()
            return
        self._ready.set()
        self.loop.run_forever()
        self.loop.close()

    def __enter__(self) -> ServerThread:
        self._thread.start()
        assert self._ready.wait(10), "server did not start"
        if self._error is not None:
            raise self._error
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        if not self._thread.is_alive():
            return
        asyncio.run_coroutine_threadsafe(self.server.stop(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)

    @property
    def port(self) -> int:
        return self.server.port

    def dsn(self, **extra: str) -> str:
        params = {"host": "127.0.0.1", "port": str(self.port), "user": "root", "dbname": "dev",
                  "sslmode": "disable", "connect_timeout": "10", **extra}
        return " ".join(f"{k}={v}" for k, v in params.items())


class RawClient:
    """A minimal protocol client for flows no driver exposes (max_rows, bad versions...)."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._buf = b""

    def close(self) -> None:
        self.sock.close()

    def send_startup(self, code: int, params: dict[str, str] | None = None) -> None:
        body = struct.pack("!i", code)
        if params is not None:
            body += b"".join(k.encode() + b"\0" + v.encode() + b"\0" for k, v in params.items()) + b"\0"
        self.sock.sendall(struct.pack("!i", len(body) + 4) + body)

    def startup(self, **params: str) -> list[tuple[bytes, bytes]]:
        self.send_startup(196608, {"user": "root", "database": "dev", **params})
        return self.until(b"Z")

    def send(self, kind: bytes, body: bytes = b"") -> None:
        self.sock.sendall(kind + struct.pack("!i", len(body) + 4) + body)

    def recv_bytes(self, n: int) -> bytes:
        while len(self._buf) < n:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise EOFError
            self._buf += chunk
        out, self._buf = self._buf[:n], self._buf[n:]
        return out

    def recv(self) -> tuple[bytes, bytes]:
        kind = self.recv_bytes(1)
        (length,) = struct.unpack("!i", self.recv_bytes(4))
        return kind, self.recv_bytes(length - 4)

    def until(self, kind: bytes) -> list[tuple[bytes, bytes]]:
        out = []
        while True:
            msg = self.recv()
            out.append(msg)
            if msg[0] == kind:
                return out

    # frontend message bodies
    @staticmethod
    def parse(sql: str, name: str = "", oids: tuple[int, ...] = ()) -> bytes:
        return (name.encode() + b"\0" + sql.encode() + b"\0" + struct.pack("!h", len(oids))
                + b"".join(struct.pack("!I", o) for o in oids))

    @staticmethod
    def bind(portal: str = "", statement: str = "", params: tuple[bytes | None, ...] = (),
             param_formats: tuple[int, ...] = (), result_formats: tuple[int, ...] = ()) -> bytes:
        body = portal.encode() + b"\0" + statement.encode() + b"\0"
        body += struct.pack("!h", len(param_formats)) + b"".join(struct.pack("!h", f) for f in param_formats)
        body += struct.pack("!h", len(params))
        for p in params:
            body += struct.pack("!i", -1) if p is None else struct.pack("!i", len(p)) + p
        body += struct.pack("!h", len(result_formats)) + b"".join(struct.pack("!h", f) for f in result_formats)
        return body

    @staticmethod
    def execute(portal: str = "", max_rows: int = 0) -> bytes:
        return portal.encode() + b"\0" + struct.pack("!i", max_rows)


def error_fields(body: bytes) -> dict[str, str]:
    """The fields of an ErrorResponse/NoticeResponse body."""
    out = {}
    for part in body.rstrip(b"\0").split(b"\0"):
        if part:
            out[part[:1].decode()] = part[1:].decode()
    return out
