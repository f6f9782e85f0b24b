"""``to_char(timestamp, template)`` in batch queries, as PostgreSQL formats it.

sqlglot translates a ``to_char`` template into strftime for DuckDB, and the translation is not
PostgreSQL's: ``Mon DD YYYY HH:MI PM Day`` came out as ``Mon 05 2024 HH:04 PM 2ay`` (PostgreSQL:
``Mar 05 2024 03:04 PM Tuesday  ``). Here the call becomes ``rs_to_char(CAST(x AS TIMESTAMP),
template)``, a DuckDB function that reads the template as PostgreSQL's ``parse_format`` does
(`frontend.pg_format.parse_template`: exact-case keywords, ``FM``/``TM`` prefixes, ``TH`` suffixes,
quoted text) and formats each value in Python, with the same English names and padding materialized
views use (`frontend.pg_format` writes them for Spark). A template written as a constant is the one
the client wrote (``meta["pg_format"]``, kept by `frontend.dialect`); an empty template gives NULL,
as in PostgreSQL. Time zone patterns (``TZ``, ``OF``...) and spelled-out numbers (``SP``) are 0A000.
Values are formatted in UTC (the batch engine's time zone).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

import duckdb
import pyarrow as pa
from duckdb import func
from sqlglot import exp

from frontend.dialect import PG_FORMAT
from frontend.pg_format import (
    _DAYS,
    _ERAS,
    _FRACTIONS,
    _LOWER_NUMBERS,
    _MARKS,
    _MONTHS,
    _ROMAN,
    _THOUSANDS,
    _UNSUPPORTED,
    Token,
    parse_template,
)
from frontend.pgwire.codec import naive_timestamp
from risingspark.errors import FeatureNotSupported, RisingSparkError

UDF = "rs_to_char"


def _seconds_of_day(t: dt.datetime) -> int:
    return t.hour * 3600 + t.minute * 60 + t.second


def _fraction(digits: int) -> Callable[[dt.datetime], int]:
    return lambda t: t.microsecond // 10 ** (6 - digits)


# keyword -> (the number of a timestamp, zero-padded width); width 0: no padding
_NUMBERS: dict[str, tuple[Callable[[dt.datetime], int], int]] = {
    "YYYY": (lambda t: t.year, 4), "YYY": (lambda t: t.year % 1000, 3), "YY": (lambda t: t.year % 100, 2),
    "Y": (lambda t: t.year % 10, 1), "IYYY": (lambda t: t.isocalendar()[0], 4),
    "IYY": (lambda t: t.isocalendar()[0] % 1000, 3), "IY": (lambda t: t.isocalendar()[0] % 100, 2),
    "I": (lambda t: t.isocalendar()[0] % 10, 1), "CC": (lambda t: (t.year + 99) // 100, 2),
    "Q": (lambda t: (t.month - 1) // 3 + 1, 0), "MM": (lambda t: t.month, 2),
    "WW": (lambda t: (t.timetuple().tm_yday - 1) // 7 + 1, 2), "IW": (lambda t: t.isocalendar()[1], 2),
    "W": (lambda t: (t.day - 1) // 7 + 1, 0), "DDD": (lambda t: t.timetuple().tm_yday, 3), "DD": (lambda t: t.day, 2),
    "D": (lambda t: t.isoweekday() % 7 + 1, 0), "ID": (lambda t: t.isoweekday(), 0),
    "J": (lambda t: t.toordinal() + 1_721_425, 0), "HH": (lambda t: (t.hour + 11) % 12 + 1, 2),
    "HH12": (lambda t: (t.hour + 11) % 12 + 1, 2), "HH24": (lambda t: t.hour, 2), "MI": (lambda t: t.minute, 2),
    "SS": (lambda t: t.second, 2), "MS": (lambda t: t.microsecond // 1000, 3), "US": (lambda t: t.microsecond, 6),
    "SSSS": (_seconds_of_day, 0), "SSSSS": (_seconds_of_day, 0),
    **{f"FF{n}": (_fraction(n), n) for n in range(1, 7)},
}
# keyword (in its written case) -> (names, the 1-based index of a timestamp's, padded width)
_NAMES: dict[str, tuple[tuple[str, ...], Callable[[dt.datetime], int], int]] = {}
for _word, _names, _index, _width in (("MONTH", _MONTHS, lambda t: t.month, 9),
                                      ("MON", tuple(m[:3] for m in _MONTHS), lambda t: t.month, 0),
                                      ("DAY", _DAYS, lambda t: t.isoweekday() % 7 + 1, 9),
                                      ("DY", tuple(d[:3] for d in _DAYS), lambda t: t.isoweekday() % 7 + 1, 0)):
    _NAMES[_word] = (tuple(n.upper() for n in _names), _index, _width)
    _NAMES[_word.capitalize()] = (_names, _index, _width)
    _NAMES[_word.lower()] = (tuple(n.lower() for n in _names), _index, _width)
_NAMES["RM"] = (_ROMAN, lambda t: t.month, 4)
_NAMES["rm"] = (tuple(r.lower() for r in _ROMAN), lambda t: t.month, 4)

Piece = Callable[[dt.datetime], str]


def compile_template(template: str) -> list[Piece]:
    """The template as functions of a timestamp, one per pattern or literal (0A000 for the patterns
    the module doc names)."""
    return [_piece(token) for token in parse_template(template)]


def format_timestamp(t: dt.datetime, pieces: list[Piece]) -> str:
    return "".join(p(t) for p in pieces)


def _piece(token: Token) -> Piece:
    if isinstance(token, str):
        text = token[1:-1] if token.startswith('"') and len(token) > 1 else token
        return lambda t: text
    word, prefix, suffix = token
    if suffix in ("SP", "sp") or word in _UNSUPPORTED:
        raise FeatureNotSupported(f'to_char pattern "{prefix}{word}{suffix}" is not supported')
    if word in _THOUSANDS and not suffix:
        return lambda t: f"{t.year // 1000},{t.year % 1000:03d}"
    key = _LOWER_NUMBERS.get(word, word)
    if key in _NUMBERS:
        number, width = _NUMBERS[key]
        pad = width if width and (prefix != "FM" or key in _FRACTIONS) else 0
        upper = suffix == "TH"
        if suffix:
            return lambda t: f"{number(t):0{pad}d}" + _ordinal(number(t), upper)
        return lambda t: f"{number(t):0{pad}d}"
    if suffix:
        raise FeatureNotSupported(f'to_char pattern "{word}{suffix}" is not supported: TH applies to numbers')
    if word in _NAMES:
        names, index, width = _NAMES[word]
        pad = width if width and not prefix else 0
        return lambda t: names[index(t) - 1].ljust(pad)
    if word in _MARKS:
        am, pm = _MARKS[word]
        return lambda t: am if t.hour < 12 else pm
    era = _ERAS[word]
    return lambda t: era


def _ordinal(n: int, upper: bool) -> str:
    """PostgreSQL's ``get_th``: 11th-19th, then 1st, 2nd, 3rd, else th."""
    th, st, nd, rd = ("TH", "ST", "ND", "RD") if upper else ("th", "st", "nd", "rd")
    if 10 <= n % 100 <= 19:
        return th
    return {1: st, 2: nd, 3: rd}.get(n % 10, th)


def register_to_char(con: duckdb.DuckDBPyConnection) -> None:
    """``rs_to_char(TIMESTAMP, VARCHAR)``, vectorized over Arrow arrays (a template compiled once
    per distinct template in a batch)."""
    from frontend.catalog.composite import udf_failure

    def run(stamps: pa.Array, templates: pa.Array) -> pa.Array:
        compiled: dict[str, list[Piece]] = {}
        out: list[str | None] = []
        if isinstance(stamps, pa.ChunkedArray):
            stamps = stamps.combine_chunks()
        micros = stamps.cast(pa.timestamp("us")).view(pa.int64()).to_pylist()  # (Python's datetime: years 1-9999)
        try:
            for m, template in zip(micros, templates.to_pylist(), strict=True):
                try:
                    t = None if m is None or not template else naive_timestamp(m)
                except OverflowError:
                    raise FeatureNotSupported("to_char of a timestamp before the year 1 or after 9999 is not "
                                              "supported") from None
                if t is None:
                    out.append(None)  # (PostgreSQL's to_char of infinity is NULL too)
                    continue
                pieces = compiled.get(template)
                if pieces is None:
                    pieces = compiled[template] = compile_template(template)
                out.append(format_timestamp(t, pieces))
        except RisingSparkError as e:
            raise udf_failure(e) from None
        return pa.array(out, pa.string())

    con.create_function(UDF, run, [duckdb.sqltype("TIMESTAMP"), duckdb.sqltype("VARCHAR")], duckdb.sqltype("VARCHAR"),
                        type=func.ARROW, null_handling=func.SPECIAL, side_effects=False)


def to_char(query: exp.Expression, ctx: object = None) -> exp.Expression:
    """Every ``to_char`` of a timestamp (sqlglot's ``TimeToStr``) as ``rs_to_char``; a constant
    template is checked here, so its 0A000 comes before any row is read."""
    for node in list(query.find_all(exp.TimeToStr)):
        written = node.meta.get(PG_FORMAT)
        if isinstance(written, str):
            compile_template(written)
            template: exp.Expression = exp.Literal.string(written)
        else:
            template = node.args["format"].copy()
        node.replace(exp.Anonymous(this=UDF, expressions=[exp.cast(node.this.copy(), "TIMESTAMP"), template]))
    return query
