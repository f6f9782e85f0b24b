"""The contract between the wire server and a session.

The wire server (`frontend.pgwire.server`) speaks the protocol: framing, startup, authentication,
simple and extended query flows, value encoding. A session (`frontend.session.Session`) understands
SQL. One session object exists per connection.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import pyarrow as pa

from .row_stream import RowStream


@dataclass(frozen=True)
class Notice:
    """A NoticeResponse of another severity than NOTICE, with its SQLSTATE."""

    message: str
    severity: str = "WARNING"
    sqlstate: str = "01000"


@dataclass(frozen=True)
class ColumnDesc:
    """One field of a RowDescription."""

    name: str
    type_oid: int
    type_len: int = -1
    type_mod: int = -1
    table_oid: int = 0
    column_attr: int = 0


@dataclass(frozen=True)
class CopyIn:
    """A ``COPY ... FROM STDIN`` waiting for its data.

    The wire server answers CopyInResponse (`columns` text-format columns), passes each CopyData
    payload to `write`, then awaits `finish` on CopyDone, whose result (``COPY n``) completes the
    statement, or `abort` on CopyFail (which raises the error to report).
    """

    columns: int
    write: Callable[[bytes], Awaitable[None]]
    finish: Callable[[], Awaitable[StatementResult]]
    abort: Callable[[str], Awaitable[None]]


@dataclass
class StatementResult:
    """The outcome of one statement.

    Attributes:
        tag: the CommandComplete tag, e.g. ``SELECT 2``, ``INSERT 0 3``, ``CREATE_MATERIALIZED_VIEW``.
        columns: the row description; None for statements that return no rows (DDL, DML, SET).
        rows: the rows, as an Arrow table whose columns match `columns` in order, or a list of tuples
            of Python values (int, float, Decimal, str, bool, date, datetime, None), or a `RowStream`
            producing them while they are sent (`tag` is then ``SELECT``, completed with the count).
        notices: NoticeResponse messages sent before the result (a text: a NOTICE).
        empty: the statement was empty (EmptyQueryResponse instead of CommandComplete).
        in_transaction: whether an explicit transaction block is open after this statement (the
            ReadyForQuery status ``T``). None: the tags ``BEGIN``/``START TRANSACTION`` open one,
            ``COMMIT``/``ROLLBACK`` close one, others leave it; set True for ``ROLLBACK TO SAVEPOINT``,
            whose tag is also ``ROLLBACK``.
        copy_in: set when the statement is a COPY FROM STDIN that now reads the client's data.
        parameters: ParameterStatus messages sent before the completion: the reported settings the
            statement changed (``SET TimeZone``), as PostgreSQL sends them; drivers follow them
            (psycopg shows timestamptz values in the reported TimeZone).
        ready: set on a result of `PgSession.answer_now` that may be sent only later (a durable
            INSERT, once its rows are on disk): called with a function the server calls back on the
            event loop, with None once the result may be sent, or with the error to send instead.
    """

    tag: str
    columns: list[ColumnDesc] | None = None
    rows: pa.Table | list[tuple] | RowStream | None = None
    notices: Sequence[str | Notice] = field(default_factory=list)
    empty: bool = False
    in_transaction: bool | None = None
    copy_in: CopyIn | None = None
    parameters: dict[str, str] = field(default_factory=dict)
    ready: Callable[[Callable[[BaseException | None], None]], None] | None = None


class PgSession(Protocol):
    """What the wire server needs from a session."""

    async def startup(self, params: dict[str, str]) -> dict[str, str]:
        """Accept the startup parameters (user, database, options...) and return the
        ParameterStatus values to announce. Raises a `RisingSparkError` (e.g. 3D000) to refuse."""
        ...

    def execute_simple(self, sql: str) -> AsyncIterator[StatementResult]:
        """Run every statement of a simple Query message, yielding one result each, in order.
        Raising stops the remaining statements; the server sends the ErrorResponse."""
        ...

    async def describe(self, sql: str, param_oids: list[int]) -> tuple[list[int], list[ColumnDesc] | None]:
        """For a Parse'd statement: the parameter type OIDs (the given ones with 0s resolved, 25
        ``text`` when unknown) and the row description, or None when it returns no rows."""
        ...

    async def execute(self, sql: str, param_oids: list[int], params: list[Any]) -> StatementResult:
        """Run one statement of the extended protocol with decoded parameter values.

        A session may also define ``answer_now(sql, param_oids, params) -> StatementResult | None``
        (an optional hook): `execute`'s result when the session has it at once, without waiting on
        anything (None otherwise); the server then answers such an execution as it arrives
        (`frontend.pgwire.extended.ExtendedQuery.answer_now`)."""
        ...

    def cancel(self) -> None:
        """A CancelRequest named this session: stop the running statement (QueryCanceled)."""
        ...

    @property
    def time_zone(self) -> str | None:
        """The IANA zone timestamptz values are shown in, None for UTC (`frontend.pgwire.time_zone`)."""
        ...

    async def close(self) -> None:
        """The connection ended."""
        ...


@dataclass(frozen=True)
class ConnectionInfo:
    """Given to a session that defines ``bind_connection(info)`` (an optional hook), before startup."""

    pid: int  # the BackendKeyData process id
    host: str  # the client's address
