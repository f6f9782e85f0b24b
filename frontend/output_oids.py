"""The type OIDs PostgreSQL describes a batch query's string outputs with, where they are not
character varying: ``text`` (OID 25) and ``regtype`` (2206).

The catalog has one string type, RisingWave's ``varchar`` (``TEXT`` is another name for it,
`risingspark.types`), and so does the binder: a result column of strings is described as a
``character varying`` (1043), as RisingWave describes it. PostgreSQL has both: a column declared
``VARCHAR`` is a character varying, but what a string expression makes is nearly always a
``text``. A declaration is not kept, so a column of a table, view or materialized view stays 1043
(as in RisingWave, and in PostgreSQL for a ``VARCHAR`` column); an output is described as text
where the query's text shows PostgreSQL types it so, by its expression's class (`_Classes.of`):

* ``text``: a cast to text, ``||``, a call of a function whose result is text (`_TEXT_FUNCTIONS`,
  `_TEXT_CALLS`: ``upper``, ``concat``, ``to_char``, ``substring``, ``->>``, ``format_type``...),
  ``max``, ``min`` and ``string_agg`` (PostgreSQL's take a text), a window's ``max`` or ``min``,
  ``NULLIF`` (its ``=`` takes texts);
* ``unknown``: a quoted literal (``null``: a bare NULL, which a common type ignores); an output of
  either is text too, as PostgreSQL resolves an ``unknown`` output;
* CASE, COALESCE, GREATEST and LEAST by PostgreSQL's common type: text when a branch is text
  (the preferred string type) or every branch is ``unknown``;
* a column of a subquery, a CTE or a VALUES list in its SELECT's FROM
  (`frontend.catalog.operand_types.OperandTypes.derived_values`), a column of a set operation and
  a scalar subquery by the same rule over the expressions that give their values;
* ``regtype``: ``pg_typeof(x)``, whose value is the type's name (`frontend.catalog.pg_typeof`);
  PostgreSQL's binary format of it is the type's OID (`frontend.pgwire.codec.binary_value`).

Anything else (a column of a relation, a cast to varchar, ``lag`` of a column, a call not listed)
keeps the result's type. The classes are found once per client statement, with the binder's types
(`frontend.session.Session.statement_types`), per top-level output: the outputs before a ``*``
count from the first column, those after one from the last (without a ``*``, the result must have
as many columns as the query's outputs); a ``*`` over a subquery or VALUES list
alone is its columns (a VALUES statement is ``SELECT * FROM (VALUES ...)``). `with_oids` labels the
result's columns (Arrow field metadata, which `described_oid` reads for RowDescription) where the
result's type is the varchar the OID replaces, so an array's ``||`` or a ``max`` of numbers is
never relabelled.

>>> import sqlglot
>>> q = sqlglot.parse_one("SELECT 'a' || x, x, upper(x), pg_typeof(x), coalesce(x, 'b'), coalesce(x::text, 'b'), "
...                      "v.y, v.z FROM t, (VALUES ('a', 'b'::varchar)) v(y, z)", read="risingwave")
>>> output_oids(q)
((25, None, 25, 2206, None, 25, 25, None), None)
"""

from __future__ import annotations

from typing import Literal

import pyarrow as pa
from sqlglot import exp

from frontend.catalog.derived_columns import derived_columns
from frontend.catalog.operand_types import OperandTypes
from frontend.catalog.rewrite import name_outputs
from risingspark.types import DataType, TypeName

TEXT, REGTYPE = 25, 2206
OID_KEY = b"pg_type_oid"  # (the field metadata `with_oids` sets)

# OIDs of the outputs before the first ``*`` and of those after the last, None for no ``*`` (an
# OID None: the result's type)
OutputOids = tuple[tuple[int | None, ...], tuple[int | None, ...] | None]
Class = Literal["text", "unknown", "null", "regtype"]

_TEXT_FUNCTIONS = (exp.DPipe, exp.Upper, exp.Lower, exp.Concat, exp.ConcatWs, exp.TimeToStr, exp.ToChar,
                   exp.Substring, exp.Trim, exp.Left, exp.Right, exp.GroupConcat, exp.Format, exp.Replace,
                   exp.MD5, exp.Pad, exp.SplitPart, exp.Initcap, exp.Chr, exp.RegexpReplace, exp.ArrayToString,
                   exp.JSONExtractScalar, exp.JSONBExtractScalar, exp.CurrentVersion, exp.Reverse, exp.Repeat,
                   exp.Translate, exp.Encode, exp.Hex, exp.Overlay, exp.Max, exp.Min, exp.Nullif)
_TEXT_CALLS = frozenset({
    "quote_ident", "quote_literal", "quote_nullable", "textcat", "btrim", "ltrim", "rtrim", "substr", "to_hex",
    "format_type", "current_setting", "pg_get_viewdef", "pg_get_expr", "pg_get_constraintdef", "pg_get_indexdef",
    "obj_description", "col_description", "shobj_description", "jsonb_typeof", "json_typeof", "jsonb_pretty"})
_TEXT_CASTS = (exp.DataType.Type.TEXT,)
_BRANCHING = (exp.Coalesce, exp.Greatest, exp.Least)


def output_oids(query: exp.Expression) -> OutputOids:
    """The OIDs of the client's query's top-level outputs where PostgreSQL's is text or regtype
    (see the module doc); None for the others."""
    query = name_outputs(query.copy())
    classes = _Classes(query)
    head, tail = classes.outputs(query)
    return tuple(_oid(c) for c in head), tuple(_oid(c) for c in tail) if tail is not None else None


def with_oids(table: pa.Table, oids: OutputOids | None) -> pa.Table:
    """`table` with its varchar columns that `oids` gives an OID labelled with it; unchanged when
    its columns are not the outputs `oids` names (more or fewer, or fewer than those around a ``*``)."""
    head, tail = oids or ((), ())
    n = table.num_columns
    if not any(head) and not any(tail or ()) or (n != len(head) if tail is None else n < len(head) + len(tail)):
        return table
    tail = tail or ()
    wanted = dict(enumerate(head)) | {n - len(tail) + i: oid for i, oid in enumerate(tail)}
    fields = list(table.schema)
    changed = False
    for i, oid in wanted.items():
        f = fields[i]
        if oid is not None and _is_varchar(f.type):
            fields[i] = f.with_metadata({**(f.metadata or {}), OID_KEY: str(oid).encode()})
            changed = True
    return table.cast(pa.schema(fields, table.schema.metadata)) if changed else table


def described_oid(field: pa.Field) -> int | None:
    """The OID `with_oids` labelled a column with, else None."""
    value = (field.metadata or {}).get(OID_KEY)
    return int(value) if value is not None else None


def _is_varchar(t: pa.DataType) -> bool:
    try:
        return DataType.from_arrow(t).name is TypeName.VARCHAR
    except Exception:  # (a type the catalog has not: never a varchar)
        return False


def _oid(c: Class | None) -> int | None:
    return REGTYPE if c == "regtype" else TEXT if c in ("text", "unknown", "null") else None


def _common(classes: list[Class | None]) -> Class | None:
    """PostgreSQL's common type of branches of these classes: text when one is text or all are
    unknown (NULLs aside), else not known here (None).

    >>> _common(["unknown", "null"]), _common(["text", None]), _common(["unknown", None]), _common(["null"])
    ('unknown', 'text', None, 'null')
    """
    known = [c for c in classes if c != "null"]
    if "text" in known:
        return "text"
    if not known:
        return "null" if classes else None
    return "unknown" if all(c == "unknown" for c in known) else None


class _Classes:
    """The classes of one query's expressions (see the module doc)."""

    def __init__(self, query: exp.Expression) -> None:
        self.operands = OperandTypes(query, None)
        self._columns: dict[int, Class | None] = {}  # (a derived column's, once: a chain of CTEs)
        self._typing: set[int] = set()  # (the derived columns being classed: a reference back is not known)

    def outputs(self, query: exp.Expression) -> tuple[list[Class | None], list[Class | None] | None]:
        """The classes of a query's outputs before its first ``*`` and after its last (None: no
        ``*``, the first are all)."""
        if isinstance(query, exp.Subquery):
            return self.outputs(query.this)
        if isinstance(query, exp.Union | exp.Intersect | exp.Except):
            left, right = self.outputs(query.this), self.outputs(query.expression)
            if left[1] is not None or right[1] is not None or len(left[0]) != len(right[0]):
                return [], []
            return [_common([a, b]) for a, b in zip(left[0], right[0], strict=True)], None
        if not isinstance(query, exp.Select):
            return [], []
        items = query.expressions
        stars = [i for i, e in enumerate(items) if _is_star(e)]
        if not stars:
            return [self.of(e) for e in items], None
        star = self._star(query) if len(items) == 1 else None
        if star is not None:
            return star, None
        return [self.of(e) for e in items[:stars[0]]], [self.of(e) for e in items[stars[-1] + 1:]]

    def _star(self, select: exp.Select) -> list[Class | None] | None:
        """The classes of ``SELECT *`` over one subquery, CTE or VALUES list, else None."""
        from_ = select.args.get("from_")
        if select.args.get("joins") or not isinstance(from_, exp.From) or not isinstance(select.expressions[0], exp.Star):
            return None
        columns = derived_columns(from_.this)
        if columns is None or any(v is None for v in columns.values()):
            return None
        return [_common([self.of(v) for v in values or []]) for values in columns.values()]

    def of(self, e: exp.Expression) -> Class | None:
        """The class of `e` where the text shows it, else None."""
        while isinstance(e, exp.Paren | exp.Alias):
            e = e.this
        if isinstance(e, exp.Literal):
            return "unknown" if e.is_string else None
        if isinstance(e, exp.Null):
            return "null"
        if isinstance(e, exp.Cast):
            return "text" if isinstance(e.to, exp.DataType) and e.to.this in _TEXT_CASTS else None
        if isinstance(e, exp.Anonymous):
            name = str(e.this).lower()
            return "regtype" if name == "pg_typeof" else "text" if name in _TEXT_CALLS else None
        if isinstance(e, _TEXT_FUNCTIONS):
            return "text"
        if isinstance(e, exp.Window):
            return "text" if isinstance(e.this, exp.Max | exp.Min | exp.GroupConcat) else None
        if isinstance(e, exp.Case):
            return _common([self.of(i.args["true"]) for i in e.args.get("ifs") or []]
                           + [self.of(e.args["default"]) if e.args.get("default") is not None else "null"])
        if isinstance(e, _BRANCHING):
            return _common([self.of(a) for a in [e.this, *e.expressions]])
        if isinstance(e, exp.Subquery):
            head, tail = self.outputs(e.this)
            return head[0] if len(head) == 1 and tail is None else None
        if isinstance(e, exp.Column):
            values = self.operands.derived_values(e)
            return self._column(values) if values else None
        return None

    def _column(self, values: list[exp.Expression]) -> Class | None:
        """The class of a derived column given by `values`, found once."""
        key = id(values)
        if key in self._columns:
            return self._columns[key]
        if key in self._typing:
            return None
        self._typing.add(key)
        try:
            found = _common([self.of(v) for v in values])
        finally:
            self._typing.discard(key)
        self._columns[key] = found
        return found


def _is_star(e: exp.Expression) -> bool:
    return isinstance(e, exp.Star) or (isinstance(e, exp.Column) and isinstance(e.this, exp.Star))
