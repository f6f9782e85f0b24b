"""Several processes serving one port: what each must know of the others.

One Python process serves its connections on one core: its event loop reads every message and
answers most small statements itself (`frontend.pgwire.server`), and the interpreter lock keeps
that to one core whatever the number of connections. PostgreSQL runs a process per connection;
uvicorn and gunicorn run several workers on one port. A frontend started with ``--processes N``
does the latter (`frontend.processes`): each process binds the port with ``SO_REUSEPORT``, and
Linux spreads incoming connections over the sockets bound to it (by a hash of the connection's
addresses). Each process is a frontend of its own — its own sessions, caches, DML log, node in
meta — so the group shares only what a client of the port must see as one server:

- **Process ids** (BackendKeyData). Process ``i`` of ``n`` numbers its connections ``i + 1``,
  ``i + 1 + n``, ``i + 1 + 2n``, ...: unique in the group, and the id names the process that serves
  it (`ProcessGroup.owner`).
- **CancelRequest.** A client sends it on a new connection, which the kernel may give to any
  process. One naming another process's connection is passed on, as the same 16 bytes, to that
  process's Unix socket in the group's directory (`ProcessGroup.forward_cancel`); the owner checks
  the secret as for a request of its own. Only the group's processes can reach the sockets (the
  directory is the supervisor's, mode 0700).
- **FLUSH** returns once every statement acknowledged on the port is visible: the process that runs
  it first asks each other one to record in meta what its DML log and queue hold, as a single
  frontend drains its own; ``SHOW PROCESSLIST`` and ``pg_stat_activity`` list the sessions of every
  process, and ``KILL`` reaches any of them — each a request over the same sockets
  (`ProcessGroup.ask`, answered by `frontend.group_member`).
- **max_connections** counts the group's connections, not each process's (`SharedConnectionSlots`):
  a file in the group's directory holds one count per process, read and updated under ``flock``
  when a connection starts (a few microseconds, once per connection). A process writes only its own
  count, and starts by zeroing it, so a restarted process does not inherit a dead one's connections.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import itertools
import json
import logging
import os
import socket
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from risingspark.errors import InternalError, RisingSparkError

from .connection import ConnectionSlots
from .messages import CANCEL_REQUEST_CODE

logger = logging.getLogger(__name__)

FORWARD_TIMEOUT_S = 5.0
ASK_TIMEOUT_S = 10.0
MAX_REQUEST_BYTES = 1 << 20
# What the group's sockets take besides a CancelRequest (as a client sends it): a request of the
# group, a length and a code like a startup packet's (no PostgreSQL packet has these codes) and a
# JSON payload, answered with ``{"result": ...}`` or ``{"error": ...}`` (`RisingSparkError.to_json`)
# by the process's `frontend.group_member.GroupMember`.
DRAIN_REQUEST = 80877199  # record in meta what the process acknowledged (a FLUSH elsewhere)
SESSIONS_REQUEST = 80877198  # the process's sessions (SHOW PROCESSLIST, pg_stat_activity elsewhere)
KILL_REQUEST = 80877197  # cancel a session's statement (a KILL elsewhere)
REQUESTS = (DRAIN_REQUEST, SESSIONS_REQUEST, KILL_REQUEST)
_COUNT = struct.Struct("<q")
_HEAD = struct.Struct("!ii")


@dataclass(frozen=True)
class ProcessGroup:
    """Process `index` of the `count` processes serving one port; `directory` is the group's (its
    Unix sockets and the connection counts)."""

    index: int
    count: int
    directory: Path

    def __post_init__(self) -> None:
        if not 0 <= self.index < self.count:
            raise ValueError(f"process index {self.index} is not one of {self.count} processes")

    def pids(self) -> Iterator[int]:
        """This process's connection ids: ``index + 1``, then every `count`-th."""
        return itertools.count(self.index + 1, self.count)

    def owner(self, pid: int) -> int:
        """The index of the process whose connection `pid` is (any positive id names one)."""
        return (pid - 1) % self.count

    def socket_path(self, index: int) -> str:
        """Where process `index` takes the others' requests (and the CancelRequests they pass on)."""
        return str(self.directory / f"process-{index}.sock")

    def others(self) -> list[int]:
        return [i for i in range(self.count) if i != self.index]

    def ask(self, index: int, code: int, payload: Any = None, timeout: float = ASK_TIMEOUT_S) -> Any:
        """Send process `index` the request `code` (one of `REQUESTS`) with `payload` (JSON) and
        return its answer (blocking: call it from a thread, never from an event loop, where two
        processes asking each other would wait for each other).

        Raises:
            RisingSparkError: the error the process answered with, or InternalError when it could
                not be reached or did not answer within `timeout`.
        """
        body = json.dumps(payload).encode()
        path = self.socket_path(index)
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                sock.settimeout(timeout)
                sock.connect(path)
                sock.sendall(_HEAD.pack(_HEAD.size + len(body), code) + body)
                answer = b""
                while chunk := sock.recv(1 << 16):
                    answer += chunk
            reply = json.loads(answer)
        except (OSError, ValueError) as e:
            raise InternalError(f"process {index} of this frontend ({path}) did not answer: {e}") from None
        if "error" in reply:
            raise RisingSparkError.from_json(reply["error"])
        return reply.get("result")

    def slots(self, limit: int) -> SharedConnectionSlots:
        return SharedConnectionSlots(limit, self.directory / "connections", self.index, self.count)

    async def forward_cancel(self, pid: int, secret: int) -> None:
        """Pass a CancelRequest for `pid` to the process that serves it, and wait until that
        process handled it (it closes the socket). Failures are logged: a cancel is advisory, and
        the client that sent it waits for nothing."""
        path = self.socket_path(self.owner(pid))
        try:
            async with asyncio.timeout(FORWARD_TIMEOUT_S):
                reader, writer = await asyncio.open_unix_connection(path)
                try:
                    writer.write(_HEAD.pack(16, CANCEL_REQUEST_CODE) + struct.pack("!II", pid, secret))
                    await writer.drain()
                    await reader.read(1)  # (EOF once the owner handled it)
                finally:
                    writer.close()
        except (OSError, TimeoutError) as e:
            logger.warning("cancel request for backend %d: process %d of this frontend (%s) did not take it: %s",
                           pid, self.owner(pid), path, e)


class SharedConnectionSlots(ConnectionSlots):
    """`ConnectionSlots` counted over every process of a group: the file at `path` holds one
    little-endian int64 per process, this one's at `index`, read and written under ``flock``."""

    def __init__(self, limit: int, path: Path, index: int, count: int) -> None:
        super().__init__(limit)
        self._index, self._count = index, count
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        with self._locked():
            self._write()  # (zero: a process starting anew serves nothing yet)

    def take(self, pid: int) -> bool:
        with self._locked():
            if self.limit > 0 and self._others() + len(self._taken) >= self.limit:
                return False
            self._taken.add(pid)
            self._write()
        return True

    def give_back(self, pid: int) -> None:
        if pid in self._taken:
            with self._locked():
                self._taken.discard(pid)
                self._write()

    def group_total(self) -> int:
        """Connections the whole group serves now."""
        with self._locked():
            return self._others() + len(self._taken)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            with self._locked():
                self._taken.clear()
                self._write()
            os.close(self._fd)

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(self._fd, fcntl.LOCK_UN)

    def _others(self) -> int:
        data = os.pread(self._fd, _COUNT.size * self._count, 0).ljust(_COUNT.size * self._count, b"\0")
        counts = [c for (c,) in _COUNT.iter_unpack(data)]
        return sum(counts) - counts[self._index]

    def _write(self) -> None:
        os.pwrite(self._fd, _COUNT.pack(len(self._taken)), _COUNT.size * self._index)
