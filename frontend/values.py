"""A fast reader for ``VALUES (...), (...)`` lists of plain literals.

Bulk loads send INSERTs with thousands of rows; parsing them into expression trees costs far more
than storing them. When every item is a literal (number, quoted string, NULL, TRUE, FALSE), the
rows are read by one regex scan and each column is cast by Arrow to its column type. Anything else
(an expression, a cast, DEFAULT) returns None and the statement takes the general path, which also
gives Postgres' exact error for a value that does not convert.

>>> read_values("VALUES (1, 'a''b', NULL), (2, 'c', TRUE)", 3)
[['1', '2'], ["a'b", 'c'], [None, 'true']]
"""

from __future__ import annotations

import re

import pyarrow as pa
import pyarrow.compute as pc

from risingspark import jsonb
from risingspark.errors import FeatureNotSupported
from risingspark.types import DataType, TypeName

_TOKEN = re.compile(
    r"""\s*(?:
        (?P<open>\()
      | (?P<close>\))
      | (?P<comma>,)
      | '(?P<str>(?:[^']|'')*)'
      | (?P<num>[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?))
      | (?P<kw>NULL|TRUE|FALSE)\b
      | \$(?P<param>[1-9][0-9]*)
    )""",
    re.VERBOSE | re.IGNORECASE,
)


def read_values(text: str, ncols: int) -> list[list[str | None]] | None:
    """Columns of literal texts (None for NULL), or None when the list is not plain literals."""
    m = re.match(r"\s*VALUES", text, re.IGNORECASE)
    if not m:
        return None
    pos = m.end()
    cols: list[list[str | None]] = [[] for _ in range(ncols)]
    end = len(text.rstrip().rstrip(";").rstrip())
    expect_row = True
    while pos < end:
        t = _TOKEN.match(text, pos)
        if t is None:
            return None
        pos = t.end()
        if expect_row:
            if t.lastgroup != "open":
                return None
            row: list[str | None] = []
            while True:
                v = _TOKEN.match(text, pos)
                if v is None or v.lastgroup not in ("str", "num", "kw"):
                    return None
                pos = v.end()
                if v.lastgroup == "str":
                    row.append(v.group("str").replace("''", "'"))
                elif v.lastgroup == "num":
                    row.append(v.group("num"))
                else:
                    kw = v.group("kw").upper()
                    row.append(None if kw == "NULL" else kw.lower())
                sep = _TOKEN.match(text, pos)
                if sep is None:
                    return None
                pos = sep.end()
                if sep.lastgroup == "close":
                    break
                if sep.lastgroup != "comma":
                    return None
            if len(row) != ncols:
                return None
            for c, v2 in zip(cols, row, strict=True):
                c.append(v2)
            expect_row = False
        else:
            if t.lastgroup != "comma":
                return None
            expect_row = True
    if expect_row or not cols or not cols[0] and ncols:
        return None
    return cols


def read_row(text: str) -> list[tuple[str, str | None]] | None:
    """The items of a one-row ``VALUES (...)`` of literals and parameters: ``("param", "3")`` for
    ``$3``, ``("str", text)``, ``("num", text)`` or ``("kw", "true" | "false" | None)`` for a literal;
    None for anything else (another row, an expression).

    >>> read_row("VALUES ($1, 'a''b', -2.5, NULL)")
    [('param', '1'), ('str', "a'b"), ('num', '-2.5'), ('kw', None)]
    """
    m = _ROW_START.match(text)
    if not m:
        return None
    pos, items = m.end(), []
    while True:
        v = _TOKEN.match(text, pos)
        if v is None or v.lastgroup not in ("str", "num", "kw", "param"):
            return None
        kind = v.lastgroup
        value = v.group(kind)
        if kind == "str":
            value = value.replace("''", "'")
        elif kind == "kw":
            value = None if value.upper() == "NULL" else value.lower()
        items.append((kind, value))
        sep = _TOKEN.match(text, v.end())
        if sep is None or sep.lastgroup not in ("comma", "close"):
            return None
        pos = sep.end()
        if sep.lastgroup == "close":
            return items if not text[pos:].strip().rstrip(";").strip() else None


_ROW_START = re.compile(r"\s*VALUES\s*\(", re.IGNORECASE)
INT_BITS = {TypeName.SMALLINT: 16, TypeName.INT: 32, TypeName.BIGINT: 64}
_INT_TEXT = re.compile(r"[+-]?[0-9]+")
SCALAR_VALUES = 16  # at most this many values of an integer or text column are converted in Python


def cast_column(values: list[str | None], t: DataType) -> pa.Array | None:
    """Arrow's cast of literal texts to a column type, rounding numerics as Postgres does; None
    when a value does not convert (the general path then reports the error). A few values of an
    integer or text column are converted in Python: an Arrow cast costs ~0.3 ms a call, and
    `cast_column` was 29 % of an asynchronous single-row INSERT's time in the session's thread
    (cProfile, 1,000 INSERTs)."""
    if len(values) <= SCALAR_VALUES and (bits := INT_BITS.get(t.name)) is not None:
        return _scalar_ints(values, bits, t)
    if len(values) <= SCALAR_VALUES and t.name is TypeName.VARCHAR:
        return pa.array(values, pa.string())
    arr = pa.array(values, pa.string())
    if t.name is TypeName.JSONB:
        return jsonb.op_in(arr)  # 22P02 for a text that is no JSON, as PostgreSQL
    if t.name is TypeName.STRUCT:
        if any(v is not None for v in values):
            raise struct_text_error(t)
        return pa.nulls(len(values), t.to_arrow())
    try:
        if t.name is TypeName.NUMERIC:
            p, s = t.effective_precision_scale
            wide = pc.cast(arr, pa.decimal128(38, min(38, max(s, 18))))
            rounded = pc.round(wide, ndigits=s, round_mode="half_towards_infinity")
            return pc.cast(rounded, pa.decimal128(p, s))
        if t.is_integer and any(v is not None and not _is_int(v) for v in values):
            return None
        return pc.cast(arr, t.to_arrow())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None


def struct_text_error(t: DataType) -> FeatureNotSupported:
    """PostgreSQL reads a composite value from its record text (``'(1,x)'``); RisingWave has no text
    input for structs, and neither has RisingSpark: ``ROW(...)`` builds them."""
    return FeatureNotSupported(f"text input of struct values ({t.display()}) is not supported; use ROW(...)")


def dml_duckdb_type(t: DataType) -> str:
    """The DuckDB type a DML statement casts a value to before it is stored: the column's, with
    jsonb as text (`canonical_jsonb` then checks and canonicalizes it; DuckDB's JSON cast does not)."""
    if t.name is TypeName.JSONB:
        return "VARCHAR"
    if t.name is TypeName.STRUCT:
        return "STRUCT(" + ", ".join(f'"{n.replace(chr(34), chr(34) * 2)}" {dml_duckdb_type(ft)}'
                                     for n, ft in t.fields) + ")"
    return t.to_duckdb()


def canonical_jsonb(arr: pa.Array | pa.ChunkedArray, t: DataType) -> pa.Array | pa.ChunkedArray:
    """A column about to be stored with its jsonb values (struct fields too) as canonical jsonb text;
    22P02 for a text that is no JSON."""
    if t.name is TypeName.JSONB:
        if isinstance(arr, pa.ChunkedArray):
            arr = arr.combine_chunks()
        if isinstance(arr, pa.ExtensionArray):
            arr = arr.storage
        return jsonb.op_in(arr.cast(pa.string()))
    if t.name is TypeName.STRUCT and _has_jsonb(t):
        if isinstance(arr, pa.ChunkedArray):
            arr = arr.combine_chunks()
        children = [canonical_jsonb(c, ft) for c, (_, ft) in zip(arr.flatten(), t.fields, strict=True)]
        return pa.StructArray.from_arrays(children, fields=list(t.to_arrow()),
                                          mask=arr.is_null() if arr.null_count else None)
    return arr


def _has_jsonb(t: DataType) -> bool:
    return t.name is TypeName.JSONB or any(_has_jsonb(ft) for _, ft in t.fields)


_SPECIAL = re.compile(r"\s*[+-]?(?:nan|inf|infinity)\s*", re.IGNORECASE)


def special_numeric_error(value: str) -> FeatureNotSupported | None:
    """The error for ``'NaN'``, ``'Infinity'`` or ``'-Infinity'`` given to a numeric column, None
    for any other text.

    PostgreSQL's numeric holds NaN (and since 14 ±Infinity); RisingSpark stores numeric as a
    fixed-scale 128-bit decimal (Arrow ``decimal128``, Spark ``DECIMAL(p, s)``, DuckDB ``DECIMAL``),
    which has no such values, and no engine in the pipeline computes with them. Rather than store
    something else (NULL, a sentinel) that would compare and aggregate wrongly, such a value is
    refused with 0A000 where it enters: INSERT, UPDATE and COPY. A streaming expression that would
    yield one (``'NaN'::float8::numeric``) yields NULL instead, as any failing streaming expression.
    ``double precision`` and ``real`` hold NaN and ±Infinity with PostgreSQL's semantics.

    >>> special_numeric_error("-Infinity").sqlstate
    '0A000'
    >>> special_numeric_error("1.5") is None
    True
    """
    if not _SPECIAL.fullmatch(value):
        return None
    return FeatureNotSupported(f'numeric value "{value}" is not supported: numeric is stored as a fixed-scale '
                               f"decimal, which holds no NaN or Infinity (use double precision for them)")


def _scalar_ints(values: list[str | None], bits: int, t: DataType) -> pa.Array | None:
    """Integer texts converted in Python (`int_value`); None when one does not convert (the general
    path reports it)."""
    out: list[int | None] = []
    for v in values:
        n = None if v is None else int_value(v, bits)
        if v is not None and n is None:
            return None
        out.append(n)
    return pa.array(out, t.to_arrow())


def int_value(text: str, bits: int) -> int | None:
    """An integer text (``[+-]digits``, PostgreSQL's blanks around it) as a `bits`-bit integer;
    None for any other text or a value out of range."""
    text = text.strip(" \t\n\r\v\f")  # PostgreSQL's blanks (isspace), not Unicode's
    if not _INT_TEXT.fullmatch(text):
        return None
    n = int(text)
    return n if -(1 << (bits - 1)) <= n < (1 << (bits - 1)) else None


def _is_int(v: str) -> bool:
    return v.lstrip("+-").isdigit()
