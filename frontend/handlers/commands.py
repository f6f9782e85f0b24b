"""Session and cluster commands: SHOW, SET, RESET, FLUSH, WAIT, CANCEL JOBS, ALTER SYSTEM, SHOW
PROCESSLIST, KILL, CREATE SCHEMA and COMMENT ON."""

from __future__ import annotations

import logging
import re
import threading
import time
from typing import TYPE_CHECKING

from sqlglot import exp

from frontend.binder import ident
from frontend.parser import (
    AlterParallelismStmt,
    AlterRateLimitStmt,
    AlterSystemStmt,
    CancelJobsStmt,
    CommentStmt,
    KillStmt,
    ResetStmt,
    SetStmt,
    ShowStmt,
    WaitStmt,
)
from frontend.pgwire.api import ColumnDesc, Notice, StatementResult
from frontend.session_vars import NOTICES, REPORTED_NAMES
from risingspark.catalog import DEFAULT_RESOURCE_GROUP, JobStatus, RelationKind
from risingspark.errors import (
    ActiveSqlTransaction,
    FeatureNotSupported,
    InvalidCatalogName,
    InvalidParameterValue,
    InvalidSchemaName,
    ObjectInUse,
    QueryCanceled,
    SyntaxError_,
    UndefinedColumn,
    UndefinedTable,
    WrongObjectType,
)
from risingspark.types import BOOL, INT8, VARCHAR
from risingspark.users import Action

if TYPE_CHECKING:
    from frontend.session import Session

logger = logging.getLogger(__name__)
WORKER_ID = 1  # the playground's one frontend


def _text_result(tag: str, names: list[str], rows: list[tuple]) -> StatementResult:
    return StatementResult(tag, [ColumnDesc(n, VARCHAR.oid) for n in names], rows)


def show(session: Session, stmt: ShowStmt) -> StatementResult:
    words = stmt.words
    what = " ".join(words)
    snap = session.frontend.meta.catalog_snapshot()
    reader = session.catalog_reader()
    if stmt.like is not None and words[:1] not in (("tables",), ("views",), ("materialized",), ("functions",)):
        raise FeatureNotSupported(f"SHOW {what.upper()} LIKE")
    if what == "jobs":
        rows = [(p.ddl_id, p.ddl_statement, p.create_type, p.progress)
                for p in session.frontend.meta.ddl_progress() if _in_db(snap, p.ddl_id, reader.database.id)]
        return StatementResult(f"SHOW {len(rows)}", [ColumnDesc("Id", INT8.oid, 8), ColumnDesc("Statement", VARCHAR.oid),
                                                     ColumnDesc("Create Type", VARCHAR.oid),
                                                     ColumnDesc("Progress", VARCHAR.oid)], rows)
    if words and words[0] in ("tables", "views", "materialized") and (words[0] != "materialized"
                                                                     or words[1:2] == ("views",)):
        kind = {"tables": RelationKind.TABLE, "views": RelationKind.VIEW}.get(words[0], RelationKind.MATERIALIZED_VIEW)
        rest = words[2:] if kind is RelationKind.MATERIALIZED_VIEW else words[1:]
        schema_id = reader.schema_id(rest[1]) if len(rest) == 2 and rest[0] == "from" else reader.current_schema_id()
        names = sorted(r.name for r in snap.relations.values() if r.kind is kind and r.schema_id == schema_id
                       and r.status is JobStatus.CREATED and _like(stmt.like, r.name))
        return _text_result(f"SHOW {len(names)}", ["Name"], [(n,) for n in names])
    if words and words[0] == "functions":
        return _show_functions(snap, reader, words[1:], stmt.like)
    if what in ("parameters",):
        params: list[tuple] = list(session.frontend.meta.params.describe())
        return StatementResult(f"SHOW {len(params)}", [ColumnDesc("Name", VARCHAR.oid), ColumnDesc("Value", VARCHAR.oid),
                                                       ColumnDesc("Description", VARCHAR.oid),
                                                       ColumnDesc("Mutable", BOOL.oid, 1)], params)
    if what == "all":
        return _text_result("SHOW", ["Name", "Setting", "Description"], session.vars.all())
    if len(words) >= 1:
        name = what if what == "transaction isolation level" or what == "time zone" else words[0]
        value = session.vars.get(name)
        spec = session.vars.spec(name)
        column = "transaction_isolation" if spec.name == "transaction_isolation" else name
        return _text_result("SHOW", [column], [(value,)])
    raise FeatureNotSupported("SHOW needs a name")


def _show_functions(snap, reader, rest: tuple[str, ...], like: str | None) -> StatementResult:
    """``SHOW FUNCTIONS [FROM schema] [LIKE pattern]``: the schema's user-defined functions, with
    RisingWave's columns (``Link`` is a remote function's server: none for an embedded language)."""
    if rest and (len(rest) != 2 or rest[0] != "from"):
        raise SyntaxError_(f'syntax error at or near "{rest[0]}"')
    schema_id = reader.schema_id(rest[1]) if rest else reader.current_schema_id()
    functions = sorted((f for f in snap.functions.values() if f.schema_id == schema_id and _like(like, f.name)),
                       key=lambda f: (f.name, f.id))
    rows = [(f.name, ", ".join(t.display() for t in f.arg_types), f.return_type.display(), f.language, None)
            for f in functions]
    return _text_result(f"SHOW {len(rows)}", ["Name", "Arguments", "Return Type", "Language", "Link"], rows)


def _like(pattern: str | None, name: str) -> bool:
    """PostgreSQL's ``name LIKE pattern`` (``%``, ``_``, ``\\`` escapes the next character); no
    pattern matches every name."""
    if pattern is None:
        return True
    out, chars = [], iter(pattern)
    for c in chars:
        if c == "\\":
            out.append(re.escape(next(chars, "\\")))
        else:
            out.append(".*" if c == "%" else "." if c == "_" else re.escape(c))
    return re.fullmatch("".join(out), name, re.DOTALL) is not None


def _in_db(snap, rel_id: int, database_id: int) -> bool:
    rel = snap.relations.get(rel_id)
    return rel is not None and rel.database_id == database_id


def set_var(session: Session, stmt: SetStmt) -> StatementResult:
    if stmt.local and not session.vars.in_block:
        session.vars.check(stmt.name, stmt.value)  # (a bad name or value is still an error)
        # as PostgreSQL: outside a transaction block SET LOCAL has no effect
        return StatementResult("SET_VARIABLE", notices=[Notice("SET LOCAL can only be used in transaction blocks",
                                                               sqlstate="25P01")])
    spec = session.vars.set(stmt.name, stmt.value, stmt.local)
    notice = NOTICES.get(spec.name)
    return StatementResult("SET_VARIABLE", notices=[notice] if notice else [],
                           parameters=_reported(session, [spec.name]))


def transaction(session: Session, tag: str, in_transaction: bool | None = None) -> StatementResult:
    """BEGIN, COMMIT, ROLLBACK (statements auto-commit: only the settings are transactional,
    `frontend.session_vars.SessionVars`); SAVEPOINT, RELEASE and ROLLBACK TO leave them."""
    changed: list[str] = []
    if tag == "BEGIN":  # (the parser tags START TRANSACTION so)
        session.vars.begin()
    elif tag in ("COMMIT", "ROLLBACK") and in_transaction is None:
        changed = session.vars.end(commit=tag == "COMMIT")
    return StatementResult(tag, in_transaction=in_transaction, parameters=_reported(session, changed))


def reset_var(session: Session, stmt: ResetStmt) -> StatementResult:
    names = []
    if stmt.name == "all":
        for name, spec in list(session.vars.spec_items()):
            if not spec.read_only:
                session.vars.set(name, None)
                names.append(name)
    else:
        names.append(session.vars.set(stmt.name, None).name)
    return StatementResult("RESET", parameters=_reported(session, names))


def discard_all(session: Session) -> StatementResult:
    """DISCARD ALL: every setting back to its reset value (as RESET ALL); the connection drops its
    prepared statements on the tag (`frontend.pgwire.connection`)."""
    if session.vars.in_block:
        raise ActiveSqlTransaction("DISCARD ALL cannot run inside a transaction block")
    return StatementResult("DISCARD ALL", parameters=reset_var(session, ResetStmt("all")).parameters)


def _reported(session: Session, names: list[str]) -> dict[str, str]:
    """The ParameterStatus of the reported settings among `names` (PostgreSQL's GUC_REPORT)."""
    return {REPORTED_NAMES.get(n, n): session.vars.get(n) for n in names if session.vars.spec(n).report}


FLUSH_POLL_S = 0.05  # how often a waiting FLUSH looks at its cancel
# FLUSH waits on threads at once, per process: a cancelled one's wait goes on until its checkpoint,
# and a client retrying FLUSH through a long stall must not pile up threads and meta calls
FLUSH_WAITS = threading.BoundedSemaphore(64)


def flush(session: Session) -> StatementResult:
    """Wait for a checkpoint after every write acknowledged before. The wait (for the frontend's
    asynchronously committed rows, its other processes' and the checkpoint) runs on a thread of its
    own while the statement watches its cancel: a cancel request or ``statement_timeout`` stops the
    statement (57014), and the checkpoint it asked for still happens."""
    def wait() -> None:
        session.frontend.dml.drain()  # asynchronously committed rows first (`frontend.dml_commit`)
        if session.frontend.group is not None:  # (and those of the frontend's other processes)
            session.frontend.group.drain_others()
        session.frontend.meta.flush()

    done, failed = threading.Event(), []

    def run() -> None:
        try:
            wait()
        except BaseException as e:  # (raised in the statement's thread)
            failed.append(e)
        finally:
            FLUSH_WAITS.release()
            done.set()

    while not FLUSH_WAITS.acquire(timeout=FLUSH_POLL_S):  # (as many as that wait already: wait for one)
        if session.cancel_event.is_set():
            raise QueryCanceled("canceling statement due to user request")
    try:
        threading.Thread(target=run, name="flush", daemon=True).start()
    except BaseException:
        FLUSH_WAITS.release()
        raise
    while not done.wait(FLUSH_POLL_S):
        if session.cancel_event.is_set():
            raise QueryCanceled("canceling statement due to user request")
    if failed:
        raise failed[0]
    return StatementResult("FLUSH")


def wait(session: Session, stmt: WaitStmt) -> StatementResult:
    meta = session.frontend.meta
    snap = meta.catalog_snapshot()
    reader = session.catalog_reader()
    if stmt.name is not None:
        want = {"TABLE": RelationKind.TABLE, "INDEX": RelationKind.INDEX}.get(stmt.kind, RelationKind.MATERIALIZED_VIEW)
        ref = reader.lookup(stmt.name, stmt.schema)
        if ref is None or ref.relation is None or ref.relation.kind is not want:
            raise UndefinedTable(f'{stmt.kind.lower()} "{stmt.name}" does not exist')
        ids = [ref.relation.id]
    else:
        ids = [r.id for r in snap.relations.values() if r.is_creating and r.database_id == reader.database.id]
    for i in ids:
        meta.wait_created(i, session.cancel_event)
    return StatementResult("WAIT")


def cancel_jobs(session: Session, stmt: CancelJobsStmt) -> StatementResult:
    meta = session.frontend.meta
    cancelled = []
    for job_id in stmt.ids:
        rel = meta.catalog_snapshot().relations.get(job_id)
        if rel is None or not rel.is_creating:
            continue
        session.privileges().check_owner(rel.id)
        meta.drop_relation(job_id, cascade=True)
        cancelled.append((job_id,))
    return StatementResult(f"CANCEL_JOBS {len(cancelled)}", [ColumnDesc("Id", INT8.oid, 8)], cancelled)


def alter_rate_limit(session: Session, stmt: AlterRateLimitStmt) -> StatementResult:
    ref = session.catalog_reader().lookup(stmt.name)
    if ref is None or ref.relation is None or ref.relation.kind is not RelationKind.MATERIALIZED_VIEW:
        raise UndefinedTable(f'materialized view "{stmt.name}" does not exist')
    session.privileges().check_owner(ref.relation.id)
    session.frontend.meta.set_backfill_rate_limit(ref.relation.id, stmt.rate)
    return StatementResult("ALTER_MATERIALIZED_VIEW")


def alter_parallelism(session: Session, stmt: AlterParallelismStmt) -> StatementResult:
    ref = session.catalog_reader().lookup(stmt.name)
    if ref is None or ref.relation is None or ref.relation.kind is not RelationKind.MATERIALIZED_VIEW:
        raise UndefinedTable(f'materialized view "{stmt.name}" does not exist')
    session.privileges().check_owner(ref.relation.id)
    session.frontend.meta.set_parallelism(ref.relation.id, stmt.parallelism)
    return StatementResult("ALTER_MATERIALIZED_VIEW")


def alter_system(session: Session, stmt: AlterSystemStmt) -> StatementResult:
    session.privileges().check_superuser(f'permission denied to set parameter "{stmt.name}"')
    value = None
    if stmt.value is not None:
        try:
            value = int(stmt.value)
        except ValueError:
            raise InvalidParameterValue(f'invalid value for parameter "{stmt.name}": "{stmt.value}"') from None
    session.frontend.meta.params.set(stmt.name, value)
    return StatementResult("ALTER_SYSTEM")


def show_processlist(session: Session) -> StatementResult:
    """One row per session, as RisingWave: ``Worker Id, Id, User, Host, Database, Time, Info``."""
    now = time.time()
    rows = []
    for s in session.frontend.session_infos():
        elapsed = f"{int((now - s.query_start) * 1000)}ms" if s.query_start is not None else None
        rows.append((str(WORKER_ID), str(s.pid), s.user, s.host, s.database, elapsed, s.query))
    return _text_result(f"SHOW {len(rows)}", ["Worker Id", "Id", "User", "Host", "Database", "Time", "Info"], rows)


def kill(session: Session, stmt: KillStmt) -> StatementResult:
    """Cancel the statement a session is running (the session stays connected)."""
    session.frontend.kill(stmt.process_id, session.user_id, session.privileges().is_super)
    logger.info("session %d: KILL of session %d", session.pid, stmt.process_id)
    return StatementResult("KILL")


def create_schema(session: Session, ast: exp.Create) -> StatementResult:
    """``CREATE SCHEMA [IF NOT EXISTS] name``."""
    table = ast.this
    name = ident(table.args.get("db") or table.this) if isinstance(table, exp.Table) else ident(table)
    reader = session.catalog_reader()
    if ast.args.get("exists") and session.frontend.meta.catalog_snapshot().schema(reader.database.id, name):
        return StatementResult("CREATE_SCHEMA", notices=[f'schema "{name}" already exists, skipping'])
    session.privileges().check_database(reader.database, Action.CREATE)
    session.frontend.meta.create_schema(reader.database.id, name, session.user_id)
    return StatementResult("CREATE_SCHEMA")


def create_database(session: Session, ast: exp.Create) -> StatementResult:
    """``CREATE DATABASE [IF NOT EXISTS] name [WITH (resource_group = 'rg')]``: as RisingWave, the
    database's streaming jobs run on the compute nodes of its resource group."""
    name = ident(ast.this.this if isinstance(ast.this, exp.Table) else ast.this)
    group = DEFAULT_RESOURCE_GROUP
    props = ast.args.get("properties")
    for p in props.expressions if props else []:
        key = p.this.sql(dialect="postgres").lower() if isinstance(p, exp.Property) else ""
        value = p.args.get("value") if isinstance(p, exp.Property) else None
        if key != "resource_group" or not isinstance(value, exp.Literal | exp.Identifier | exp.Var):
            raise FeatureNotSupported(f"database option {p.sql(dialect='postgres')} is not supported")
        group = str(value.this)
        if not group:
            raise InvalidParameterValue("resource_group must not be empty")
    meta = session.frontend.meta
    if ast.args.get("exists") and meta.catalog_snapshot().database(name) is not None:
        return StatementResult("CREATE_DATABASE", notices=[f'database "{name}" already exists, skipping'])
    session.privileges().check_create_database()
    meta.create_database(name, group, session.user_id)
    return StatementResult("CREATE_DATABASE")


def drop_database(session: Session, ast: exp.Drop) -> StatementResult:
    """``DROP DATABASE [IF EXISTS] name``: an empty database, not the one this session uses."""
    meta = session.frontend.meta
    notices = []
    for t in ast.args.get("tables") or [ast.this]:
        name = ident(t.this if isinstance(t, exp.Table) else t)
        db = meta.catalog_snapshot().database(name)
        if db is None:
            if ast.args.get("exists"):
                notices.append(f'database "{name}" does not exist, skipping')
                continue
            raise InvalidCatalogName(f'database "{name}" does not exist')
        if name == session.database:
            raise ObjectInUse("cannot drop the currently open database")
        session.privileges().check_owner(db.id)
        meta.drop_database(db.id)
    return StatementResult("DROP_DATABASE", notices=notices)


def drop_schema(session: Session, ast: exp.Drop) -> StatementResult:
    """``DROP SCHEMA [IF EXISTS] name [, ...] [CASCADE]``."""
    from frontend.handlers.ddl import drop_with_indexes

    meta = session.frontend.meta
    reader = session.catalog_reader()
    notices = []
    for t in ast.args.get("tables") or [ast.this]:
        name = ident(t.args.get("db") or t.this)
        schema = meta.catalog_snapshot().schema(reader.database.id, name)
        if schema is None:
            if ast.args.get("exists"):
                notices.append(f'schema "{name}" does not exist, skipping')
                continue
            raise InvalidSchemaName(f'schema "{name}" does not exist')
        session.privileges().check_owner(schema.id)
        if ast.args.get("cascade"):
            for rel in sorted(meta.catalog_snapshot().relations.values(), key=lambda r: r.id):
                if rel.schema_id == schema.id and rel.id in meta.catalog_snapshot().relations:
                    drop_with_indexes(session, rel, cascade=True)
            # then its functions (a view elsewhere that calls one still blocks the DROP: 2BP01)
            for fn in sorted(meta.catalog_snapshot().functions.values(), key=lambda f: f.id):
                if fn.schema_id == schema.id:
                    meta.functions.drop_function(session.user_id, fn.id)
        meta.drop_schema(schema.id)
    return StatementResult("DROP_SCHEMA", notices=notices)


def comment_on(session: Session, stmt: CommentStmt) -> StatementResult:
    """``COMMENT ON {TABLE | MATERIALIZED VIEW | VIEW | COLUMN} name IS text``, kept with the relation
    and shown by `pg_description`, ``obj_description``/``col_description`` and ``\\d+``."""
    parts = list(stmt.name)
    column = parts.pop() if stmt.kind == "COLUMN" else None
    if not parts or len(parts) > 3:
        raise InvalidParameterValue(f"improper relation name: {'.'.join(stmt.name)}")
    ref = session.catalog_reader().lookup(parts[-1], parts[-2] if len(parts) > 1 else None)
    if ref is None or ref.relation is None:
        raise UndefinedTable(f'relation "{".".join(parts)}" does not exist')
    rel = ref.relation
    # As RisingWave, COMMENT ON TABLE names any relation (dbt comments views and materialized
    # views that way); the other kinds must match.
    wanted = {"VIEW": RelationKind.VIEW, "MATERIALIZED VIEW": RelationKind.MATERIALIZED_VIEW,
              "INDEX": RelationKind.INDEX}.get(stmt.kind)
    if wanted is not None and rel.kind is not wanted:
        raise WrongObjectType(f'"{rel.name}" is not a {wanted.display}')
    if column is not None and not any(f.name == column and not f.hidden for f in rel.fields):
        raise UndefinedColumn(f'column "{column}" of relation "{rel.name}" does not exist')
    session.privileges().check_owner(rel.id)
    session.frontend.meta.set_comment(rel.id, column, stmt.text)
    return StatementResult("COMMENT")
