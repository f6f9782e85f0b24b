"""``pg_typeof(x)`` with PostgreSQL's type names, in batch queries.

PostgreSQL's ``pg_typeof`` is the argument's type as a ``regtype``, shown as its ``format_type``
name: ``integer``, ``double precision``, ``real``, ``character varying``, ``text``, ``timestamp
without time zone``, ``unknown`` for a quoted literal or a bare NULL. DuckDB's is its own type's
name: ``float``, ``double``, ``varchar``, ``decimal(2,1)``, ``hugeint``, ``"null"``. The call is
replaced by

* where the text shows the type (`frontend.catalog.operand_types`): the name itself, a string
  literal. A number literal is an ``integer``, a ``bigint`` or a ``numeric`` by its value and form
  (``-2147483648`` is an integer, as PostgreSQL folds the sign into the constant); a quoted literal
  or NULL ``unknown``; a cast its target's name as ``::regtype`` reads it (``::text`` is ``text``,
  ``::varchar(3)`` ``character varying``, ``::numeric(5,2)`` ``numeric``); a column of a catalog
  relation its column type's (an array's element's, with ``[]``); ``pg_typeof(...)`` ``regtype``.
  Not an argument holding an aggregate: the query would no longer aggregate (``SELECT
  pg_typeof(max(x)) FROM t`` is a row even when ``t`` is empty).
* else, the name of the type DuckDB computes, once the other rewrites made it PostgreSQL's
  (``typeof``, which DuckDB folds when it binds the query, mapped by `_DUCKDB_NAMES`)::

      CASE regexp_replace(typeof(x), '(\\[\\])+$', '') WHEN 'DOUBLE' THEN 'double precision' ...
          ELSE CASE WHEN starts_with(..., 'DECIMAL') THEN 'numeric' ... END END
      || CASE WHEN ends_with(typeof(x), '[]') THEN '[]' ELSE '' END

  A DuckDB ``VARCHAR`` there is ``text``: what a string function, ``||`` or a VALUES list of quoted
  literals makes (a subquery's column read from a ``varchar`` column is ``character varying`` in
  PostgreSQL, ``text`` here). A ``HUGEINT`` is a ``numeric``, as the client is told its value is. A
  column of a system catalog is named by its DuckDB type (``pg_class.relname``, a ``name`` in
  PostgreSQL, is ``text``; an ``oid`` ``bigint``).

The result is the name, a string: a client is told it is a ``regtype`` (OID 2206), as PostgreSQL
says, whose text is that name and whose binary format its OID (`frontend.output_oids`,
`frontend.pgwire.codec.binary_value`). Comparing it with ``'integer'::regtype`` compares the name
with an OID, as before.

>>> import sqlglot
>>> q = sqlglot.parse_one("SELECT pg_typeof(1), pg_typeof('a'), pg_typeof(1.5::real), pg_typeof(x::text)", read="risingwave")
>>> pg_typeof(q).sql("duckdb")
"SELECT 'integer', 'unknown', 'real', 'text'"
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlglot import exp

from frontend.catalog.oids import format_type, type_oid
from frontend.catalog.operand_types import OperandTypes, is_number, unknown_literal
from risingspark.types import DataType, TypeName

if TYPE_CHECKING:
    from frontend.catalog.rewrite import RewriteContext

_DUCKDB_NAMES = {
    "BOOLEAN": "boolean", "TINYINT": "smallint", "UTINYINT": "smallint", "SMALLINT": "smallint",
    "USMALLINT": "integer", "INTEGER": "integer", "UINTEGER": "bigint", "BIGINT": "bigint", "UBIGINT": "bigint",
    "HUGEINT": "numeric", "FLOAT": "real", "DOUBLE": "double precision", "VARCHAR": "text", "DATE": "date",
    "TIME": "time without time zone", "TIME WITH TIME ZONE": "time with time zone",
    "TIMESTAMP": "timestamp without time zone", "TIMESTAMP_S": "timestamp without time zone",
    "TIMESTAMP_MS": "timestamp without time zone", "TIMESTAMP_NS": "timestamp without time zone",
    "TIMESTAMP WITH TIME ZONE": "timestamp with time zone", "INTERVAL": "interval", "BLOB": "bytea",
    "UUID": "uuid", "JSON": "jsonb", '"NULL"': "unknown"}
_DUCKDB_PREFIXES = {"DECIMAL": "numeric", "STRUCT": "record"}


def pg_typeof(query: exp.Expression, ctx: RewriteContext | None = None) -> exp.Expression:
    types: OperandTypes | None = None
    for node in list(query.find_all(exp.Anonymous)):  # (an outer call first: of an inner one it is ``regtype``)
        if str(node.this).lower() != "pg_typeof" or len(node.expressions) != 1:
            continue
        types = types or OperandTypes.of(query, ctx)
        arg = node.expressions[0]
        name = type_name(arg, types) if arg.find(exp.AggFunc) is None else None
        node.replace(exp.Literal.string(name) if name is not None else _duckdb_name(arg))
    return query


def type_name(e: exp.Expression, types: OperandTypes) -> str | None:
    """PostgreSQL's name of the type of `e` where the text shows it (see the module doc), else None."""
    while isinstance(e, exp.Paren):
        e = e.this
    if unknown_literal(e) is not None:
        return "unknown"
    if is_number(e):
        return _number_name(e)
    if isinstance(e, exp.Boolean):
        return "boolean"
    if isinstance(e, exp.Anonymous) and str(e.this).lower() == "pg_typeof":
        return "regtype"
    if isinstance(e, exp.Cast) and isinstance(e.to, exp.DataType):
        to = e.to
        if to.this == exp.DataType.Type.USERDEFINED or (to.this == exp.DataType.Type.DOUBLE and to.expressions):
            return None  # ("char", float(p): a real up to 24 bits)
        return format_type(type_oid(to.sql(dialect="postgres")), -1)
    if isinstance(e, exp.Column) and types.column_relation(e) is not None:
        t = types.column_type(e)
        return _catalog_name(t) if t is not None else None
    return None


def _number_name(e: exp.Expression) -> str:
    """A number literal's type: PostgreSQL folds a minus into the constant (``-2147483648`` is an
    integer)."""
    negative = False
    while isinstance(e, exp.Paren | exp.Neg):
        negative ^= isinstance(e, exp.Neg)
        e = e.this
    text = e.name
    if any(c in text for c in ".eE"):
        return "numeric"
    value = -int(text) if negative else int(text)
    return "integer" if -2**31 <= value < 2**31 else "bigint" if -2**63 <= value < 2**63 else "numeric"


def _catalog_name(t: DataType) -> str | None:
    if t.name is TypeName.ARRAY and t.element is not None:
        element = _catalog_name(t.element)
        return f"{element}[]" if element is not None else None
    return None if t.name in (TypeName.STRUCT, TypeName.ARRAY) else t.name.value


def _call(name: str, *args: exp.Expression) -> exp.Expression:
    return exp.Anonymous(this=name, expressions=list(args))


def _duckdb_name(arg: exp.Expression) -> exp.Expression:
    """PostgreSQL's name of the type DuckDB gives `arg`, asked at run time (see the module doc)."""
    def typeof() -> exp.Expression:
        return _call("typeof", arg.copy())

    def base() -> exp.Expression:
        return _call("regexp_replace", typeof(), exp.Literal.string(r"(\[\])+$"), exp.Literal.string(""))

    other = exp.Case(ifs=[exp.If(this=_call("starts_with", base(), exp.Literal.string(prefix)),
                                 true=exp.Literal.string(name)) for prefix, name in _DUCKDB_PREFIXES.items()],
                     default=exp.Lower(this=base()))
    named = exp.Case(this=base(), ifs=[exp.If(this=exp.Literal.string(d), true=exp.Literal.string(p))
                                       for d, p in _DUCKDB_NAMES.items()], default=other)
    array = exp.Case(ifs=[exp.If(this=_call("ends_with", typeof(), exp.Literal.string("[]")),
                                 true=exp.Literal.string("[]"))], default=exp.Literal.string(""))
    return exp.Paren(this=exp.DPipe(this=named, expression=array))
