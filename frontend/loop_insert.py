"""A small INSERT of literal values run on the event loop, as a cached point query is
(`Session._point_query_inline`): the hop to a statement thread and back cost more than the statement.

Measured in-process (one session, ``INSERT INTO t VALUES ($1, $2)``, the log's fdatasync stubbed, a
quiet machine): the statement's own work took 188 µs when called directly, 473 µs through the event
loop and a pool thread — the two wake-ups between the threads were most of it.

The algorithm, for ``INSERT INTO t [(cols)] VALUES (...)`` of plain literals and ``$n`` parameters
(`frontend.parser.FastInsert`, the parse cached per text):

1. Only a statement of at most `MAX_TEXT` characters is taken (a bulk load's values take
   milliseconds to read). A single row of parameters and literals into integer and text columns is
   made as a tuple by the statement's cached `RowInsertPlan` (`frontend.row_insert`: 4x less CPU
   than the Arrow path, measured in-process); other rows are made as the thread path makes them
   (`frontend.handlers.dml.literal_rows`). Anything neither can take (an expression, a value that
   does not convert, a missing table or privilege, a NULL key) returns None, and the statement runs
   on a thread, which reports the exact error.
2. The group commit queues them without waiting (`GroupCommit.queue_rows`): a durable statement's
   rows are appended to the DML log, an asynchronous one's only queued. Where the commit would have to
   wait — no usable log, a full queue, a closing frontend — nothing is queued and the thread path runs.
3. The rows are queued only if nothing has to wait for a lock or the disk (a roll of the log's
   segment, a commit lock held by a thread): otherwise the thread path runs.
   A durable statement waits for its record's ``fdatasync``. While syncs are quick (`LoopSync`: their
   moving average under `INLINE_SYNC_S`), the sync runs on the loop itself, once for every statement
   queued in the same pass of the loop, as Redis syncs its append-only file before it answers
   (``appendfsync always``). When they are slow (a busy disk), or a thread leads a sync already, a
   thread syncs and the loop goes on. The average is of the syncs the loop ran itself: one that
   stalls (a writeback storm) holds the loop once, then syncs go to a thread, and after `PROBE_S` a
   pass syncs on the loop again to time the disk (twice as long after each slow probe, up to
   `MAX_PROBE_S`); a quick one brings them back. (Timed on a thread, a sync also counts the wait
   for the interpreter's lock after it, up to the switch interval while the loop answers other
   statements: measured, 1.1–1.3 ms a sync against 0.25–0.3 ms on the loop, which kept syncs on
   threads once the loop was busy, each statement waiting for three hand-offs between threads.)
   An asynchronous statement yields to the loop once (a client's run of them must not hold it).
4. A write stall of the table (`meta.compaction.write_stall`) is waited out on a thread, as on the
   thread path, under the statement timeout (`Session.wait_out_write_stall`).

``rw_implicit_flush`` (every write waits for its checkpoint) takes the thread path.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from frontend.dml_log import DmlLog
from frontend.dml_rows import Rows
from frontend.handlers import dml
from frontend.metrics import INSERT_DURATION, NODE, QUERY_ERRORS
from frontend.parser import INSERT_VALUES
from frontend.pgwire.api import StatementResult
from frontend.plan_cache import FullPlan, Plan
from frontend.row_insert import RowInsertPlan, plan_row_insert
from risingspark.chunk import Op
from risingspark.errors import InternalError, RisingSparkError

if TYPE_CHECKING:
    from frontend.plan_cache import PlanKey
    from frontend.session import Session
    from frontend.statements import FastInsert

logger = logging.getLogger(__name__)

# syncs averaging longer than this run on a thread: a sync on a thread costs its statements up to the
# interpreter's switch interval (5 ms by default) at each of its hand-offs once the loop is busy, so
# the loop syncs itself while a sync costs it less (measured, 16 connections, 80 % point queries and
# 20 % INSERTs: 3,400-3,470 statements/s with 1 ms here, where this VM's syncs, p90 1.6 ms, often
# averaged over it; 4,360-4,640/s with 5 ms)
INLINE_SYNC_S = 0.005
PROBE_S = 1.0  # while syncs run on a thread, a pass syncs on the loop after this long to time the disk again,
MAX_PROBE_S = 64.0  # and twice as long after each probe that found it slow (a probe holds the loop for its sync)
MAX_TEXT = 4096  # longer statements (bulk loads: reading their values takes milliseconds) run on a thread


class LoopSync:
    """Waits, on the event loop, for records of `log` to be on disk (see the module doc, step 3)."""

    def __init__(self, log: DmlLog, pool: Executor) -> None:
        self._log, self._pool = log, pool
        self._waiting: list[Callable[[BaseException | None], None]] = []  # the next pass's, scheduled
        self.sync_seconds = 0.0  # a moving average of the syncs run on the loop: how long one holds it
        self._probe_at = 0.0  # (monotonic) while that is slow, when a pass next syncs on the loop
        self._slow_probes = 0  # probes in a row that found the disk slow

    async def wait(self, seq: int) -> None:
        if self._log.synced(seq):
            return
        done = asyncio.get_running_loop().create_future()
        self.when_synced(seq, functools.partial(_settle, done))
        await done

    def when_synced(self, seq: int, then: Callable[[BaseException | None], None]) -> None:
        """Call `then` on the loop once record `seq` is on disk (at once when it is), with None, or
        the error that failed the sync."""
        if self._log.synced(seq):
            then(None)
        elif self.sync_seconds > INLINE_SYNC_S and time.monotonic() < self._probe_at:
            self._on_thread(seq, [then])
        else:
            self._waiting.append(then)
            if len(self._waiting) == 1:
                asyncio.get_running_loop().call_soon(self._sync_pass)

    def _sync_pass(self) -> None:
        waiting, self._waiting = self._waiting, []
        written = self._log.written
        if self._log.syncing:  # (a thread leads a sync: waiting for it would hold the loop)
            self._on_thread(written, waiting)
            return
        error: BaseException | None = None
        started = time.monotonic()
        try:
            self._log.sync(written)
        except Exception as e:  # noqa: BLE001 - every statement of the pass gets it
            error = e
        now = time.monotonic()
        took = now - started
        probe = self.sync_seconds > INLINE_SYNC_S
        # (a probe that finds the disk quick again brings the syncs back at once)
        self.sync_seconds = took if probe and took < self.sync_seconds \
            else self.sync_seconds + (took - self.sync_seconds) * 0.2
        if self.sync_seconds <= INLINE_SYNC_S:
            self._slow_probes = 0
        else:
            self._slow_probes += probe
            self._probe_at = now + min(PROBE_S * 2 ** self._slow_probes, MAX_PROBE_S)
        _call_all(waiting, error)

    def _on_thread(self, seq: int, waiting: list[Callable[[BaseException | None], None]]) -> None:
        on_thread = asyncio.get_running_loop().run_in_executor(self._pool, self._log.sync, seq)
        on_thread.add_done_callback(lambda f: _call_all(waiting, f.exception()))


def _call_all(waiting: list[Callable[[BaseException | None], None]], error: BaseException | None) -> None:
    for then in waiting:
        try:
            then(error)
        except Exception:  # (one statement's answer must not keep the others from theirs)
            logger.exception("answering a statement after the DML log's sync failed")


def _settle(done: asyncio.Future[None], error: BaseException | None) -> None:
    if done.done():  # (its statement was cancelled)
        return
    if error is None:
        done.set_result(None)
    else:
        done.set_exception(error)


async def insert_on_loop(session: Session, key: PlanKey, params: list[Any]) -> StatementResult | None:
    """The result of an INSERT of literals run on the event loop, or None (nothing done) when it must
    run on a thread (see the module doc)."""
    queued = _queue(session, key, params)
    if queued is None:
        return None
    if queued.seq:
        assert session.frontend.loop_sync is not None
        try:
            await session.frontend.loop_sync.wait(queued.seq)
        except Exception as e:
            raise _sync_failed(e) from e
    else:
        await asyncio.sleep(0)  # (nothing awaited: a client's run of statements must not hold the loop)
    if session.frontend.dml.stalled(queued.table_id):
        await session.wait_out_write_stall(queued.table_id)
    INSERT_DURATION.observe(time.monotonic() - queued.started)
    return queued.result


def insert_now(session: Session, key: PlanKey, params: list[Any]) -> StatementResult | None:
    """`insert_on_loop` for an execution the wire server answers as it arrives
    (`Session.answer_now`): the rows are queued here, and a durable statement's result is `ready`
    once its record is synced (one sync for every statement of the loop's pass, as in
    `insert_on_loop`, but without waking the connection's task three times on the way: the first
    wake-up for the message, the next for the sync's pass, the last for its end — each a pass of
    the loop, which under load answers other connections' statements first). A table whose writes
    are held (a write stall) is left to `insert_on_loop`, which waits it out. None: nothing queued."""
    frontend = session.frontend
    queued = _queue(session, key, params, unless_stalled=True)
    if queued is None:
        return None
    result, started = queued.result, queued.started
    if not queued.seq:
        INSERT_DURATION.observe(time.monotonic() - started)
        return result
    loop_sync, seq = frontend.loop_sync, queued.seq
    assert loop_sync is not None

    def ready(then: Callable[[BaseException | None], None]) -> None:
        def synced(error: BaseException | None) -> None:
            if error is None:
                INSERT_DURATION.observe(time.monotonic() - started)
            then(None if error is None else _sync_failed(error))
        loop_sync.when_synced(seq, synced)

    return replace(result, ready=ready)


@dataclass
class _Queued:
    result: StatementResult
    seq: int  # the DML log record to sync before answering (0: none, an asynchronous statement)
    table_id: int
    started: float


def _queue(session: Session, key: PlanKey, params: list[Any], unless_stalled: bool = False) -> _Queued | None:
    """The statement's rows queued for the group commit (steps 1 and 2 of the module doc), or None
    (nothing queued) where the thread path must run it; with `unless_stalled`, None too where the
    table's writes are held."""
    from frontend.session import _insert_template

    frontend = session.frontend
    if not frontend.meta.reads_locally() or session.vars.flag("rw_implicit_flush"):
        return None
    if len(key.text) > MAX_TEXT or not INSERT_VALUES.match(key.text):  # (a bulk INSERT, INSERT ... SELECT)
        return None
    template = _insert_template(key.text)
    if template is None:
        return None
    session.begin_inline_statement(key.text)
    try:
        made = _row(session, key, template, params) or _table_rows(session, key, template, params)
    except RisingSparkError:  # (the thread path raises it again, with its position in the text)
        return None
    if made is None:
        return None
    table_id, rows = made
    if unless_stalled and frontend.dml.stalled(table_id):
        return None
    started = time.monotonic()
    durable = session.vars.get("synchronous_commit") != "off"
    seq = frontend.dml.queue_rows(table_id, rows, durable, wait=False)
    if seq is None:
        return None
    return _Queued(StatementResult(f"INSERT 0 {rows.num_rows}"), seq, table_id, started)


def _sync_failed(e: BaseException) -> InternalError:
    QUERY_ERRORS.labels(NODE, "insert").inc()
    return InternalError(f"could not sync the DML log ({e}); the statement's rows may still be recorded")


def _row(session: Session, key: PlanKey, template: FastInsert, params: list[Any]) -> tuple[int, Rows] | None:
    """The statement's row by its `RowInsertPlan` (made and cached at the first execution of a
    statement with parameters), or None: it has none, or the Arrow path must decide this row
    (`frontend.row_insert`)."""
    plans = session.frontend.plans
    version = session.frontend.meta.catalog_snapshot().version
    if not params:  # (literals alone: a new text each time, not kept)
        plan: Plan | None = plan_row_insert(session, template, version)
    else:
        plan = plans.get(key, version)
        if plan is None:
            plan = plan_row_insert(session, template, version) or FullPlan(version)
            plans.put(key, plan)
    if not isinstance(plan, RowInsertPlan):
        return None
    rows = plan.rows(params, key.param_oids)
    return (plan.table_id, rows) if rows is not None else None


def _table_rows(session: Session, key: PlanKey, template: FastInsert,
                params: list[Any]) -> tuple[int, pa.Table] | None:
    """The statement's rows as an Arrow table (`frontend.handlers.dml.literal_rows`), or None."""
    from frontend.session import substitute_params

    stmt = template if not params else \
        replace(template, values_text=substitute_params(template.values_text, params, list(key.param_oids)))
    if len(stmt.values_text) > MAX_TEXT:  # (long parameters)
        return None
    made = dml.literal_rows(session, stmt)
    if made is None:
        return None
    rel, table = made
    return rel.id, dml.with_change_columns(table, np.full(table.num_rows, int(Op.INSERT), np.int8))
