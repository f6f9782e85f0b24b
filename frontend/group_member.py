"""A frontend process's part in a frontend of several processes (``--processes``): what it answers
the others, and what it asks them, so that to a client the port is one server
(`frontend.pgwire.process_group` carries the requests).

- ``FLUSH`` returns once every statement acknowledged on the port is visible: the process running it
  records its own queue (`GroupCommit.drain`), then asks each other process to record its own
  (`DRAIN_REQUEST`), then waits for the checkpoint.
- ``SHOW PROCESSLIST`` and ``pg_stat_activity`` list the sessions of every process
  (`SESSIONS_REQUEST`). A process that does not answer within `LIST_TIMEOUT_S` is left out of the
  list (logged): a listing is for looking, and must not fail for one slow process.
- ``KILL pid`` of another process's session goes to that process (`KILL_REQUEST`), with the asking
  user and whether that user may cancel other users' statements, which the owner checks as for its
  own sessions.

The requests are blocking calls, made from statement threads only: a caller on an event loop
(`Session`'s inline paths) gets its own process's sessions, as two event loops waiting on each other
would never answer.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from frontend.catalog.table import SessionInfo
from frontend.pgwire.process_group import DRAIN_REQUEST, KILL_REQUEST, SESSIONS_REQUEST, ProcessGroup
from risingspark.errors import InternalError, RisingSparkError

if TYPE_CHECKING:
    from frontend.session import Frontend

logger = logging.getLogger(__name__)

DRAIN_TIMEOUT_S = 120.0  # a process records its queue (meta may be slow: it retries)
LIST_TIMEOUT_S = 5.0


class GroupMember:
    """`frontend`, process ``group.index`` of its group."""

    def __init__(self, frontend: Frontend, group: ProcessGroup) -> None:
        self.frontend = frontend
        self.group = group

    # ---- what the others ask ----------------------------------------------------------------------
    def answer(self, code: int, payload: Any) -> Any:
        """Answer another process's request (in a thread of the wire server)."""
        if code == DRAIN_REQUEST:
            self.frontend.dml.drain(DRAIN_TIMEOUT_S)
            return None
        if code == SESSIONS_REQUEST:
            return [dataclasses.asdict(info) for info in self.frontend.local_session_infos()]
        if code == KILL_REQUEST:
            self.frontend.kill_local(int(payload["pid"]), int(payload["user_id"]), bool(payload["may_cancel_others"]))
            return None
        raise InternalError(f"unknown request {code} of another process of this frontend")

    # ---- what this process asks -------------------------------------------------------------------
    def drain_others(self) -> None:
        """Every other process records in meta what it acknowledged (``FLUSH``), all at once."""
        others = self.group.others()
        if not others:
            return
        with ThreadPoolExecutor(len(others), thread_name_prefix="flush-others") as pool:
            asked = [(i, pool.submit(self.group.ask, i, DRAIN_REQUEST, None, DRAIN_TIMEOUT_S + 10)) for i in others]
        for index, future in asked:
            try:
                future.result()
            except RisingSparkError as e:
                raise type(e)(f"FLUSH: process {index} of this frontend could not record its statements: "
                              f"{e.message}") from None

    def others_session_infos(self) -> list[SessionInfo]:
        """The sessions of every other process (none when called on an event loop)."""
        if _on_event_loop():
            return []
        infos = []
        for index in self.group.others():
            try:
                infos += [SessionInfo(**d) for d in self.group.ask(index, SESSIONS_REQUEST, timeout=LIST_TIMEOUT_S)]
            except RisingSparkError as e:
                logger.warning("sessions of process %d of this frontend left out: %s", index, e.message)
        return infos

    def kill(self, pid: int, user_id: int, may_cancel_others: bool) -> bool:
        """``KILL pid`` of another process's session: True once that process cancelled it (raises
        its error); False for a process id of this process."""
        owner = self.group.owner(pid)
        if owner == self.group.index:
            return False
        self.group.ask(owner, KILL_REQUEST, {"pid": pid, "user_id": user_id, "may_cancel_others": may_cancel_others})
        return True


def _on_event_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True
