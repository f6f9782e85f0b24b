"""One error hierarchy for every service; each class carries its SQLSTATE.

Exactly one place turns these into a wire ErrorResponse (`frontend.pgwire`), and meta's HTTP API
returns ``{"sqlstate", "message"}`` built from the same classes (`to_json` / `from_json`).
Anything that is not a `RisingSparkError` reaching a client boundary is reported as `InternalError`
(XX000) and logged with its traceback.
"""

from __future__ import annotations


class RisingSparkError(Exception):
    """Base class. `sqlstate` is the Postgres error code sent to clients."""

    sqlstate = "XX000"
    severity = "ERROR"

    def __init__(self, message: str, *, detail: str | None = None, hint: str | None = None,
                 position: int | None = None, job_id: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.detail = detail
        self.hint = hint
        self.position = position  # 1-based character offset into the statement, as Postgres
        self.job_id = job_id  # the streaming job whose own plan failed (`job_plan_failed`), across RPC too

    def to_json(self) -> dict:
        return {"sqlstate": self.sqlstate, "message": self.message, "detail": self.detail,
                "hint": self.hint, "job_id": self.job_id}

    @staticmethod
    def from_json(d: dict) -> RisingSparkError:
        cls = _BY_SQLSTATE.get(d.get("sqlstate", ""), InternalError)
        err = cls(d.get("message", "unknown error"), detail=d.get("detail"), hint=d.get("hint"),
                  job_id=d.get("job_id"))
        return err


class InternalError(RisingSparkError):
    sqlstate = "XX000"


def job_plan_failed(job_id: int, name: str, reason: str) -> InternalError:
    """A streaming job whose plan Spark rejects (its analysis: the same every round, so recovery
    cannot mend it); `job_id` lets meta tell it from a failure of the round."""
    return InternalError(f'the plan of materialized view "{name}" cannot run: {reason}', job_id=job_id)


class SyntaxError_(RisingSparkError):
    sqlstate = "42601"


class InvalidColumnReference(RisingSparkError):
    sqlstate = "42P10"


class UndefinedTable(RisingSparkError):
    sqlstate = "42P01"


class UndefinedColumn(RisingSparkError):
    sqlstate = "42703"


class UndefinedFunction(RisingSparkError):
    sqlstate = "42883"


class AmbiguousFunction(RisingSparkError):
    sqlstate = "42725"


class UndefinedObject(RisingSparkError):
    sqlstate = "42704"


class InvalidSchemaName(RisingSparkError):
    sqlstate = "3F000"


class InvalidCatalogName(RisingSparkError):
    sqlstate = "3D000"


class DuplicateObject(RisingSparkError):
    sqlstate = "42710"


class DuplicateTable(RisingSparkError):
    sqlstate = "42P07"


class DuplicateDatabase(RisingSparkError):
    sqlstate = "42P04"


class DuplicateSchema(RisingSparkError):
    sqlstate = "42P06"


class DuplicateColumn(RisingSparkError):
    sqlstate = "42701"


class DuplicateFunction(RisingSparkError):
    sqlstate = "42723"


class DependentObjectsStillExist(RisingSparkError):
    sqlstate = "2BP01"


class WrongObjectType(RisingSparkError):
    sqlstate = "42809"


class DatatypeMismatch(RisingSparkError):
    sqlstate = "42804"


class GroupingError(RisingSparkError):
    sqlstate = "42803"


class AmbiguousColumn(RisingSparkError):
    sqlstate = "42702"


class FeatureNotSupported(RisingSparkError):
    sqlstate = "0A000"


class InvalidParameterValue(RisingSparkError):
    sqlstate = "22023"


class InvalidEscapeSequence(RisingSparkError):
    sqlstate = "22025"


class NullValueNotAllowed(RisingSparkError):
    sqlstate = "22004"


class CardinalityViolation(RisingSparkError):
    sqlstate = "21000"


class DatetimeFieldOverflow(RisingSparkError):
    sqlstate = "22008"


class InvalidRowCountInLimitClause(RisingSparkError):
    sqlstate = "2201W"


class InvalidRegularExpression(RisingSparkError):
    sqlstate = "2201B"


class SubstringError(RisingSparkError):
    sqlstate = "22011"


class InvalidArgumentForLogarithm(RisingSparkError):
    sqlstate = "2201E"


class InvalidArgumentForPowerFunction(RisingSparkError):
    sqlstate = "2201F"


class UndefinedParameter(RisingSparkError):
    """SET/SHOW of an unknown configuration parameter (Postgres: 42704)."""

    sqlstate = "42704"


class DataException(RisingSparkError):
    sqlstate = "22000"


class ExternalRoutineException(RisingSparkError):
    """An error raised inside a user-defined function's own code (a JavaScript exception): the SQL
    standard's class 38, which psycopg names ``ExternalRoutineException``."""

    sqlstate = "38000"


class InvalidTextRepresentation(RisingSparkError):
    sqlstate = "22P02"


class UntranslatableCharacter(DataException):
    """A character the server encoding has not (jsonb's ``\\u0000``)."""

    sqlstate = "22P05"


class NumericValueOutOfRange(RisingSparkError):
    sqlstate = "22003"


class DivisionByZero(RisingSparkError):
    sqlstate = "22012"


class NotNullViolation(RisingSparkError):
    sqlstate = "23502"


class BadCopyFileFormat(RisingSparkError):
    sqlstate = "22P04"


class InvalidDatetimeFormat(RisingSparkError):
    sqlstate = "22007"


class ProtocolViolation(RisingSparkError):
    sqlstate = "08P01"


class QueryCanceled(RisingSparkError):
    sqlstate = "57014"


class ObjectInUse(RisingSparkError):
    sqlstate = "55006"


class InsufficientPrivilege(RisingSparkError):
    sqlstate = "42501"


class ReservedName(RisingSparkError):
    sqlstate = "42939"


class InvalidGrantOperation(RisingSparkError):
    sqlstate = "0LP01"


class InvalidAuthorizationSpecification(RisingSparkError):
    """A connection for a user that does not exist or may not log in."""

    sqlstate = "28000"
    severity = "FATAL"


class InvalidPassword(RisingSparkError):
    sqlstate = "28P01"
    severity = "FATAL"


class AdminShutdown(RisingSparkError):
    sqlstate = "57P01"
    severity = "FATAL"


class TooManyConnections(RisingSparkError):
    sqlstate = "53300"
    severity = "FATAL"


class InvalidPreparedStatement(RisingSparkError):
    sqlstate = "26000"


class InvalidCursorName(RisingSparkError):
    sqlstate = "34000"


class ActiveSqlTransaction(RisingSparkError):
    sqlstate = "25001"


class ServiceUnavailable(RisingSparkError):
    """The cluster cannot serve the request now (recovering, a node missing)."""

    sqlstate = "58000"


_BY_SQLSTATE: dict[str, type[RisingSparkError]] = {}


def _register(cls: type[RisingSparkError]) -> None:
    _BY_SQLSTATE.setdefault(cls.sqlstate, cls)
    for sub in cls.__subclasses__():
        _register(sub)


_register(RisingSparkError)
