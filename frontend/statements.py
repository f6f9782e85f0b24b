"""The statements the parser produces besides sqlglot trees: short command statements (SHOW, SET,
FLUSH, WAIT, COPY, ...) as small frozen dataclasses, and `SqlStmt` wrapping a sqlglot tree."""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from frontend.rw_clauses import TableClauses
from risingspark.types import DataType
from risingspark.users import Action, UserChange


@dataclass(frozen=True)
class ShowStmt:
    words: tuple[str, ...]  # lower-cased, e.g. ("jobs",), ("materialized", "views"), ("search_path",)
    like: str | None = None  # ``SHOW TABLES LIKE 'pattern'``: the pattern as written


@dataclass(frozen=True)
class SetStmt:
    name: str
    value: str | None  # None: DEFAULT
    local: bool = False  # SET LOCAL: until the end of the transaction block


@dataclass(frozen=True)
class ResetStmt:
    name: str


@dataclass(frozen=True)
class FlushStmt:
    pass


@dataclass(frozen=True)
class WaitStmt:
    """``WAIT`` (every creating job) or ``WAIT {MATERIALIZED VIEW | TABLE | INDEX} [schema.]name``."""

    name: str | None = None
    schema: str | None = None
    kind: str = "MATERIALIZED VIEW"


@dataclass(frozen=True)
class CancelJobsStmt:
    ids: tuple[int, ...]


@dataclass(frozen=True)
class ExplainStmt:
    inner: str


@dataclass(frozen=True)
class AlterSystemStmt:
    name: str
    value: str | None


@dataclass(frozen=True)
class AlterRateLimitStmt:
    """``ALTER MATERIALIZED VIEW name SET BACKFILL_RATE_LIMIT { = | TO } n | DEFAULT | ADAPTIVE``."""

    name: str
    rate: int | str | None  # rows/s per parallelism, "adaptive", or None: unlimited


@dataclass(frozen=True)
class AlterParallelismStmt:
    """``ALTER MATERIALIZED VIEW name SET PARALLELISM { = | TO } n | ADAPTIVE``."""

    name: str
    parallelism: int  # 0: adaptive


@dataclass(frozen=True)
class TransactionStmt:
    tag: str  # BEGIN, COMMIT, ROLLBACK, SAVEPOINT, RELEASE
    in_transaction: bool | None = None  # True for ROLLBACK TO SAVEPOINT: the block stays open


@dataclass(frozen=True)
class DiscardAllStmt:
    """DISCARD ALL (what connection poolers send between clients): every setting back to its reset
    value (the startup packet's, else the default), every prepared statement dropped."""


@dataclass(frozen=True)
class IgnoredStmt:
    """Accepted for client compatibility; does nothing (DISCARD PLANS, SET SESSION CHARACTERISTICS)."""

    tag: str


@dataclass(frozen=True)
class ShowProcesslistStmt:
    """``SHOW PROCESSLIST``."""


@dataclass(frozen=True)
class KillStmt:
    """``KILL [worker_id:]process_id``: cancel the statement a session is running."""

    process_id: int


@dataclass(frozen=True)
class CommentStmt:
    """``COMMENT ON {TABLE | MATERIALIZED VIEW | VIEW | COLUMN} name IS {'text' | NULL}``."""

    kind: str  # TABLE, MATERIALIZED VIEW, VIEW or COLUMN
    name: tuple[str, ...]  # [schema.]relation[.column], identifiers folded
    text: str | None


@dataclass(frozen=True)
class CopyStmt:
    """``COPY table [(columns)] FROM STDIN [options]`` in text or CSV format."""

    table: tuple[str, ...]  # [schema.]name, folded
    columns: tuple[str, ...] | None
    format: str = "text"  # text, csv or binary
    delimiter: str = "\t"
    null: str = "\\N"
    header: bool = False
    quote: str = '"'
    escape: str = '"'


@dataclass(frozen=True)
class FastInsert:
    """``INSERT INTO t [(cols)] VALUES ...`` whose body goes to `frontend.values`."""

    table: exp.Table
    columns: tuple[str, ...] | None
    values_text: str
    text: str


@dataclass(frozen=True)
class SqlStmt:
    """A statement sqlglot parsed; `table`: a CREATE TABLE's RisingWave kind clauses (APPEND ONLY,
    ON CONFLICT), which sqlglot does not parse (`frontend.rw_clauses`)."""

    ast: exp.Expression
    text: str
    table: TableClauses | None = None


@dataclass(frozen=True)
class RenameStmt:
    """``ALTER {TABLE | VIEW | MATERIALIZED VIEW | INDEX} [IF EXISTS] name RENAME TO new_name``."""

    kind: str  # "TABLE", "VIEW", "MATERIALIZED VIEW", "INDEX"
    name: tuple[str, ...]  # [database.][schema.]name
    new_name: str
    if_exists: bool = False


@dataclass(frozen=True)
class CreateIndexStmt:
    """``CREATE INDEX [IF NOT EXISTS] name ON relation (column [ASC | DESC], ...) [INCLUDE (column,
    ...)] [DISTRIBUTED BY (column, ...)]``."""

    name: str
    relation: tuple[str, ...]
    columns: tuple[tuple[str, bool], ...]  # (name, descending)
    include: tuple[str, ...] | None  # None: every column of the relation
    distributed_by: tuple[str, ...] | None  # None: the index columns
    if_not_exists: bool
    text: str


@dataclass(frozen=True)
class CreateUserStmt:
    """``CREATE {USER | ROLE} name [[WITH] option ...]``; the password in `options` is as written."""

    name: str
    options: UserChange


@dataclass(frozen=True)
class AlterUserStmt:
    """``ALTER {USER | ROLE} name [WITH] option ...`` or ``... RENAME TO new`` (`options.name`)."""

    name: str
    options: UserChange


@dataclass(frozen=True)
class DropUserStmt:
    """``DROP {USER | ROLE} [IF EXISTS] name [, ...]``."""

    names: tuple[str, ...]
    if_exists: bool = False


@dataclass(frozen=True)
class GrantObjects:
    """What a GRANT or REVOKE is on: relations (``[database.][schema.]name`` parts), or every
    relation of the kind in the named schemas (`all_in_schema`), or schemas, or databases."""

    kind: str  # TABLE, MATERIALIZED VIEW, VIEW, SCHEMA or DATABASE
    names: tuple[tuple[str, ...], ...]
    all_in_schema: bool = False


@dataclass(frozen=True)
class GrantStmt:
    """``GRANT {actions | ALL [PRIVILEGES]} ON objects TO users [WITH GRANT OPTION] [GRANTED BY user]``."""

    actions: tuple[Action, ...] | None  # None: ALL
    objects: GrantObjects
    grantees: tuple[str, ...]
    with_grant_option: bool = False
    granted_by: str | None = None


@dataclass(frozen=True)
class RevokeStmt:
    """``REVOKE [GRANT OPTION FOR] {actions | ALL} ON objects FROM users [GRANTED BY user] [CASCADE |
    RESTRICT]``."""

    actions: tuple[Action, ...] | None
    objects: GrantObjects
    grantees: tuple[str, ...]
    grant_option_only: bool = False
    cascade: bool = False
    granted_by: str | None = None


@dataclass(frozen=True)
class AlterOwnerStmt:
    """``ALTER {TABLE | MATERIALIZED VIEW | VIEW | SCHEMA | DATABASE} name OWNER TO user``."""

    kind: str
    name: tuple[str, ...]
    new_owner: str


@dataclass(frozen=True)
class CreateFunctionStmt:
    """``CREATE FUNCTION [IF NOT EXISTS] [schema.]name ([name] type, ...) RETURNS type LANGUAGE
    javascript AS body`` (`frontend.function_parser`); unnamed arguments are named ``$1``, ``$2``..."""

    name: str
    schema: str | None
    arg_names: tuple[str, ...]
    arg_types: tuple[DataType, ...]
    return_type: DataType
    language: str
    body: str
    if_not_exists: bool = False


@dataclass(frozen=True)
class FunctionRef:
    """A function a DROP FUNCTION names; `arg_types` None when no argument list was given."""

    name: str
    schema: str | None
    arg_types: tuple[DataType, ...] | None

    @property
    def display(self) -> str:
        return f"{self.name}({', '.join(t.display() for t in self.arg_types or ())})"


@dataclass(frozen=True)
class DropFunctionStmt:
    """``DROP FUNCTION [IF EXISTS] name [(types)] [, ...] [RESTRICT]``."""

    functions: tuple[FunctionRef, ...]
    if_exists: bool = False


FunctionStatement = CreateFunctionStmt | DropFunctionStmt

UserStatement = CreateUserStmt | AlterUserStmt | DropUserStmt | GrantStmt | RevokeStmt | AlterOwnerStmt

Statement = (ShowStmt | SetStmt | ResetStmt | FlushStmt | WaitStmt | CancelJobsStmt | ExplainStmt
             | AlterSystemStmt | AlterRateLimitStmt | AlterParallelismStmt | TransactionStmt | DiscardAllStmt | IgnoredStmt
             | ShowProcesslistStmt | KillStmt | CommentStmt | CopyStmt | FastInsert | SqlStmt
             | RenameStmt | CreateIndexStmt | UserStatement | FunctionStatement)
