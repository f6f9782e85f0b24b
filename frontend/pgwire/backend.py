"""Postgres protocol 3.0 backend messages, each built as framed bytes ready to write.

>>> command_complete("SELECT 1")
b'C\\x00\\x00\\x00\\rSELECT 1\\x00'
"""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Iterable

from .api import ColumnDesc

_I32 = struct.Struct("!i")
_I16 = struct.Struct("!h")


class MessageSink:
    """Buffers backend messages and writes them to the socket on `flush`."""

    FLUSH_THRESHOLD = 256 * 1024

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self._writer = writer
        self._buffer: list[bytes] = []
        self._size = 0

    @property
    def pending(self) -> bool:
        """Messages are buffered, not yet handed to the socket."""
        return bool(self._buffer)

    def send(self, message: bytes) -> None:
        self._buffer.append(message)
        self._size += len(message)

    async def flush(self) -> None:
        self.flush_nowait()
        await self._writer.drain()

    def flush_nowait(self) -> None:
        """Hand the buffered messages to the transport without waiting for the socket.

        Raises:
            ConnectionResetError: the client closed or reset the connection (uvloop's transport
                raises RuntimeError on such a write, the standard loop's drops it: both end here).
        """
        if self._buffer:
            data = b"".join(self._buffer)
            self._buffer.clear()
            self._size = 0
            if self._writer.transport.is_closing():
                raise ConnectionResetError("the client closed the connection")
            self._writer.write(data)

    async def maybe_flush(self) -> None:
        """Flush when enough is buffered, applying the socket's back-pressure."""
        if self._size >= self.FLUSH_THRESHOLD:
            await self.flush()


# ---- backend messages ------------------------------------------------------------------------
def frame(kind: bytes, body: bytes = b"") -> bytes:
    """A backend message: type byte, length, body."""
    return kind + _I32.pack(len(body) + 4) + body


def _cstr(s: str) -> bytes:
    return s.encode("utf-8") + b"\x00"


def authentication_ok() -> bytes:
    return frame(b"R", _I32.pack(0))


def authentication_cleartext_password() -> bytes:
    return frame(b"R", _I32.pack(3))


def authentication_md5_password(salt: bytes) -> bytes:
    return frame(b"R", _I32.pack(5) + salt)


def authentication_sasl(mechanisms: Iterable[str]) -> bytes:
    return frame(b"R", _I32.pack(10) + b"".join(_cstr(m) for m in mechanisms) + b"\x00")


def authentication_sasl_continue(data: bytes) -> bytes:
    return frame(b"R", _I32.pack(11) + data)


def authentication_sasl_final(data: bytes) -> bytes:
    return frame(b"R", _I32.pack(12) + data)


def parameter_status(name: str, value: str) -> bytes:
    return frame(b"S", _cstr(name) + _cstr(value))


def backend_key_data(pid: int, secret: int) -> bytes:
    return frame(b"K", struct.pack("!II", pid, secret))


def negotiate_protocol_version(minor: int, unsupported: list[str]) -> bytes:
    return frame(b"v", _I32.pack(minor) + _I32.pack(len(unsupported)) + b"".join(map(_cstr, unsupported)))


def ready_for_query(status: bytes) -> bytes:
    """`status` is ``b"I"`` idle, ``b"T"`` in a transaction block or ``b"E"`` failed block."""
    return frame(b"Z", status)


def row_description(columns: list[ColumnDesc], formats: list[int]) -> bytes:
    parts = [_I16.pack(len(columns))]
    for col, fmt in zip(columns, formats, strict=True):
        parts.append(_cstr(col.name))
        parts.append(struct.pack("!IhIhih", col.table_oid, col.column_attr, col.type_oid, col.type_len,
                                 col.type_mod, fmt))
    return frame(b"T", b"".join(parts))


def data_row(cells: list[bytes | None]) -> bytes:
    parts = [_I16.pack(len(cells))]
    for cell in cells:
        if cell is None:
            parts.append(b"\xff\xff\xff\xff")
        else:
            parts.append(_I32.pack(len(cell)))
            parts.append(cell)
    return frame(b"D", b"".join(parts))


def command_complete(tag: str) -> bytes:
    return frame(b"C", _cstr(tag))


def empty_query_response() -> bytes:
    return frame(b"I")


def _fields(fields: dict[str, str | None]) -> bytes:
    return b"".join(code.encode() + _cstr(v) for code, v in fields.items() if v is not None) + b"\x00"


def error_response(severity: str, sqlstate: str, message: str, *, detail: str | None = None,
                   hint: str | None = None, position: int | None = None) -> bytes:
    fields = {"S": severity, "V": severity, "C": sqlstate, "M": message, "D": detail, "H": hint,
              "P": None if position is None else str(position)}
    return frame(b"E", _fields(fields))


def notice_response(message: str, *, severity: str = "NOTICE", sqlstate: str = "00000",
                    detail: str | None = None, hint: str | None = None) -> bytes:
    fields = {"S": severity, "V": severity, "C": sqlstate, "M": message, "D": detail, "H": hint}
    return frame(b"N", _fields(fields))


def parse_complete() -> bytes:
    return frame(b"1")


def bind_complete() -> bytes:
    return frame(b"2")


def close_complete() -> bytes:
    return frame(b"3")


def no_data() -> bytes:
    return frame(b"n")


def portal_suspended() -> bytes:
    return frame(b"s")


def copy_in_response(columns: int) -> bytes:
    """CopyInResponse for `columns` text-format columns."""
    return frame(b"G", b"\x00" + _I16.pack(columns) + _I16.pack(0) * columns)


def parameter_description(oids: list[int]) -> bytes:
    return frame(b"t", _I16.pack(len(oids)) + b"".join(struct.pack("!I", o) for o in oids))
