"""The COPY FROM STDIN sub-protocol: CopyInResponse, then CopyData until CopyDone or CopyFail.

Flush and Sync are ignored during the copy, as Postgres does; any other message ends it with a
protocol violation. An error while loading ends the copy at once; the CopyData still in flight is
then ignored by the connection's message loop.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from risingspark.errors import ProtocolViolation

from . import backend as be
from . import messages as m
from .api import CopyIn, StatementResult

if TYPE_CHECKING:
    from .connection import Connection

logger = logging.getLogger(__name__)


async def copy_in(conn: Connection, spec: CopyIn) -> StatementResult:
    """Receive a COPY's data from the client; returns the statement's final result."""
    conn.sink.send(be.copy_in_response(spec.columns))
    await conn.sink.flush()
    received = 0
    while True:
        msg = await conn.messages.read()
        if isinstance(msg, m.CopyData):
            received += len(msg.data)
            await spec.write(msg.data)
        elif isinstance(msg, m.CopyDone):
            logger.debug("connection %d: COPY received %d bytes", conn.pid, received)
            return await spec.finish()
        elif isinstance(msg, m.CopyFail):
            await spec.abort(msg.message)
            raise ProtocolViolation("COPY was aborted by the client")
        elif isinstance(msg, m.Flush | m.Sync):
            continue
        else:
            raise ProtocolViolation(f"unexpected message {type(msg).__name__} during COPY from stdin")
