"""PostgreSQL's ``interval``: months, days and microseconds, kept apart as PostgreSQL keeps them.

A month has no fixed length (``timestamp '2024-01-31' + interval '1 month'`` is Feb 29) and a day is
not always 24 hours in a time zone, so an interval is three signed fields, never one duration. It is
stored (Parquet SSTs, Spark rows, DuckDB) as the struct ``STRUCT<months INT32, days INT32, usecs
INT64>`` (`ARROW_TYPE`) and sent over the wire as PostgreSQL prints it with ``IntervalStyle=postgres``
(`Interval.pg_text`) or in its binary layout (usecs int64, days int32, months int32).

Two intervals compare by their *span*, ``months * 30 days + days * 24 h + usecs`` (PostgreSQL's
``interval_cmp``): ``'1 mon' = '30 days'`` although they print differently, so a stored struct is
not a key (grouping or joining by it would split equal values; `frontend.planner` refuses that).

`parse` reads PostgreSQL's input syntax: unit pairs (``'1 year 2 mons'``, ``'-3 days'``, with
fractions cascading down, ``'1.5 days'`` = 1 day 12 hours), a time (``'04:05:06.7'``, ``'-1:00'``),
``@`` and ``ago``, a bare number (seconds, or days before a time), and a unit qualifier as in
``INTERVAL '71' DAY``.

>>> parse("1 day 2 hours").pg_text()
'1 day 02:00:00'
>>> parse("71", "day").pg_text(), parse("-1 year -2 mons +3 days -04:05:06.5").pg_text()
('71 days', '-1 years -2 mons +3 days -04:05:06.5')
>>> parse("1.5 months").pg_text(), parse("@ 1 hour ago").pg_text()
('1 mon 15 days', '-01:00:00')
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

import numpy as np
import pyarrow as pa

from risingspark.errors import DataException, FeatureNotSupported, InvalidDatetimeFormat

USECS_PER_SEC = 1_000_000
USECS_PER_MINUTE = 60 * USECS_PER_SEC
USECS_PER_HOUR = 60 * USECS_PER_MINUTE
USECS_PER_DAY = 24 * USECS_PER_HOUR
DAYS_PER_MONTH = 30

FIELDS = ("months", "days", "usecs")
ARROW_TYPE = pa.struct([pa.field("months", pa.int32()), pa.field("days", pa.int32()), pa.field("usecs", pa.int64())])

_INT32 = 2**31
_INT64 = 2**63


class IntervalFieldOverflow(DataException):
    sqlstate = "22008"  # datetime_field_overflow, as PostgreSQL's "interval out of range"


@dataclass(frozen=True, order=False)
class Interval:
    months: int = 0
    days: int = 0
    usecs: int = 0

    def __post_init__(self) -> None:
        if not (-_INT32 <= self.months < _INT32 and -_INT32 <= self.days < _INT32 and -_INT64 <= self.usecs < _INT64):
            raise IntervalFieldOverflow("interval out of range")

    @property
    def span(self) -> int:
        """The length PostgreSQL compares intervals by, in microseconds (a month is 30 days)."""
        return (self.months * DAYS_PER_MONTH + self.days) * USECS_PER_DAY + self.usecs

    def __neg__(self) -> Interval:
        return Interval(-self.months, -self.days, -self.usecs)

    def __add__(self, other: Interval) -> Interval:
        return Interval(self.months + other.months, self.days + other.days, self.usecs + other.usecs)

    def as_dict(self) -> dict[str, int]:
        return {"months": self.months, "days": self.days, "usecs": self.usecs}

    def pg_text(self) -> str:
        """The text PostgreSQL prints with ``IntervalStyle=postgres`` (its ``EncodeInterval``):
        ``1 year 2 mons -3 days +04:05:06.5``; a field's sign is shown where it differs from the
        previous negative field; ``00:00:00`` for zero."""
        years, mons = _trunc_divmod(self.months, 12)
        hours, rest = _trunc_divmod(self.usecs, USECS_PER_HOUR)
        minutes, rest = _trunc_divmod(rest, USECS_PER_MINUTE)
        parts: list[str] = []
        before = False  # the previous field was negative
        for value, unit in ((years, "year"), (mons, "mon"), (self.days, "day")):
            if value == 0:
                continue
            plus = "+" if before and value > 0 else ""
            parts.append(f"{plus}{value} {unit}{'' if value == 1 else 's'}")
            before = value < 0
        if not parts or self.usecs != 0:
            sign = "-" if self.usecs < 0 else ("+" if before else "")
            secs, frac = divmod(abs(rest), USECS_PER_SEC)
            text = f"{sign}{abs(hours):02d}:{abs(minutes):02d}:{secs:02d}"
            if frac:
                text += f".{frac:06d}".rstrip("0")
            parts.append(text)
        return " ".join(parts)

    def to_binary(self) -> bytes:
        return struct.pack("!qii", self.usecs, self.days, self.months)

    @classmethod
    def from_value(cls, v: object) -> Interval:
        """From a stored struct (a dict), a DuckDB/Arrow month-day-nano value or a timedelta."""
        if isinstance(v, Interval):
            return v
        if isinstance(v, dict):
            return cls(int(v["months"]), int(v["days"]), int(v["usecs"]))
        if isinstance(v, pa.MonthDayNano):
            return cls(v.months, v.days, v.nanoseconds // 1000)
        import datetime as dt

        if isinstance(v, dt.timedelta):
            return cls(0, v.days, v.seconds * USECS_PER_SEC + v.microseconds)
        raise TypeError(f"not an interval: {v!r}")


def _trunc_divmod(a: int, b: int) -> tuple[int, int]:
    """C's ``/`` and ``%``: the quotient truncated toward zero, the remainder with a's sign."""
    q = abs(a) // abs(b) * (1 if (a >= 0) == (b >= 0) else -1)
    return q, a - q * b


def to_arrow(values: list[Interval | None]) -> pa.Array:
    return pa.array([None if v is None else v.as_dict() for v in values], ARROW_TYPE)


def is_interval_struct(t: pa.DataType) -> bool:
    return pa.types.is_struct(t) and t.equals(ARROW_TYPE)


_MDN = np.dtype([("months", "<i4"), ("days", "<i4"), ("nanos", "<i8")])  # Arrow's month_day_nano layout


def from_month_day_nano(arr: pa.Array | pa.ChunkedArray) -> pa.Array:
    """A month-day-nano interval column (DuckDB's intervals) as the stored struct."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    raw = np.frombuffer(arr.buffers()[1], _MDN, count=len(arr) + arr.offset)[arr.offset:]
    mask = arr.is_null()
    fields = [pa.array(raw["months"]), pa.array(raw["days"]), pa.array(raw["nanos"] // 1000)]
    return pa.StructArray.from_arrays(fields, fields=list(ARROW_TYPE), mask=mask)


def to_month_day_nano(arr: pa.Array | pa.ChunkedArray) -> pa.Array:
    """The stored struct as a month-day-nano interval column (for DuckDB, whose INTERVAL is
    PostgreSQL's months, days and microseconds)."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    raw = np.zeros(len(arr), _MDN)
    for name, out in (("months", "months"), ("days", "days"), ("usecs", "nanos")):
        values = arr.field(name).fill_null(0).to_numpy(zero_copy_only=False)
        raw[out] = values * 1000 if name == "usecs" else values
    validity = arr.is_valid()
    buffers = [validity.buffers()[1] if arr.null_count else None, pa.py_buffer(raw.tobytes())]
    return pa.Array.from_buffers(pa.month_day_nano_interval(), len(arr), buffers, null_count=arr.null_count)


def duckdb_ready(table: pa.Table) -> pa.Table:
    """`table` with its interval structs as month-day-nano intervals (what DuckDB reads as INTERVAL)."""
    for i, f in enumerate(table.schema):
        if is_interval_struct(f.type):
            table = table.set_column(i, pa.field(f.name, pa.month_day_nano_interval()),
                                     to_month_day_nano(table.column(i)))
    return table


# ---- input ----------------------------------------------------------------------------------------
# unit -> (months, days, usecs) per unit; PostgreSQL's DecodeUnits spellings
_UNITS: dict[str, tuple[int, int, int]] = {}
for _names, _value in (
        (("microsecond", "microseconds", "us", "usec", "usecs", "useconds"), (0, 0, 1)),
        (("millisecond", "milliseconds", "ms", "msec", "msecs", "mseconds"), (0, 0, 1000)),
        (("second", "seconds", "s", "sec", "secs"), (0, 0, USECS_PER_SEC)),
        (("minute", "minutes", "m", "min", "mins"), (0, 0, USECS_PER_MINUTE)),
        (("hour", "hours", "h", "hr", "hrs"), (0, 0, USECS_PER_HOUR)),
        (("day", "days", "d"), (0, 1, 0)),
        (("week", "weeks", "w"), (0, 7, 0)),
        (("month", "months", "mon", "mons"), (1, 0, 0)),
        (("year", "years", "y", "yr", "yrs"), (12, 0, 0)),
        (("decade", "decades", "dec", "decs"), (120, 0, 0)),
        (("century", "centuries", "c", "cent"), (1200, 0, 0)),
        (("millennium", "millennia", "mil", "mils"), (12000, 0, 0))):
    for _n in _names:
        _UNITS[_n] = _value

_TOKEN = re.compile(r"\s*(?:(?P<time>[+-]?\d+:\d+(?::\d+(?:\.\d*)?)?)|(?P<num>[+-]?(?:\d+\.?\d*|\.\d+))|"
                    r"(?P<word>[a-z]+)|(?P<at>@))", re.IGNORECASE)


def parse(text: str, unit: str | None = None) -> Interval:
    """An interval from PostgreSQL's input syntax; `unit`: the qualifier of ``INTERVAL '..' DAY``
    (a bare number counts in it)."""
    s = text.strip().lower()
    qualifier = _UNITS.get(unit.lower()) if unit else None
    if unit and qualifier is None:
        raise FeatureNotSupported(f"interval qualifier {unit.upper()} is not supported")
    months = Decimal(0)
    days = Decimal(0)
    usecs = Decimal(0)
    pos, pending, ago = 0, None, False
    tokens: list[tuple[str, str]] = []
    while pos < len(s):
        m = _TOKEN.match(s, pos)
        if m is None or m.end() == pos:
            raise InvalidDatetimeFormat(f'invalid input syntax for type interval: "{text}"')
        pos = m.end()
        kind = m.lastgroup
        assert kind is not None
        tokens.append((kind, m.group(kind)))
    for i, (kind, tok) in enumerate(tokens):
        if kind == "at" and i == 0:
            continue
        if kind == "num":
            if pending is not None:
                raise InvalidDatetimeFormat(f'invalid input syntax for type interval: "{text}"')
            pending = tok
            continue
        if kind == "word" and tok == "ago" and i == len(tokens) - 1:
            ago = True
            continue
        if kind == "word" and tok in _UNITS and pending is not None:
            amount = _decimal(pending, text)
            pending = None
            mo, d, us = _UNITS[tok]
            if mo:
                total = amount * mo
                whole = int(total)
                months += whole
                days += _fraction_days(total - whole)
            elif d:
                total = amount * d
                whole = int(total)
                days += whole
                usecs += (total - whole) * USECS_PER_DAY
            else:
                usecs += amount * us
            continue
        if kind == "time":
            if pending is not None:  # '1 12:00': a bare number before a time counts days
                days += int(_decimal(pending, text))
                pending = None
            usecs += _time_usecs(tok)
            continue
        raise InvalidDatetimeFormat(f'invalid input syntax for type interval: "{text}"')
    if pending is not None:
        amount = _decimal(pending, text)
        mo, d, us = qualifier or _UNITS["second"]
        if mo:
            total = amount * mo
            months += int(total)
            days += _fraction_days(total - int(total))
        elif d:
            days += int(amount * d)
            usecs += (amount * d - int(amount * d)) * USECS_PER_DAY
        else:
            usecs += amount * us
    elif not tokens or tokens == [("at", "@")]:
        raise InvalidDatetimeFormat(f'invalid input syntax for type interval: "{text}"')
    out = Interval(int(months), int(days), int(usecs.to_integral_value()))
    return -out if ago else out


def _fraction_days(months_fraction: Decimal) -> int:
    """A fraction of a month carried into days, as PostgreSQL (``'1.5 months'`` = 1 mon 15 days);
    the rest of a day is dropped, as its ``AdjustFractDays`` rounding does for whole inputs."""
    return int(months_fraction * DAYS_PER_MONTH)


def _decimal(tok: str, text: str) -> Decimal:
    try:
        return Decimal(tok)
    except InvalidOperation:
        raise InvalidDatetimeFormat(f'invalid input syntax for type interval: "{text}"') from None


def _time_usecs(tok: str) -> Decimal:
    negative = tok.startswith("-")
    parts = tok.lstrip("+-").split(":")
    hours, minutes = int(parts[0]), int(parts[1])
    seconds = Decimal(parts[2]) if len(parts) > 2 else Decimal(0)
    total = hours * USECS_PER_HOUR + minutes * USECS_PER_MINUTE + seconds * USECS_PER_SEC
    return -total if negative else total
