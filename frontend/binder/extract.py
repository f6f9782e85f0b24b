"""``extract(field FROM x)``, ``date_part('field', x)`` and ``to_char(x, template)``, as PostgreSQL 15.

``extract`` returns numeric and ``date_part`` double precision (PostgreSQL 14 changed extract; the
values are the same). Fields by operand type:

* timestamp, timestamptz (UTC): year, quarter, month, week (ISO), day, doy, dow (Sunday 0), isodow
  (Sunday 7), isoyear, hour, minute, second (with its fraction), millisecond, microsecond (both
  counting the whole seconds of the minute, as PostgreSQL), epoch, decade, century, millennium;
* date: the same but the time of day (hour .. microsecond, which PostgreSQL refuses for a date with
  0A000); ``date_part`` reads a date as the timestamp of its midnight, so it accepts them all;
* interval: year, month (of the year), day, hour, minute, second, millisecond, microsecond, epoch
  (a year as 365.25 days, a month as 30), computed from the fields with C's truncating division.

Time zone fields and julian are 0A000. Field names take PostgreSQL's spellings (``hours``,
``min``, ``secs``, ...).
"""

from __future__ import annotations

from sqlglot import exp

from frontend.dialect import DATE_PART, PG_FORMAT
from frontend.expr import BoundExpr, Cast, Extract, SparkCall
from frontend.pg_format import to_char_template
from risingspark.errors import FeatureNotSupported, InvalidParameterValue, UndefinedFunction
from risingspark.types import FLOAT8, NUMERIC, TIMESTAMP, VARCHAR, TypeName

_ALIASES = {
    "year": ("year", "years", "y", "yr", "yrs"), "month": ("month", "months", "mon", "mons"),
    "day": ("day", "days", "d"), "hour": ("hour", "hours", "h", "hr", "hrs"),
    "minute": ("minute", "minutes", "m", "min", "mins"), "second": ("second", "seconds", "s", "sec", "secs"),
    "millisecond": ("millisecond", "milliseconds", "ms", "msec", "msecs", "mseconds"),
    "microsecond": ("microsecond", "microseconds", "us", "usec", "usecs", "useconds"),
    "week": ("week", "weeks", "w"), "quarter": ("quarter", "qtr"), "decade": ("decade", "decades", "dec", "decs"),
    "century": ("century", "centuries", "c", "cent"), "millennium": ("millennium", "millennia", "mil", "mils"),
    "epoch": ("epoch",), "dow": ("dow",), "isodow": ("isodow",), "doy": ("doy",), "isoyear": ("isoyear",),
}
_CANONICAL = {alias: name for name, aliases in _ALIASES.items() for alias in aliases}

_MICROS = "pmod(unix_micros({}), 1000000)"  # the microseconds of the second
# Spark SQL over a TIMESTAMP `{}` (the operand cast to TIMESTAMP; the session time zone is UTC)
_TIMESTAMP_FIELDS = {
    "year": "year({})", "quarter": "quarter({})", "month": "month({})", "week": "weekofyear({})",
    "day": "day({})", "doy": "dayofyear({})", "dow": "(dayofweek({}) - 1)", "isodow": "(weekday({}) + 1)",
    "isoyear": "year(date_add(CAST({} AS DATE), 3 - weekday({})))",
    "hour": "hour({})", "minute": "minute({})",
    "second": f"(second({{}}) + CAST({_MICROS} AS DECIMAL(20, 6)) / 1000000)",
    "millisecond": f"(CAST(second({{}}) * 1000000 + {_MICROS} AS DECIMAL(20, 3)) / 1000)",
    "microsecond": f"(second({{}}) * 1000000 + {_MICROS})",
    "epoch": "(CAST(unix_micros({}) AS DECIMAL(38, 6)) / 1000000)",
    "decade": "(year({}) DIV 10)", "century": "((year({}) + 99) DIV 100)", "millennium": "((year({}) + 999) DIV 1000)",
}
_TIME_OF_DAY = ("hour", "minute", "second", "millisecond", "microsecond")
# Spark SQL over an interval struct {0}; C's / and % truncate toward zero, as Spark's DIV and %
_INTERVAL_FIELDS = {
    "year": "({0}.months DIV 12)", "month": "({0}.months % 12)", "day": "{0}.days",
    "hour": "({0}.usecs DIV 3600000000)", "minute": "(({0}.usecs DIV 60000000) % 60)",
    "second": "(CAST({0}.usecs % 60000000 AS DECIMAL(20, 6)) / 1000000)",
    "millisecond": "(CAST({0}.usecs % 60000000 AS DECIMAL(20, 3)) / 1000)",
    "microsecond": "({0}.usecs % 60000000)",
    "epoch": ("(CAST({0}.usecs AS DECIMAL(38, 6)) / 1000000 + CAST({0}.months DIV 12 AS DECIMAL(38, 0)) * 31557600"
              " + CAST({0}.months % 12 AS DECIMAL(38, 0)) * 2592000 + CAST({0}.days AS DECIMAL(38, 0)) * 86400)"),
}


def bind_extract(node: exp.Extract, rec) -> BoundExpr:
    """``extract(field FROM x)`` (numeric) or ``date_part('field', x)`` (double precision)."""
    date_part = bool(node.meta.get(DATE_PART))
    what = "date_part" if date_part else "extract"
    written = node.this.name.lower() if node.this is not None else ""
    field = _CANONICAL.get(written)
    x = rec(node.expression)
    result = FLOAT8 if date_part else NUMERIC
    if x.type.name is TypeName.INTERVAL:
        if field not in _INTERVAL_FIELDS:
            raise FeatureNotSupported(f'unit "{written}" of {what}(interval) is not supported')
        return SparkCall(what, (x,), result, f"CAST({_INTERVAL_FIELDS[field]} AS {result.to_spark()})")
    if x.type.name is TypeName.DATE:
        if field in _TIME_OF_DAY and not date_part:
            raise FeatureNotSupported(f'unit "{written}" not supported for type date')
        x = Cast(x, TIMESTAMP)
    if x.type.name not in (TypeName.TIMESTAMP, TypeName.TIMESTAMPTZ):
        raise UndefinedFunction(f"function {what}(unknown, {x.type.display()}) does not exist")
    if field is None:
        raise InvalidParameterValue(f'unit "{written}" not recognized for type {x.type.display()}') \
            if written not in ("timezone", "timezone_hour", "timezone_minute", "julian") else \
            FeatureNotSupported(f'{what} unit "{written}" is not supported in a materialized view yet')
    return Extract(field, x, result, _TIMESTAMP_FIELDS[field])


def bind_to_char(node: exp.TimeToStr, rec) -> BoundExpr:
    """``to_char(timestamp | date, 'template')``: the template translated by `frontend.pg_format`."""
    x = rec(node.this)
    template = node.meta.get(PG_FORMAT)
    if x.type.name not in (TypeName.DATE, TypeName.TIMESTAMP, TypeName.TIMESTAMPTZ):
        raise FeatureNotSupported(f"to_char({x.type.display()}, text) in a materialized view is not supported yet")
    if template is None:
        raise FeatureNotSupported("to_char in a materialized view needs a constant template")
    ts = Cast(x, TIMESTAMP) if x.type.name is TypeName.DATE else x
    return SparkCall("to_char", (ts,), VARCHAR, to_char_template(template))
