"""DuckDB's errors as PostgreSQL reports them: its SQLSTATE and its wording, so a client sees
``invalid input syntax for type integer: "abc"`` (22P02) where DuckDB says ``Could not convert
string 'abc' to INT32``. `tests/unit/frontend/test_batch_errors.py` runs each case on PostgreSQL and
on DuckDB and compares."""

from __future__ import annotations

import re

import duckdb

from frontend.catalog.composite import udf_error
from frontend.catalog.pg_function_names import postgresql_functions
from frontend.values import special_numeric_error
from risingspark.errors import (
    CardinalityViolation,
    DataException,
    DatatypeMismatch,
    DatetimeFieldOverflow,
    DivisionByZero,
    FeatureNotSupported,
    GroupingError,
    InvalidDatetimeFormat,
    InvalidEscapeSequence,
    InvalidParameterValue,
    InvalidRegularExpression,
    InvalidRowCountInLimitClause,
    InvalidTextRepresentation,
    NumericValueOutOfRange,
    RisingSparkError,
    SyntaxError_,
    UndefinedColumn,
    UndefinedFunction,
    UndefinedTable,
)

_COLUMN_NOT_FOUND = re.compile(r'Referenced column "([^"]+)" not found')
_TABLE_NOT_FOUND = re.compile(r'Table with name ([^ ]+) does not exist')
_FUNC_NOT_FOUND = re.compile(r"(?:Scalar|Aggregate|Table) Function with name ([^ ]+) does not exist")
_NOT_CONVERTED = re.compile(r"""Could not convert string (['"])(.*)\1 to ([A-Z0-9_]+)""", re.DOTALL)
_CAST_OUT_OF_RANGE = re.compile(r"Type \w+ with value .* can't be cast because the value is out of range for the "
                                r"destination type (\w+)")
_OVERFLOW = re.compile(r"Overflow in \w+ of (\w+)")
_DECIMAL = re.compile(r"DECIMAL\((\d+),\s*(\d+)\)")
_NUMBER = re.compile(r"\s*[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?\s*")
_DATE_FORMAT = re.compile(r'invalid (date|timestamp) field format: "(.*)", expected format')
# DuckDB's physical type names -> PostgreSQL's
PG_TYPE = {"INT16": "smallint", "INT32": "integer", "INT64": "bigint", "INT128": "numeric", "DOUBLE": "double precision",
           "FLOAT": "real", "DECIMAL": "numeric", "BOOL": "boolean", "BOOLEAN": "boolean", "DATE": "date",
           "TIMESTAMP": "timestamp without time zone", "INTERVAL": "interval", "INT8": "tinyint", "UUID": "uuid", "TIME": "time without time zone", "SMALLINT": "smallint",
           "INTEGER": "integer", "BIGINT": "bigint"}
_INTEGERS = {"INT16", "INT32", "INT64"}
_DATETIMES = {"DATE", "TIMESTAMP", "INTERVAL", "TIME"}  # 22007, as PostgreSQL's datetime input errors


def translate_duckdb_error(e: duckdb.Error) -> RisingSparkError:
    msg = str(e).split("\n")[0]
    if (udf := udf_error(msg)) is not None:  # a jsonb operator's own error
        return udf
    if "Cannot cast STRUCTs of different size" in msg:
        return DatatypeMismatch("cannot cast type record to a struct of another number of fields")
    body = msg.split(": ", 1)[1] if ": " in msg else msg
    if isinstance(e, duckdb.ParserException):
        return SyntaxError_(f"syntax error: {body}")
    if (known := _known(msg, body)) is not None:
        return known
    if isinstance(e, duckdb.BinderException | duckdb.CatalogException):
        if m := _COLUMN_NOT_FOUND.search(msg):
            return UndefinedColumn(f'column "{m.group(1)}" does not exist')
        if m := _TABLE_NOT_FOUND.search(msg):
            return UndefinedTable(f'relation "{m.group(1)}" does not exist')
        if m := _FUNC_NOT_FOUND.search(msg):
            name = m.group(1)
            if name.lower() in postgresql_functions():  # PostgreSQL has it, DuckDB not: a feature we lack
                return FeatureNotSupported(f"function {name}() is not supported in batch queries yet")
            return UndefinedFunction(f"function {name} does not exist")
        if "No function matches" in msg:
            return UndefinedFunction(body)
        return FeatureNotSupported(body) if "not supported" in msg.lower() else UndefinedFunction(body)
    if isinstance(e, duckdb.ConversionException):
        return _conversion(msg, body)
    if isinstance(e, duckdb.OutOfRangeException):
        if m := _OVERFLOW.search(msg):
            return NumericValueOutOfRange(f"{PG_TYPE.get(m.group(1), m.group(1).lower())} out of range")
        return NumericValueOutOfRange(body)
    if "Division by zero" in msg or "division by zero" in msg:
        return DivisionByZero("division by zero")
    if isinstance(e, duckdb.InvalidInputException):
        return DataException(body)
    if isinstance(e, duckdb.NotImplementedException):
        return FeatureNotSupported(body)
    return DataException(body)


_NOT_GROUPED = re.compile(r'column "([^"]+)" must appear in the GROUP BY clause')
_DATE_OUT_OF_RANGE = re.compile(r'date field value out of range: "(.*)"')


def _known(msg: str, body: str) -> RisingSparkError | None:
    """DuckDB's errors with a PostgreSQL counterpart of their own wording and SQLSTATE."""
    if "More than one row returned by a subquery used as an expression" in msg:
        return CardinalityViolation("more than one row returned by a subquery used as an expression")
    if m := _NOT_GROUPED.search(msg):
        return GroupingError(f'column "{m.group(1)}" must appear in the GROUP BY clause or be used in an aggregate '
                             f"function")
    if "WHERE clause cannot contain aggregates" in msg:
        return GroupingError("aggregate functions are not allowed in WHERE")
    if "LIMIT/OFFSET cannot be negative" in msg:
        return InvalidRowCountInLimitClause("LIMIT must not be negative")
    if 'argument in function "listagg" must be a constant expression' in msg:  # (string_agg's delimiter)
        return FeatureNotSupported("string_agg with a delimiter that is not a constant is not supported in batch "
                                   "queries")
    if "interval cannot be 0" in msg:
        return InvalidParameterValue("step size cannot equal zero")
    if "Like pattern must not end with escape character" in msg:
        return InvalidEscapeSequence("LIKE pattern must not end with escape character")
    if m := _DATE_OUT_OF_RANGE.search(msg):
        return DatetimeFieldOverflow(f'date/time field value out of range: "{m.group(1)}"')
    if msg.startswith("Invalid Input Error: missing )") or "Invalid Input Error: invalid perl operator" in msg:
        return InvalidRegularExpression(f"invalid regular expression: {body}")
    return None


def _conversion(msg: str, body: str) -> RisingSparkError:
    if (overflow := _decimal_overflow(msg)) is not None:
        return overflow
    if m := _NOT_CONVERTED.search(msg):
        value, duck_type = m.group(2), m.group(3)
        pg_type = PG_TYPE.get(duck_type, duck_type.lower())
        if duck_type in ("DECIMAL", "INT128") and (special := special_numeric_error(value)) is not None:
            return special
        if duck_type in _INTEGERS and re.fullmatch(r"\s*[+-]?\d+\s*", value):
            return NumericValueOutOfRange(f'value "{value}" is out of range for type {pg_type}')
        error = InvalidDatetimeFormat if duck_type in _DATETIMES else InvalidTextRepresentation
        return error(f'invalid input syntax for type {pg_type}: "{value}"')
    if m := _CAST_OUT_OF_RANGE.search(msg):
        return NumericValueOutOfRange(f"{PG_TYPE.get(m.group(1), m.group(1).lower())} out of range")
    if m := _DATE_FORMAT.search(msg):
        pg_type = "date" if m.group(1) == "date" else "timestamp"
        return InvalidDatetimeFormat(f'invalid input syntax for type {pg_type}: "{m.group(2)}"')
    if "out of range" in msg.lower() or "overflow" in msg.lower():
        return NumericValueOutOfRange(body)
    return InvalidTextRepresentation(body)


def _decimal_overflow(msg: str) -> RisingSparkError | None:
    """A number too big for a ``numeric(p, s)`` — DuckDB's cast of a double (``Could not cast
    value``), a decimal or integer (``out of range``), or a number's text (``Could not convert
    string "1e9"``) — as PostgreSQL's ``numeric field overflow`` and its detail."""
    m = _DECIMAL.search(msg)
    if m is None:
        return None
    text = _NOT_CONVERTED.search(msg)
    if not ("Could not cast value" in msg or "out of range" in msg or (text and _NUMBER.fullmatch(text.group(2)))):
        return None
    p, s = int(m.group(1)), int(m.group(2))
    bound = "1" if p == s else f"10^{p - s}"
    return NumericValueOutOfRange("numeric field overflow", detail=f"A field with precision {p}, scale {s} must "
                                                                   f"round to an absolute value less than {bound}.")
