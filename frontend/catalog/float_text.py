"""The text of a double or a real as PostgreSQL writes it, in batch queries.

A result column of doubles reaches the client in PostgreSQL's text (the wire encodes the values,
`risingspark.float_text.format_float8`); a double made text inside the query is DuckDB's text:
``2::float8::text`` was ``2.0``, ``'NaN'::float8::text`` ``nan``, ``1e15::float8::text``
``1000000000000000.0``. PostgreSQL's ``float8out`` writes the shortest digits that read back as the
value, as DuckDB does, but lays them out otherwise: no ``.0`` on a whole number, ``NaN``,
``Infinity`` and ``-Infinity``, and an exponent from 10^15 up (10^6 for a real; DuckDB writes one
from 10^16), as below 10^-4. The macro ``rs_float8_text(text)`` (`MACRO`) turns DuckDB's text of a
double into PostgreSQL's with string functions. A real's needs its shortest digits, which DuckDB's
text does not always have (``145185.875`` for ``145185.88``): ``rs_float4_text(text)`` reads the
real back from DuckDB's text and writes it as the wire does (Arrow's shortest digits, and
`risingspark.float_text.format_float4` outside [10^-4, 10^6)).
`register_float_text` creates both on the batch engine's database.

The rule `float_text` uses it for an explicit cast to ``text``, ``varchar`` or ``char``: where the
operand's type is plain in the text (`frontend.catalog.operand_types`) the operand is written so,
elsewhere DuckDB is asked at run time (all branches text)::

    CASE typeof(x) WHEN 'DOUBLE' THEN CAST(rs_float8_text(CAST(x AS VARCHAR)) AS TEXT)
                   WHEN 'FLOAT' THEN CAST(rs_float4_text(CAST(x AS VARCHAR)) AS TEXT)
                   ELSE CAST(x AS TEXT) END

and for an operand of ``||`` whose type is a double or a real in plain sight, joined with one plainly
text (`_textual`: ``||`` also appends to arrays; an operand whose type is not plain is left).
``format()`` and ``concat()`` write their arguments with `float_text_of` too
(`frontend.catalog.format_function`).

>>> import sqlglot
>>> float_text(sqlglot.parse_one("SELECT 2::float8::text, 'a' || 1.5::real", read="risingwave")).sql("duckdb")
"SELECT CAST(RS_FLOAT8_TEXT(CAST(CAST(2 AS DOUBLE) AS TEXT)) AS TEXT), 'a' || RS_FLOAT4_TEXT(CAST(CAST(1.5 AS REAL) AS TEXT))"
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
from duckdb import func
from sqlglot import exp

from frontend.catalog.operand_types import FLOATS, OperandTypes
from risingspark.float_text import format_float4

if TYPE_CHECKING:
    from frontend.catalog.rewrite import RewriteContext

MACRO = (
    "CREATE OR REPLACE MACRO rs_float8_text(t) AS CASE "
    "WHEN t IN ('nan', '-nan') THEN 'NaN' WHEN t = 'inf' THEN 'Infinity' WHEN t = '-inf' THEN '-Infinity' "
    "WHEN contains(t, 'e') OR length(split_part(ltrim(t, '-'), '.', 1)) <= 15 THEN regexp_replace(t, '\\.0$', '') "
    # 10^15 and up: the digits without the point and trailing zeros, the first one before a point
    "ELSE CASE WHEN starts_with(t, '-') THEN '-' ELSE '' END "
    "|| regexp_replace(rtrim(replace(ltrim(t, '-'), '.', ''), '0'), '^(.)(.+)$', '\\1.\\2') "
    "|| 'e+' || lpad(CAST(length(split_part(ltrim(t, '-'), '.', 1)) - 1 AS VARCHAR), 2, '0') END"
)
UDFS = {"DOUBLE": "rs_float8_text", "FLOAT": "rs_float4_text"}  # (by DuckDB's type names)
_REAL_1E_4 = pa.scalar(1e-4, pa.float32())  # (the real nearest 10^-4: PostgreSQL writes it 0.0001)
_TEXT_TYPES = (exp.DataType.Type.TEXT, exp.DataType.Type.VARCHAR, exp.DataType.Type.CHAR, exp.DataType.Type.BPCHAR)


def float_text_of(x: exp.Expression, duckdb_type: str) -> exp.Expression:
    """PostgreSQL's text of `x`, a ``DOUBLE`` or a ``FLOAT`` (a real)."""
    return exp.Anonymous(this=UDFS[duckdb_type], expressions=[exp.cast(x.copy(), exp.DataType.Type.VARCHAR)])


def register_float_text(con: duckdb.DuckDBPyConnection) -> None:
    """``rs_float8_text`` and ``rs_float4_text`` (see the module doc)."""

    def float4_text(texts: pa.Array | pa.ChunkedArray) -> pa.Array:
        if isinstance(texts, pa.ChunkedArray):
            texts = texts.combine_chunks()
        values = pc.cast(texts, pa.float32())  # (DuckDB's text reads back as the real)
        out = pc.cast(values, pa.string())  # Arrow's: the shortest digits, laid out as PostgreSQL's in [1e-4, 1e6)
        magnitude = pc.abs(values)
        laid_out = pc.or_(pc.and_(pc.greater_equal(magnitude, _REAL_1E_4), pc.less(magnitude, 1e6)),
                          pc.equal(values, 0))
        redo = pc.invert(laid_out).fill_null(False)
        again = [format_float4(v) for v in pc.filter(values, redo).to_pylist()]
        return pc.replace_with_mask(out, redo, pa.array(again, pa.string())) if again else out

    con.execute(MACRO)
    con.create_function(UDFS["FLOAT"], float4_text, [duckdb.sqltype("VARCHAR")], duckdb.sqltype("VARCHAR"),
                        type=func.ARROW, side_effects=False)


def float_text(query: exp.Expression, ctx: RewriteContext | None = None) -> exp.Expression:
    types = OperandTypes.of(query, ctx)
    for node in reversed(list(query.find_all(exp.Cast, exp.DPipe))):
        if isinstance(node, exp.DPipe):
            for side, other in (("this", node.expression), ("expression", node.this)):
                kind = types.kind(node.args[side])
                if kind in FLOATS and _textual(other, types):
                    node.set(side, float_text_of(node.args[side], "DOUBLE" if kind == "double" else "FLOAT"))
            continue
        x, to = node.this, node.args.get("to")
        if not (isinstance(to, exp.DataType) and to.this in _TEXT_TYPES) or isinstance(x, exp.Literal | exp.Null):
            continue
        kind = types.kind(x)
        if kind is not None and kind not in FLOATS:
            continue
        if kind is not None:
            node.set("this", float_text_of(x, "DOUBLE" if kind == "double" else "FLOAT"))
            continue
        of_type = exp.Anonymous(this="typeof", expressions=[x.copy()])
        node.replace(exp.Case(this=of_type, ifs=[
            exp.If(this=exp.Literal.string(t), true=exp.Cast(this=float_text_of(x, t), to=to.copy()))
            for t in UDFS], default=node.copy()))
    return query


def _textual(e: exp.Expression, types: OperandTypes) -> bool:
    """Whether `e` is plainly text (a string literal, a cast to text, a varchar column, a ``||`` of
    one), so that ``||`` joins texts (of a double and an array it appends to the array)."""
    if isinstance(e, exp.DPipe):
        return _textual(e.this, types) or _textual(e.expression, types)
    return (isinstance(e, exp.Literal) and e.is_string) or types.kind(e) == "text" or \
        (isinstance(e, exp.Anonymous) and e.name in UDFS.values())
