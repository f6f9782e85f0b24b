"""Frontend sessions: one per connection, implementing the wire server's `PgSession`.

Statements run on a thread pool (they wait on meta, storage and DuckDB), so the event loop keeps
serving other connections, cancel requests included. Statements auto-commit; BEGIN/COMMIT/ROLLBACK
are accepted and only tracked for the client's transaction status. The frontend lists its sessions
(SHOW PROCESSLIST, `pg_stat_activity`, KILL) by their BackendKeyData process id.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import functools
import logging
import os
import re
import threading
import time
from collections.abc import AsyncIterator, Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from decimal import Decimal
from typing import TYPE_CHECKING, Any, cast

import pyarrow as pa
import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError

from frontend.batch import BatchEngine, QueryContext
from frontend.batch_types import ResultTypes, result_types
from frontend.binder import CatalogReader
from frontend.catalog.oids import PG_TYPES_BY_OID
from frontend.catalog.rewrite import RewriteContext, name_outputs
from frontend.catalog.system import SessionInfo, SystemContext, system_table
from frontend.dialect import whole_intervals
from frontend.distributed import DistributedRunner
from frontend.dml_commit import GroupCommit
from frontend.dml_log import DmlLog
from frontend.handlers import alter, commands, copy, ddl, dml, functions, indexes, query, users
from frontend.key_query import KeyQuery, match_key_query
from frontend.loop_insert import LoopSync, insert_now, insert_on_loop
from frontend.metrics import KEY_QUERIES, NODE, QUERY_DURATION, QUERY_ERRORS, SELECT_DURATION, statement_kind
from frontend.output_oids import REGTYPE, TEXT, described_oid
from frontend.parser import (
    DIALECT,
    AlterParallelismStmt,
    AlterRateLimitStmt,
    AlterSystemStmt,
    CancelJobsStmt,
    CommentStmt,
    CopyStmt,
    CreateIndexStmt,
    DiscardAllStmt,
    ExplainStmt,
    FastInsert,
    FlushStmt,
    IgnoredStmt,
    KillStmt,
    RenameStmt,
    ResetStmt,
    SetStmt,
    ShowProcesslistStmt,
    ShowStmt,
    SqlStmt,
    Statement,
    TransactionStmt,
    WaitStmt,
    parse_statement,
    split_statements,
)
from frontend.pgwire.api import ColumnDesc, ConnectionInfo, StatementResult
from frontend.pgwire.row_stream import RowStream
from frontend.pgwire.time_zone import display_zone
from frontend.plan_cache import ConstantPlan, FullPlan, KeyPlan, Plan, PlanCache, PlanKey
from frontend.positions import locate_error
from frontend.privileges import PrivilegeChecker
from frontend.row_insert import RowInsertPlan
from frontend.session_vars import SessionVars, duration_ms
from frontend.statements import (
    AlterOwnerStmt,
    AlterUserStmt,
    CreateFunctionStmt,
    CreateUserStmt,
    DropFunctionStmt,
    DropUserStmt,
    GrantStmt,
    RevokeStmt,
)
from risingspark.catalog import DEFAULT_DATABASE, DEFAULT_USER
from risingspark.errors import (
    FeatureNotSupported,
    InsufficientPrivilege,
    InvalidAuthorizationSpecification,
    InvalidCatalogName,
    InvalidSchemaName,
    QueryCanceled,
    RisingSparkError,
    SyntaxError_,
    UndefinedColumn,
    UndefinedFunction,
    UndefinedObject,
    UndefinedTable,
)
from risingspark.storage.desc import HummockVersion
from risingspark.storage.object_store import ObjectStore
from risingspark.storage.point_get import WouldRead
from risingspark.types import DataType, TypeName
from risingspark.users import DEFAULT_SUPER_USER_ID

if TYPE_CHECKING:
    from frontend.group_member import GroupMember
    from meta.catalog import CatalogSnapshot

logger = logging.getLogger(__name__)
# what a statement raises for a name the catalog does not have
_MISSING_OBJECT = (UndefinedTable, UndefinedColumn, UndefinedFunction, UndefinedObject, InvalidSchemaName,
                   InvalidCatalogName)


class Frontend:
    """What every session of a frontend shares: meta, the object store and the batch engine.

    `password_method` is how CREATE/ALTER USER store a password (``scram-sha-256`` or ``md5``, the
    frontend's authentication method)."""

    def __init__(self, meta: Any, store: ObjectStore, *, cache_bytes: int = 1 << 30, workers: int = 64,
                 password_method: str = "scram-sha-256", distributed: DistributedRunner | None = None,
                 dml_log_dir: str | os.PathLike[str] | None = None, dml_flush_delay_s: float | None = None) -> None:
        self.meta = meta
        # this process's part in a frontend of several (`frontend.group_member`); None: of one process
        self.group: GroupMember | None = None
        self.distributed = distributed  # runs queries in distributed mode (None: local mode only)
        self.store = store
        self.engine = BatchEngine(store, cache_bytes)
        self.pool = ThreadPoolExecutor(workers, thread_name_prefix="frontend")
        # key queries hold the interpreter lock but while they read blocks: two threads, one computing
        # while the other waits on a read (16 clients' point queries, 6 s of an ad hoc loop: 460/s on the shared
        # pool, 600/s on two threads, 710/s on one, which a cold read would hold up for every query)
        self.key_pool = ThreadPoolExecutor(2, thread_name_prefix="frontend-key")
        self.password_method = password_method
        self.plans = PlanCache()
        # client statements' output types as the binder gives them (`Session.statement_types`)
        self.statement_types: dict[tuple, ResultTypes | None] = {}
        self.statement_types_lock = threading.Lock()
        # with a DML log, acknowledged statements meta had not recorded at a crash are queued first
        log = DmlLog(dml_log_dir) if dml_log_dir else None
        self.dml = GroupCommit(meta, store, log, dml_flush_delay_s)
        try:
            self.dml.replay()
        except BaseException:
            self.dml.close()  # (and the log: its lock would hold it until the process ends)
            raise
        self.loop_sync = LoopSync(log, self.pool) if log is not None else None  # (`frontend.loop_insert`)
        self.sessions: dict[int, Session] = {}  # by process id
        self._sessions_lock = threading.Lock()

    def new_session(self) -> Session:
        return Session(self)

    def register(self, session: Session) -> None:
        with self._sessions_lock:
            self.sessions[session.pid] = session

    def unregister(self, session: Session) -> None:
        with self._sessions_lock:
            if self.sessions.get(session.pid) is session:
                del self.sessions[session.pid]

    def session_infos(self) -> list[SessionInfo]:
        """Every connected session, by process id: of the frontend's every process."""
        infos = self.local_session_infos()
        if self.group is not None:
            infos = sorted(infos + self.group.others_session_infos(), key=lambda i: i.pid)
        return infos

    def local_session_infos(self) -> list[SessionInfo]:
        """The sessions of this process, by process id."""
        with self._sessions_lock:
            sessions = sorted(self.sessions.values(), key=lambda s: s.pid)
        return [s.info() for s in sessions]

    def kill(self, pid: int, user_id: int, may_cancel_others: bool) -> None:
        """Cancel the statement of session `pid` (of any process of the frontend) for the user
        `user_id`, who may cancel other users' statements or not (as PostgreSQL's
        ``pg_cancel_backend``)."""
        if self.group is None or not self.group.kill(pid, user_id, may_cancel_others):  # (an id of this process)
            self.kill_local(pid, user_id, may_cancel_others)

    def kill_local(self, pid: int, user_id: int, may_cancel_others: bool) -> None:
        target = self.sessions.get(pid)
        if target is None:
            raise UndefinedObject(f"no session with process id {pid}")
        if target.user_id != user_id and not may_cancel_others:
            raise InsufficientPrivilege("must be a member of the role whose query is being canceled or member of "
                                        "pg_signal_backend")
        target.cancel()

    def close(self) -> None:
        self.dml.close()
        self.pool.shutdown(wait=False, cancel_futures=True)
        self.key_pool.shutdown(wait=False, cancel_futures=True)
        self.engine.close()


class Session:
    def __init__(self, frontend: Frontend) -> None:
        self.frontend = frontend
        self.vars = SessionVars()
        # the client statement running (its text and parameter types: `statement_types`), None between
        self.statement_form: tuple[str, tuple[int, ...]] | None = None
        self.user = DEFAULT_USER
        self.user_id = DEFAULT_SUPER_USER_ID
        self.database = DEFAULT_DATABASE
        self.cancel_event = threading.Event()
        self._cancel_lock = threading.Lock()
        self._statement_seq = 0  # (a statement timer that fires late cancels nothing)
        self._cancel_shared = False  # `cancel_event` is also a stream's (`stream_batch`)
        self.pid = 0
        self.host = "local"
        self.started_at = time.time()
        self.query: str | None = None
        self.query_started_at: float | None = None

    def info(self) -> SessionInfo:
        return SessionInfo(self.pid, self.user, self.host, self.database, self.vars.get("application_name"),
                           self.started_at, self.query_started_at, self.query)

    # ---- PgSession --------------------------------------------------------------------------------
    def bind_connection(self, info: ConnectionInfo) -> None:
        """The wire server's connection: its process id names this session in SHOW PROCESSLIST."""
        self.pid = info.pid
        self.host = info.host
        self.frontend.register(self)

    async def startup(self, params: dict[str, str]) -> dict[str, str]:
        self.user = params.get("user") or DEFAULT_USER
        self.database = params.get("database") or self.user
        # (on the pool: reading the catalog may ask meta, which blocks)
        snap = await asyncio.get_running_loop().run_in_executor(self.frontend.pool, self._startup_catalog)
        user = snap.user(self.user)
        if user is None:
            raise InvalidAuthorizationSpecification(f'role "{self.user}" does not exist')
        if not user.can_login:
            raise InvalidAuthorizationSpecification(f'role "{self.user}" is not permitted to log in')
        self.user_id = user.id
        if snap.database(self.database) is None:
            raise InvalidCatalogName(f'database "{self.database}" does not exist')
        if params.get("application_name"):
            self.vars.set_startup("application_name", params["application_name"])
        zone = params.get("TimeZone") or params.get("timezone")  # (pgjdbc sends the JVM's; libpq PGTZ)
        if zone:
            with contextlib.suppress(RisingSparkError):  # (one we cannot read keeps UTC: no refused connection)
                self.vars.set_startup("timezone", zone)
        for opt in re.findall(r"-c\s*([^=\s]+)=(\S+)", params.get("options", "")):
            self.vars.set_startup(opt[0], opt[1])
        return {**self.vars.reported(), "session_authorization": self.user}

    def _startup_catalog(self) -> CatalogSnapshot:
        """The catalog a new session starts with: asked again when it lacks the user or database
        (made through another frontend a moment ago?)."""
        meta = self.frontend.meta
        mark = meta.statement_mark()
        snap = meta.catalog_snapshot()
        if (snap.user(self.user) is None or snap.database(self.database) is None) and meta.catalog_moved_since(mark):
            snap = meta.catalog_snapshot()
        return snap

    async def execute_simple(self, sql: str) -> AsyncIterator[StatementResult]:
        offset = 0
        for text in split_statements(sql):
            if not text:
                yield StatementResult("", empty=True)
                continue
            start = sql.find(text, offset)
            offset = start + len(text) if start >= 0 else offset
            yield await self._execute(text, max(start, 0), [], [])

    async def describe(self, sql: str, param_oids: list[int]) -> tuple[list[int], list[ColumnDesc] | None]:
        oids, text = describe_form(sql, param_oids)
        stmt = parse_statement(text) if text.strip() else None
        self._begin_statement()
        self.statement_form = (sql, tuple(param_oids))
        if isinstance(stmt, SqlStmt) and isinstance(stmt.ast, exp.Select | exp.Union):
            return oids, columns_of(await self._in_thread(self.result_schema, stmt.ast))
        if isinstance(stmt, ShowStmt):
            result = await self._in_thread(self._dispatch, stmt)
            return oids, result.columns
        return oids, None

    async def execute(self, sql: str, param_oids: list[int], params: list[Any]) -> StatementResult:
        return await self._execute(sql, 0, param_oids, params)

    def cancel(self) -> None:
        self.cancel_event.set()

    async def close(self) -> None:
        self.cancel_event.set()
        self.frontend.unregister(self)

    # ---- running statements ----------------------------------------------------------------------
    def _plan_key(self, text: str, param_oids: list[int]) -> PlanKey:
        return PlanKey(text, tuple(param_oids), self.database, self.user, self.vars.search_path_key(), self.user_id,
                       self.time_zone)

    async def _execute(self, text: str, offset: int, param_oids: list[int], params: list[Any]) -> StatementResult:
        """Run one statement (`text`, with ``$n`` placeholders for `params`); `offset` is where it
        starts in the client's query string (for error positions).

        A statement whose plan is a constant result is answered here, on the event loop, and so are a
        point query whose blocks are cached (`_point_query_inline`) and an INSERT of literals
        (`frontend.loop_insert`); every other runs on the thread pool (`_run_planned`)."""
        key = self._plan_key(text, param_oids)
        plan = self.frontend.plans.last(key)
        if isinstance(plan, ConstantPlan):
            return self._constant(text, plan)
        pool = self.frontend.pool
        if isinstance(plan, KeyPlan):
            result = self._point_query_inline(key, plan, params)
            if result is not None:
                return result
            # key queries run on a small pool of their own (`Frontend.key_pool`): more of them at
            # once would only trade the interpreter lock back and forth
            pool = self.frontend.key_pool
        elif _INSERT.match(text):
            inserted = await insert_on_loop(self, key, params)
            if inserted is not None:
                return inserted
        return await self._run(key, offset, params, pool)

    def answer_now(self, text: str, param_oids: list[int], params: list[Any]) -> StatementResult | None:
        """The result `execute` gives, when it is one answered on the event loop without waiting: a
        constant, a point query whose blocks are cached (`_point_query_inline`), a single-row INSERT
        (`frontend.loop_insert.insert_now`: its result is `ready` once its rows are durable); else
        None (then `execute`). For the wire server, which answers such an execution as it arrives."""
        key = self._plan_key(text, param_oids)
        plan = self.frontend.plans.last(key)
        if isinstance(plan, ConstantPlan):
            return self._constant(text, plan)
        if isinstance(plan, KeyPlan):
            return self._point_query_inline(key, plan, params)
        if isinstance(plan, RowInsertPlan):
            return insert_now(self, key, params)
        return None

    def _constant(self, text: str, plan: ConstantPlan) -> StatementResult:
        self._begin_statement()
        self.query, self.query_started_at = text, None
        SELECT_DURATION.observe(0.0)
        return plan.result()

    def begin_inline_statement(self, text: str) -> None:
        """A statement run on the event loop begins (`frontend.loop_insert`)."""
        self._begin_statement()
        self.query, self.query_started_at = text, None

    async def wait_out_write_stall(self, table_id: int) -> None:
        """Wait on a thread while writes into `table_id` are held, for a statement run on the event
        loop, as the thread path waits: shown as running, cut short by a cancel or the statement
        timeout (the rows are durable: the statement then succeeds, as on the thread path)."""
        self.query_started_at = time.time()
        timer = self._statement_timer(self._statement_seq)
        try:
            await self._in_thread(dml.wait_while_stalled, self, table_id)
        finally:
            if timer is not None:
                timer.cancel()
            self.query_started_at = None

    def _point_query_inline(self, key: PlanKey, plan: KeyPlan, params: list[Any]) -> StatementResult | None:
        """The result of a point query (one full key: at most one row) answered on the event loop,
        or None when it must run on a thread: its plan is not a current key plan, it looks up a
        prefix (up to every vnode), or a block or SST index it needs is not cached
        (`BlockReader.cached_only`). A cached lookup costs tens of microseconds; the hop to a thread
        and back cost more than the lookup (a point query ~1.35x faster inline, measured)."""
        meta = self.frontend.meta
        if not meta.reads_locally():  # (the catalog or a pin would ask meta: never on the event loop)
            return None
        if plan.catalog_version != meta.catalog_snapshot().version:
            return None
        values = plan.query.key_values(params)
        if values is None or len(values) != len(plan.query.desc.pk):
            return None
        started = time.monotonic()
        self._begin_statement()
        self.query, self.query_started_at = key.text, None
        try:
            with self.frontend.engine.reader.blocks.cached_only():
                result = self._run_key_query(plan.query, values)
        except WouldRead:
            return None
        except Exception:
            QUERY_ERRORS.labels(NODE, "select").inc()
            raise
        KEY_QUERIES.inc()
        SELECT_DURATION.observe(time.monotonic() - started)
        return result

    async def _run(self, key: PlanKey, offset: int, params: list[Any], pool: ThreadPoolExecutor) -> StatementResult:
        seq = self._begin_statement()
        started, run = time.monotonic(), _Running(key.text)
        self.query, self.query_started_at = key.text, time.time()
        timer = self._statement_timer(seq)
        result = None
        try:
            future = pool.submit(self._run_current, key, params, run)
            try:
                result = await asyncio.wrap_future(future)
            except asyncio.CancelledError:
                future.add_done_callback(_close_orphaned_stream)  # (the connection went: nobody sends it)
                raise
            if self.cancel_event.is_set() and not result.tag:
                raise QueryCanceled("canceling statement due to user request")
        except QueryCanceled:
            QUERY_ERRORS.labels(NODE, run.kind).inc()
            if timer is not None and timer.fired:
                raise QueryCanceled("canceling statement due to statement timeout") from None
            raise
        except Exception as e:
            QUERY_ERRORS.labels(NODE, run.kind).inc()
            if isinstance(e, RisingSparkError) and e.position is None and not run.substituted:
                pos = locate_error(run.text, e)
                e.position = None if pos is None else offset + pos
            raise
        finally:
            if timer is not None and result is not None and isinstance(result.rows, RowStream):
                # the timeout covers the rows sent after: the stream stops the timer when it closes
                result.rows.on_close(timer.cancel)
                result.rows.on_suspend(timer.cancel)  # (a portal's later Executes run without it)
                result.rows.translate = functools.partial(_timed_out, timer)
            elif timer is not None:
                timer.cancel()
            QUERY_DURATION.labels(NODE, run.kind).observe(time.monotonic() - started)
            self.query_started_at = None
        return result

    def _run_current(self, key: PlanKey, params: list[Any], run: _Running) -> StatementResult:
        """`_run_planned`, once more when the statement named an object this frontend's copy of the
        catalog did not have, the catalog has moved since it started (the object made through
        another frontend a few milliseconds ago: `meta.client`) and it changed nothing through meta
        (`MetaClient.catalog_moved_since`)."""
        mark = self.frontend.meta.statement_mark()
        try:
            return self._run_planned(key, params, run)
        except _MISSING_OBJECT:
            if not self.frontend.meta.catalog_moved_since(mark):
                raise
        return self._run_planned(key, params, run)

    def _run_planned(self, key: PlanKey, params: list[Any], run: _Running) -> StatementResult:
        """Run a statement by its cached plan, compiling it first when the cache has none for the
        current catalog version (`frontend.plan_cache`)."""
        plans = self.frontend.plans
        version = self.frontend.meta.catalog_snapshot().version
        plan = plans.get(key, version)
        stmt = None
        self.statement_form = (key.text, key.param_oids)
        if plan is None:
            plan, stmt, result = self._compile(key, version)
            if _MAY_BE_FAST.match(key.text) and len(key.text) <= MAX_CACHED_TEXT:
                plans.put(key, plan)
            if result is not None:
                run.kind = "select"
                return result
        if isinstance(plan, KeyPlan):
            run.kind = "select"
            values = plan.query.key_values(params)
            if values is not None:
                KEY_QUERIES.inc()
                return self._run_key_query(plan.query, values)
        if stmt is None or params:
            text = substitute_params(key.text, params, list(key.param_oids))
            run.substituted = text != key.text
            stmts = split_statements(text)
            if len(stmts) > 1:
                raise FeatureNotSupported("cannot insert multiple commands into a prepared statement")
            if not stmts[0]:
                return StatementResult("", empty=True)
            run.text = stmts[0]
            stmt = (params and self._cached_insert(key, params, run.text)) or parse_statement(run.text)
        run.kind = statement_kind(stmt)
        return self._dispatch(stmt)

    @staticmethod
    def _cached_insert(key: PlanKey, params: list[Any], text: str) -> FastInsert | None:
        """A parameterized ``INSERT ... VALUES`` for the fast path, parsed once per text: the
        values with the parameters substituted. None for any other statement."""
        template = _insert_template(key.text) if _INSERT.match(key.text) else None
        if template is None:
            return None
        values = substitute_params(template.values_text, params, list(key.param_oids))
        return replace(template, values_text=values, text=text)

    def _compile(self, key: PlanKey, version: int) -> tuple[Plan, Statement | None, StatementResult | None]:
        """The plan of a statement not in the cache; the statement parsed when it was (without
        parameters, so the first execution need not parse it again); the result of a constant
        SELECT, which compiling it computed."""
        stmts = split_statements(key.text) if _MAY_BE_FAST.match(key.text) else []
        if len(stmts) != 1:
            return FullPlan(version), None, None
        try:
            stmt = parse_statement(stmts[0])
        except RisingSparkError:
            return FullPlan(version), None, None
        if not isinstance(stmt, SqlStmt):
            return FullPlan(version), stmt if not key.param_oids else None, None
        if not key.param_oids and _is_constant_select(stmt.ast):
            result = self._dispatch(stmt)
            return ConstantPlan(result.tag, result.columns, result.rows), None, result
        # (a key plan is cached per user and catalog version: checked here, it is checked for good)
        self.check_reads(stmt.ast)
        query = match_key_query(stmt.ast, self.catalog_reader())
        if query is not None and query.takes(key.param_oids):
            return KeyPlan(query, version), None, None
        return FullPlan(version), stmt if not key.param_oids else None, None

    def _run_key_query(self, query: KeyQuery, values: list[Any]) -> StatementResult:
        meta = self.frontend.meta
        version = meta.pin_version()
        try:
            result = query.run(self.frontend.engine.reader, version, values)
        finally:
            meta.unpin_version(version)
        if self.cancel_event.is_set():  # (a prefix of the key may have looked up every vnode)
            raise QueryCanceled("canceling statement due to user request")
        return result

    def _begin_statement(self) -> int:
        """A new statement: a cancel request or a timeout of the one before no longer applies. When
        the one before handed its event to a stream still open (a portal's rows left for a later
        Execute), the new statement gets an event of its own: cancelling it must not stop those rows."""
        self.statement_form = None
        with self._cancel_lock:
            self._statement_seq += 1
            if self._cancel_shared:
                self.cancel_event = threading.Event()
                self._cancel_shared = False
            else:
                self.cancel_event.clear()
            return self._statement_seq

    def _time_out(self, seq: int) -> bool:
        """The statement timeout of statement `seq` fired: cancel it, if it still runs."""
        with self._cancel_lock:
            if seq != self._statement_seq:
                return False
            self.cancel_event.set()
            return True

    def _statement_timer(self, seq: int) -> _StatementTimer | None:
        """With ``statement_timeout`` set, a timer that cancels the statement when it fires: every
        place that honours a cancel request (DuckDB's batch queries, waits for a foreground backfill, for
        a write stall, a FLUSH) stops the statement, which fails with 57014 as PostgreSQL's."""
        ms = duration_ms(self.vars.get("statement_timeout"))
        if ms <= 0:
            return None
        timer = _StatementTimer(ms / 1000, lambda: self._time_out(seq))
        timer.start()
        return timer

    async def _in_thread(self, fn, *args):
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.frontend.pool, fn, *args)

    async def run_in_thread(self, fn, *args):
        """Run blocking work (storage, meta, DuckDB) on the frontend's thread pool."""
        return await self._in_thread(fn, *args)

    def _dispatch(self, stmt: Statement) -> StatementResult:
        if isinstance(stmt, SqlStmt):
            return self._dispatch_sql(stmt)
        if isinstance(stmt, FastInsert):
            return self._after_dml(dml.insert_fast(self, stmt))
        if isinstance(stmt, ShowProcesslistStmt):
            return commands.show_processlist(self)
        if isinstance(stmt, KillStmt):
            return commands.kill(self, stmt)
        if isinstance(stmt, CommentStmt):
            return commands.comment_on(self, stmt)
        if isinstance(stmt, CopyStmt):
            return copy.copy_from(self, stmt)
        if isinstance(stmt, CreateIndexStmt):
            return indexes.create_index(self, stmt)
        if isinstance(stmt, RenameStmt):
            return alter.rename(self, stmt)
        if isinstance(stmt, ShowStmt):
            return commands.show(self, stmt)
        if isinstance(stmt, SetStmt):
            return commands.set_var(self, stmt)
        if isinstance(stmt, ResetStmt):
            return commands.reset_var(self, stmt)
        if isinstance(stmt, FlushStmt):
            return commands.flush(self)
        if isinstance(stmt, WaitStmt):
            return commands.wait(self, stmt)
        if isinstance(stmt, CancelJobsStmt):
            return commands.cancel_jobs(self, stmt)
        if isinstance(stmt, AlterSystemStmt):
            return commands.alter_system(self, stmt)
        if isinstance(stmt, AlterRateLimitStmt):
            return commands.alter_rate_limit(self, stmt)
        if isinstance(stmt, AlterParallelismStmt):
            return commands.alter_parallelism(self, stmt)
        if isinstance(stmt, CreateUserStmt | AlterUserStmt | DropUserStmt | GrantStmt | RevokeStmt | AlterOwnerStmt):
            return _USER_HANDLERS[type(stmt)](self, stmt)
        if isinstance(stmt, CreateFunctionStmt):
            return functions.create_function(self, stmt)
        if isinstance(stmt, DropFunctionStmt):
            return functions.drop_function(self, stmt)
        if isinstance(stmt, ExplainStmt):
            inner = parse_statement(stmt.inner)
            if isinstance(inner, SqlStmt) and isinstance(inner.ast, exp.Create):
                return ddl.explain_create(self, inner.ast, inner.text)
            if isinstance(inner, SqlStmt):
                self.check_reads(inner.ast)
                return query.explain(self, inner.ast)
            raise FeatureNotSupported("EXPLAIN supports SELECT and CREATE MATERIALIZED VIEW only, for now")
        if isinstance(stmt, TransactionStmt):
            return commands.transaction(self, stmt.tag, stmt.in_transaction)
        if isinstance(stmt, DiscardAllStmt):
            return commands.discard_all(self)
        if isinstance(stmt, IgnoredStmt):
            return StatementResult(stmt.tag)
        raise FeatureNotSupported(f"statement {type(stmt).__name__} is not supported")

    def _dispatch_sql(self, stmt: SqlStmt) -> StatementResult:
        ast = stmt.ast
        if isinstance(ast, exp.Select | exp.Union | exp.Values):
            self.check_reads(ast)
            rows = query.run_query(self, ast, stream=True)
            if isinstance(rows, RowStream):
                return StatementResult("SELECT", columns_of(rows.schema.empty_table()), rows)
            return StatementResult(f"SELECT {rows.num_rows}", columns_of(rows), rows)
        if isinstance(ast, exp.Insert):
            return self._after_dml(dml.insert(self, ast))
        if isinstance(ast, exp.Update):
            return self._after_dml(dml.update(self, ast))
        if isinstance(ast, exp.Delete):
            return self._after_dml(dml.delete(self, ast))
        if isinstance(ast, exp.Create) and (ast.args.get("kind") or "").upper() == "SCHEMA":
            return commands.create_schema(self, ast)
        if isinstance(ast, exp.Create) and (ast.args.get("kind") or "").upper() == "DATABASE":
            return commands.create_database(self, ast)
        if isinstance(ast, exp.Create):
            return ddl.create(self, ast, stmt.text, stmt.table)
        if isinstance(ast, exp.Drop):
            return ddl.drop(self, ast)
        if isinstance(ast, exp.Set):
            raise FeatureNotSupported(f"SET form {ast.sql()!r} is not supported")
        if isinstance(ast, exp.Transaction | exp.Commit | exp.Rollback):
            return commands.transaction(self, {exp.Transaction: "BEGIN", exp.Commit: "COMMIT",
                                               exp.Rollback: "ROLLBACK"}[type(ast)])
        raise FeatureNotSupported(f"{type(ast).__name__.upper()} statements are not supported yet")

    # ---- helpers for handlers -------------------------------------------------------------------
    def privileges(self) -> PrivilegeChecker:
        """What the session's user may do, at the current catalog snapshot (`frontend.privileges`)."""
        return PrivilegeChecker(self.frontend.meta.catalog_snapshot(), self.user_id)

    def check_reads(self, query: exp.Expression) -> None:
        """SELECT on every relation a query reads (42501 otherwise)."""
        reader = self.catalog_reader()
        PrivilegeChecker(reader.snapshot, self.user_id).check_query(query, reader)

    @property
    def time_zone(self) -> str | None:
        """The IANA zone of the session's ``TimeZone``, None for UTC (`frontend.pgwire.time_zone`)."""
        return display_zone(self.vars.get("timezone"))

    def parse_sql(self, text: str) -> exp.Expression:
        """Parse with sqlglot, bypassing the fast paths of `parse_statement`."""
        try:
            return cast(exp.Expression, sqlglot.parse_one(whole_intervals(text), read=DIALECT))
        except ParseError as e:
            raise SyntaxError_(f"syntax error: {str(e).splitlines()[0]}") from None

    def catalog_reader(self) -> CatalogReader:
        snap = self.frontend.meta.catalog_snapshot()
        if snap.database(self.database) is None:
            raise InvalidCatalogName(f'database "{self.database}" does not exist')
        return CatalogReader(snap, self.database, self.vars.search_path())

    def run_batch(self, query: exp.Expression, *, full_relations: bool = False, schema_only: bool = False,
                  typed: bool = False) -> pa.Table:
        """Run a batch query at a pinned version. `typed` (a client's query): its result in the
        binder's types, where DuckDB's differ (`frontend.batch_types`)."""
        meta = self.frontend.meta
        reader = self.catalog_reader()
        types = self.statement_types(query, reader) if typed else None
        version = meta.pin_version()
        try:
            return self.frontend.engine.run(query, self._query_context(reader, version), cancel=self.cancel_event,
                                            full_relations=full_relations, schema_only=schema_only, types=types)
        finally:
            meta.unpin_version(version)

    def stream_batch(self, query: exp.Expression) -> pa.Table | RowStream:
        """`run_batch` of a client's query (typed), its rows produced while they are sent when there
        are more than a batch (`BatchEngine.stream`): the stream then holds the pinned version until
        it closes."""
        meta = self.frontend.meta
        reader = self.catalog_reader()
        types = self.statement_types(query, reader)
        version = meta.pin_version()
        try:
            result = self.frontend.engine.stream(query, self._query_context(reader, version), cancel=self.cancel_event,
                                                 types=types)
        except BaseException:
            meta.unpin_version(version)
            raise
        if isinstance(result, RowStream):
            result.on_close(lambda: meta.unpin_version(version))
            result.cancel_event = self.cancel_event
            self._cancel_shared = True
        else:
            meta.unpin_version(version)
        return result

    def _query_context(self, reader: CatalogReader, version: HummockVersion) -> QueryContext:
        meta = self.frontend.meta
        sys_ctx = SystemContext(reader.snapshot, reader.database.id, self.database, meta.ddl_progress,
                                self.user, tuple(reader.search_path), tuple(self.vars.all()),
                                self.frontend.session_infos, meta.row_count, version, meta.write_stalls,
                                self.user_id)

        def system_rows(schema: str, name: str) -> pa.Table:
            t = system_table(schema, name)
            if t is None:
                raise UndefinedTable(f'relation "{schema}.{name}" does not exist')
            return t.build(sys_ctx)

        settings = {name: value for name, value, _ in self.vars.all()}
        rewrite = RewriteContext(sys_ctx, self.user, self.database, self.pid, settings)
        return QueryContext(reader, version, self.database, self.user, system_rows, rewrite,
                            int(self.vars.get("rw_batch_stream_min_bytes")), self.time_zone)

    def statement_types(self, query: exp.Expression, reader: CatalogReader) -> ResultTypes | None:
        """The binder's output types of the client's current statement and the OIDs of its text
        outputs (`frontend.batch_types.result_types`), found once per text, parameter types and
        catalog version: from the statement's Describe form (parameters as typed NULLs), so a
        prepared statement's rows and its Describe agree; `query` itself when the session runs no
        client statement (`statement_form` unset)."""
        form = self.statement_form
        if form is None:
            return result_types(reader, query)
        key = (*form, reader.snapshot.version, self.database, self.vars.search_path_key())
        frontend = self.frontend
        with frontend.statement_types_lock:
            if key in frontend.statement_types:
                return frontend.statement_types[key]
        _, text = describe_form(form[0], list(form[1]))
        stmt = parse_statement(text) if text.strip() else None
        types = result_types(reader, stmt.ast) if isinstance(stmt, SqlStmt) else None
        if len(form[0]) > MAX_CACHED_TEXT:
            return types
        with frontend.statement_types_lock:
            if len(frontend.statement_types) >= STATEMENT_TYPES_CACHED:  # (the oldest entry goes)
                del frontend.statement_types[next(iter(frontend.statement_types))]
            frontend.statement_types[key] = types
        return types

    def result_schema(self, query: exp.Expression) -> pa.Table:
        """The (empty) result of a SELECT, computed without reading a relation or running it:
        ``SELECT * FROM (query) LIMIT 0`` over empty tables and MVs."""
        named = name_outputs(query.copy())  # (PostgreSQL's output names, as the query itself gets)
        return self.run_batch(exp.select("*").from_(exp.Subquery(this=named, alias=exp.TableAlias(
            this=exp.to_identifier("__d")))).limit(0), schema_only=True, typed=True)

    def _after_dml(self, result: StatementResult) -> StatementResult:
        if self.vars.flag("rw_implicit_flush"):
            self.frontend.dml.drain()
            self.frontend.meta.flush()
        return result

    def after_dml(self, result: StatementResult) -> StatementResult:
        """After a write: wait for its checkpoint when ``rw_implicit_flush`` is on."""
        return self._after_dml(result)


def _close_orphaned_stream(future: Future) -> None:
    """A statement whose connection went while it ran: close the stream it returned, if it did."""
    if not future.cancelled() and future.exception() is None and isinstance(future.result().rows, RowStream):
        future.result().rows.close()


def _timed_out(timer: _StatementTimer, e: BaseException) -> BaseException:
    """A cancel raised while a result's rows are sent, as the statement's timeout when it fired."""
    if isinstance(e, QueryCanceled) and timer.fired:
        return QueryCanceled("canceling statement due to statement timeout")
    return e


_USER_HANDLERS: dict[type, Callable[[Session, Any], StatementResult]] = {
    CreateUserStmt: users.create_user, AlterUserStmt: users.alter_user, DropUserStmt: users.drop_user,
    GrantStmt: users.grant, RevokeStmt: users.revoke, AlterOwnerStmt: users.alter_owner,
}

VECTOR_OIDS = {pa.uint16(): 22, pa.uint32(): 30}  # int2vector, oidvector (`frontend.catalog.table`)
_TYPLENS = {TEXT: (-1, -1), REGTYPE: (4, -1)}  # (typlen, typmod) of the OIDs `frontend.output_oids` labels


def columns_of(table: pa.Table) -> list[ColumnDesc]:
    out = []
    for f in table.schema:
        if pa.types.is_list(f.type) and f.type.value_type in VECTOR_OIDS:
            out.append(ColumnDesc(f.name, VECTOR_OIDS[f.type.value_type]))
            continue
        if pa.types.is_list(f.type):
            elem = DataType.from_arrow(f.type.value_type)
            out.append(ColumnDesc(f.name, PG_TYPES_BY_OID[elem.oid].array_oid))
            continue
        t = DataType.from_arrow(f.type)
        if t.name is TypeName.NUMERIC and pa.types.is_decimal(f.type) and t.precision is not None:
            t = DataType(TypeName.NUMERIC, f.type.precision, f.type.scale)
        oid = described_oid(f)  # (text or regtype: `frontend.output_oids`)
        out.append(ColumnDesc(f.name, t.oid, t.typlen, t.typmod) if oid is None else ColumnDesc(f.name, oid, *_TYPLENS[oid]))
    return out


# ---- parameters of the extended protocol ------------------------------------------------------------

_PARAM = re.compile(r"""'(?:[^']|'')*'|"(?:[^"]|"")*"|--[^\n]*|/\*.*?\*/|\$(\d+)""", re.DOTALL)
_CAST_BY_OID = {16: "boolean", 20: "bigint", 21: "smallint", 23: "integer", 700: "real", 701: "double precision",
                1700: "numeric", 1082: "date", 1114: "timestamp", 1184: "timestamptz", 1043: "varchar", 25: "varchar",
                # arrays, sent in text format (``{1,2,3}``): a driver's list parameter (``= ANY(%s)``)
                1000: "boolean[]", 1005: "smallint[]", 1007: "integer[]", 1016: "bigint[]", 1009: "varchar[]",
                1015: "varchar[]", 1021: "real[]", 1022: "double precision[]", 1231: "numeric[]", 1182: "date[]",
                1115: "timestamp[]", 1185: "timestamptz[]"}


def _param_count(sql: str) -> int:
    nums = [int(m.group(1)) for m in _PARAM.finditer(sql) if m.group(1)]
    return max(nums, default=0)


def _numeric_type(d: Decimal) -> str:
    """A numeric type holding `d` exactly (a bare ``numeric`` would be DuckDB's DECIMAL(18,3)).

    >>> _numeric_type(Decimal("-1234567890123456.0001")), _numeric_type(Decimal("61.50")), _numeric_type(Decimal("1E+3"))
    ('numeric(20, 4)', 'numeric(4, 2)', 'numeric(4, 0)')
    """
    if not d.is_finite():
        return "numeric"
    sign, digits, exponent = d.as_tuple()
    assert isinstance(exponent, int)
    scale = max(0, -exponent)
    integer_digits = max(1, len(digits) + exponent)
    precision = integer_digits + scale
    if precision > 38:
        return "numeric"
    return f"numeric({precision}, {scale})"


def sql_literal(value: Any, oid: int) -> str:
    """A parameter value as a SQL literal of the parameter's type."""
    if value is None:
        cast = _CAST_BY_OID.get(oid)
        return f"CAST(NULL AS {cast})" if cast and oid != 25 else "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return str(value) if oid in (0, 20, 21, 23, 25, 1700) else f"CAST({value} AS {_CAST_BY_OID.get(oid, 'bigint')})"
    if isinstance(value, float):
        return f"CAST('{value!r}' AS double precision)"
    if isinstance(value, Decimal):
        return f"CAST('{value}' AS {_numeric_type(value)})"
    if isinstance(value, dt.datetime):
        return f"CAST('{value.isoformat(sep=' ')}' AS {'timestamptz' if value.tzinfo else 'timestamp'})"
    if isinstance(value, dt.date):
        return f"CAST('{value.isoformat()}' AS date)"
    if isinstance(value, bytes | bytearray | memoryview):
        raise FeatureNotSupported("bytea parameters are not supported")
    text = "'" + str(value).replace("'", "''") + "'"
    if oid == 1700 and isinstance(value, str):
        try:
            return f"CAST({text} AS {_numeric_type(Decimal(value))})"
        except ArithmeticError:
            pass
    cast = _CAST_BY_OID.get(oid)
    return f"CAST({text} AS {cast})" if cast and oid not in (25, 1043) else text


@functools.lru_cache(maxsize=256)
def _insert_template(text: str) -> FastInsert | None:
    """``INSERT ... VALUES`` with its ``$n`` placeholders, parsed (the parse depends on the text
    only: the table is resolved at each execution)."""
    try:
        stmt = parse_statement(text)
    except RisingSparkError:
        return None
    return stmt if isinstance(stmt, FastInsert) else None


STATEMENT_TYPES_CACHED = 4096  # statements whose output types a frontend keeps


def describe_form(sql: str, param_oids: list[int]) -> tuple[list[int], str]:
    """A statement's parameter types as Describe announces them (unspecified ones text) and its text
    with typed NULLs for the parameters, which Describe plans."""
    oids = [o or 25 for o in param_oids] + [25] * max(0, _param_count(sql) - len(param_oids))
    return oids, substitute_params(sql, [None] * len(oids), oids)


def substitute_params(sql: str, params: list[Any], oids: list[int]) -> str:
    """Replace ``$n`` outside quotes and comments by the literal of parameter n."""

    def repl(m: re.Match) -> str:
        if m.group(1) is None:
            return m.group(0)
        i = int(m.group(1)) - 1
        if not 0 <= i < len(params):
            from risingspark.errors import ProtocolViolation

            raise ProtocolViolation(f"there is no parameter ${i + 1}")
        return sql_literal(params[i], oids[i] if i < len(oids) else 0)

    return _PARAM.sub(repl, sql) if params else sql


class _Running:
    """What a running statement's thread tells its caller: the statement's kind (for metrics) and its
    text as run (parameters substituted; for error positions)."""

    def __init__(self, text: str) -> None:
        self.kind = "other"
        self.text = text
        self.substituted = False


_MAY_BE_FAST = re.compile(r"\s*SELECT\b", re.IGNORECASE)  # only SELECTs get plans worth caching
_INSERT = re.compile(r"\s*INSERT\b", re.IGNORECASE)
MAX_CACHED_TEXT = 4096  # longer statements are not cached (the cache holds at most 1024 texts)
_CONSTANT_ARGS = {"expressions"}


def _is_literal(node: exp.Expression) -> bool:
    if isinstance(node, exp.Alias):
        node = node.this
    if isinstance(node, exp.Neg):
        node = node.this
        return isinstance(node, exp.Literal) and not node.is_string
    return isinstance(node, exp.Literal | exp.Boolean | exp.Null)


def _is_constant_select(ast: exp.Expression) -> bool:
    """A SELECT of literals and nothing else (``SELECT 1``, ``SELECT 'x' AS a, true``): its result
    depends on no catalog, session value or time.

    >>> _is_constant_select(sqlglot.parse_one("SELECT 1, -2 AS b, 'x', NULL, true")), _is_constant_select(sqlglot.parse_one("SELECT now()"))
    (True, False)
    """
    return isinstance(ast, exp.Select) and bool(ast.expressions) and \
        all(k in _CONSTANT_ARGS or not v for k, v in ast.args.items()) and all(_is_literal(e) for e in ast.expressions)


class _StatementTimer(threading.Timer):
    """Cancels a statement after the statement timeout (`time_out` says whether it still ran);
    `fired` says it did."""

    def __init__(self, seconds: float, time_out: Callable[[], bool]) -> None:
        super().__init__(seconds, self._fire)
        self.daemon = True
        self.fired = False
        self._time_out = time_out

    def _fire(self) -> None:
        self.fired = self._time_out()
