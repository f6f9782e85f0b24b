"""The extended query flow: prepared statements and portals.

Parse stores a statement; its description (parameter types and row description) is asked of the
session only when needed: on Describe S, or on Bind when some parameter types were left 0. Describe P
runs the statement and keeps the result for the following Execute, which sends it in batches of
``max_rows`` with PortalSuspended in between. Portals are dropped at Sync outside a transaction
block, as Postgres drops them when its implicit transaction commits.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from risingspark.errors import (
    InvalidCursorName,
    InvalidPreparedStatement,
    ProtocolViolation,
    RisingSparkError,
)

from . import backend as be
from . import messages as m
from .api import ColumnDesc, StatementResult
from .codec import decode_params, result_formats
from .datarows import encode_rows, row_count
from .row_stream import RowStream

if TYPE_CHECKING:
    from .connection import Connection


class DuplicatePreparedStatement(RisingSparkError):
    sqlstate = "42P05"


class DuplicateCursor(RisingSparkError):
    sqlstate = "42P03"


# Describe (portal ""), Execute ("", all rows): what psycopg, asyncpg and JDBC pipeline after the Bind
# of each execution of a prepared statement, before its Sync (`ExtendedQuery.cycle`)
CYCLE_TAIL = b"D\x00\x00\x00\x06P\x00" + b"E\x00\x00\x00\x09\x00\x00\x00\x00\x00"
SYNC = b"S\x00\x00\x00\x04"
ANSWER_NOW_MAX_ROWS = 64  # (a result answered at once is a constant's or a point query's: a few rows)


def is_empty_query(sql: str) -> bool:
    """Only blanks and semicolons: Postgres answers EmptyQueryResponse."""
    return not sql.replace(";", " ").strip()


@dataclass
class PreparedStatement:
    sql: str
    param_oids: list[int]
    description: tuple[list[int], list[ColumnDesc] | None] | None = None
    portals: set[str] = field(default_factory=set)


@dataclass
class Portal:
    statement: PreparedStatement
    param_oids: list[int]
    params: list[Any]
    result_formats: tuple[int, ...]
    result: StatementResult | None = None
    position: int = 0  # rows already sent


class Answer(NamedTuple):
    """An execution answered as it arrived (`ExtendedQuery.answer_now`): its bytes, to send at once,
    or once `ready` calls back (`StatementResult.ready`: a durable INSERT's, once its rows are on
    disk), with None; with an error, the loop's answer to the statement failing is sent instead."""

    data: bytes
    ready: Callable[[Callable[[BaseException | None], None]], None] | None = None


class ExtendedQuery:
    """A connection's prepared statements and portals, and the handlers of their messages."""

    def __init__(self, conn: Connection) -> None:
        self._conn = conn
        self._statements: dict[str, PreparedStatement] = {}
        self._portals: dict[str, Portal] = {}

    async def handle(self, msg: m.Parse | m.Bind | m.Describe | m.Execute | m.Close) -> None:
        """Answer one extended-protocol message; raises on error (the caller skips to Sync)."""
        if isinstance(msg, m.Parse):
            self._parse(msg)
        elif isinstance(msg, m.Bind):
            await self._bind(msg)
        elif isinstance(msg, m.Describe):
            await self._describe(msg)
        elif isinstance(msg, m.Execute):
            await self._execute(msg)
        else:
            self._close(msg)

    async def cycle(self, bind: m.Bind) -> None:
        """Bind (to the unnamed portal), Describe P and Execute of all rows, answered as the three
        messages are, but without decoding and dispatching the last two: the message loop takes this
        when the bytes after a Bind are exactly `CYCLE_TAIL`. What follows (the Sync; a COPY's data)
        goes through the message loop as always. Raises as `handle` (the caller skips to the Sync:
        what was not sent is what the loop would have skipped)."""
        assert not bind.portal
        await self._bind(bind)
        portal = self._portals[""]
        await self._describe_portal(portal)
        await self._execute_portal("", portal, 0)

    def answer_now(self, bind: m.Bind) -> Answer | None:
        """The answer to `bind`, `CYCLE_TAIL` and a Sync, made at once, when the session answers the
        statement at once (`PgSession.answer_now`: a constant, a point query whose blocks are cached,
        a single-row INSERT, whose answer is sent once its rows are durable); None leaves them to the
        message loop, which then answers them as always, errors included.

        The bytes are the ones the loop would send (BindComplete, RowDescription, the DataRows,
        CommandComplete, ReadyForQuery): only outside a transaction block, with no portal open, a
        statement whose parameter types are known and a result that is plain rows (no notice, no
        reported setting), so the Sync would drop the portal the Bind made and nothing else changes.
        Raises what decoding the parameters or the statement raise (the caller leaves it to the loop,
        which runs them again and reports the error)."""
        conn = self._conn
        answer = getattr(conn.session, "answer_now", None)
        if answer is None or bind.portal or self._portals or conn.in_transaction:
            return None
        stmt = self._statements.get(bind.statement)
        if stmt is None:
            return None
        oids = stmt.param_oids
        if len(oids) != len(bind.params) or 0 in oids:
            if stmt.description is None:
                return None
            oids = stmt.description[0]
        if len(oids) != len(bind.params) or is_empty_query(stmt.sql):
            return None
        codes = bind.result_formats  # (the loop reports codes that do not fit: the statement runs once)
        if any(f not in (0, 1) for f in codes) or (len(codes) > 1 and (
                stmt.description is None or stmt.description[1] is None or len(codes) != len(stmt.description[1]))):
            return None
        time_zone = conn.session_time_zone()
        params = decode_params(bind.params, oids, bind.param_formats, time_zone)
        result = answer(stmt.sql, list(oids), params)
        if result is None:
            return None
        if not result.tag.startswith("INSERT ") and (  # (an INSERT answered at once has queued its rows)
                not result.tag.startswith("SELECT ") or result.notices or result.empty or result.parameters
                or result.copy_in is not None or result.in_transaction is not None
                or isinstance(result.rows, RowStream) or row_count(result.rows) > ANSWER_NOW_MAX_ROWS):
            return None
        out = [be.bind_complete()]
        columns = result.columns
        if columns is None:
            out.append(be.no_data())
        else:
            formats = result_formats(bind.result_formats, len(columns))
            out.append(be.row_description(columns, formats))
            if result.rows is not None and row_count(result.rows):
                out.append(encode_rows(columns, formats, result.rows, time_zone))
        out.append(be.command_complete(result.tag))
        out.append(be.ready_for_query(b"I"))
        return Answer(b"".join(out), result.ready)

    def sync(self) -> None:
        """End of an extended-protocol cycle."""
        if not self._conn.in_transaction:
            self._drop_portals(list(self._portals))

    def discard_unnamed(self) -> None:
        """A simple Query destroys the unnamed statement and portal."""
        self._drop_portals([""])
        if "" in self._statements:
            self._drop_statement("")

    def deallocate(self, name: str | None) -> None:
        """SQL ``DEALLOCATE name`` (None: ``DEALLOCATE ALL``), which drivers send to drop the
        statements they prepared through Parse (psycopg 3 does on rollback and cache eviction)."""
        if name is None:
            for n in [n for n in self._statements if n]:
                self._drop_statement(n)
            return
        self._statement(name)
        self._drop_statement(name)

    # ---- messages -------------------------------------------------------------------------------
    def _parse(self, msg: m.Parse) -> None:
        if msg.name and msg.name in self._statements:
            raise DuplicatePreparedStatement(f'prepared statement "{msg.name}" already exists')
        if not msg.name and "" in self._statements:
            self._drop_statement("")
        self._statements[msg.name] = PreparedStatement(msg.sql, list(msg.param_oids))
        self._conn.sink.send(be.parse_complete())

    async def _bind(self, msg: m.Bind) -> None:
        stmt = self._statement(msg.statement)
        if msg.portal and msg.portal in self._portals:
            raise DuplicateCursor(f'cursor "{msg.portal}" already exists')
        oids = stmt.param_oids
        if len(oids) != len(msg.params) or 0 in oids:
            oids = (await self._description(stmt))[0]
        if len(oids) != len(msg.params):
            raise ProtocolViolation(f"bind message supplies {len(msg.params)} parameters, but prepared "
                                    f'statement "{msg.statement}" requires {len(oids)}')
        params = decode_params(msg.params, oids, msg.param_formats, self._conn.session_time_zone())
        if len(msg.result_formats) > 1:  # (before BindComplete, as PostgreSQL checks them against the columns)
            columns = (await self._description(stmt))[1]
            if columns is not None:  # (no rows, or rows described only once run: at Execute, as before)
                result_formats(msg.result_formats, len(columns))
        self._drop_portals([msg.portal])
        self._portals[msg.portal] = Portal(stmt, list(oids), params, msg.result_formats)
        stmt.portals.add(msg.portal)
        self._conn.sink.send(be.bind_complete())

    async def _describe(self, msg: m.Describe) -> None:
        sink = self._conn.sink
        if msg.kind == "S":
            oids, columns = await self._description(self._statement(msg.name))
            sink.send(be.parameter_description(oids))
            sink.send(be.no_data() if columns is None else be.row_description(columns, [0] * len(columns)))
        elif msg.kind == "P":
            await self._describe_portal(self._portal(msg.name))
        else:
            raise ProtocolViolation(f"invalid DESCRIBE message subtype {msg.kind!r}")

    async def _describe_portal(self, portal: Portal) -> None:
        columns = (await self._result(portal)).columns
        if columns is None:
            self._conn.sink.send(be.no_data())
        else:
            self._conn.sink.send(be.row_description(columns, result_formats(portal.result_formats, len(columns))))

    async def _execute(self, msg: m.Execute) -> None:
        await self._execute_portal(msg.portal, self._portal(msg.portal), msg.max_rows)

    async def _execute_portal(self, name: str, portal: Portal, max_rows: int) -> None:
        result = await self._result(portal)
        formats = None
        if result.columns is not None:
            formats = result_formats(portal.result_formats, len(result.columns))
        try:
            portal.position = await self._conn.send_result(result, formats, describe=False,
                                                           start=portal.position, max_rows=max_rows)
        except Exception:
            if isinstance(result.rows, RowStream):  # (its rows are gone: an Execute again must not
                self._drop_portals([name])  # answer with fewer)
            raise

    def _close(self, msg: m.Close) -> None:
        if msg.kind == "S":
            if msg.name in self._statements:
                self._drop_statement(msg.name)
        elif msg.kind == "P":
            self._drop_portals([msg.name])
        else:
            raise ProtocolViolation(f"invalid CLOSE message subtype {msg.kind!r}")
        self._conn.sink.send(be.close_complete())

    # ---- state ----------------------------------------------------------------------------------
    def _statement(self, name: str) -> PreparedStatement:
        stmt = self._statements.get(name)
        if stmt is None:
            if not name:
                raise InvalidPreparedStatement("unnamed prepared statement does not exist")
            raise InvalidPreparedStatement(f'prepared statement "{name}" does not exist')
        return stmt

    def _portal(self, name: str) -> Portal:
        portal = self._portals.get(name)
        if portal is None:
            raise InvalidCursorName(f'portal "{name}" does not exist')
        return portal

    def _drop_statement(self, name: str) -> None:
        self._drop_portals(list(self._statements.pop(name).portals))

    def _drop_portals(self, names: list[str]) -> None:
        for name in names:
            portal = self._portals.pop(name, None)
            if portal is not None:
                portal.statement.portals.discard(name)
                if portal.result is not None and isinstance(portal.result.rows, RowStream):
                    portal.result.rows.close()  # (a suspended portal's producer: its cursor, its version)

    def close(self) -> None:
        """The connection ended: every portal goes (and what produces their rows)."""
        self._drop_portals(list(self._portals))

    async def _description(self, stmt: PreparedStatement) -> tuple[list[int], list[ColumnDesc] | None]:
        if stmt.description is None:
            if is_empty_query(stmt.sql):
                stmt.description = (list(stmt.param_oids), None)
            else:
                assert self._conn.session is not None
                oids, columns = await self._conn.session.describe(stmt.sql, list(stmt.param_oids))
                stmt.description = (list(oids), columns)
        return stmt.description

    async def _result(self, portal: Portal) -> StatementResult:
        """Run the portal's statement once; Describe P and Execute share the result."""
        if portal.result is None:
            if is_empty_query(portal.statement.sql):
                portal.result = StatementResult(tag="", empty=True)
            else:
                assert self._conn.session is not None
                portal.result = await self._conn.session.execute(portal.statement.sql, portal.param_oids,
                                                                 portal.params)
        return portal.result
