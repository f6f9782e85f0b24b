"""The ``||`` operator as PostgreSQL resolves it, in batch queries.

PostgreSQL has ``||`` for texts (``text || anynonarray`` and ``anynonarray || text``: ``'a' || 1``
is ``a1``), for arrays (``anycompatiblearray || anycompatiblearray``, ``... || anycompatible`` and
``anycompatible || ...``) and for a few other types (jsonb, bytea, bit strings). DuckDB's ``||``
joins the text of any two values (``1 || 2`` was ``12``), concatenates two lists only, and is NULL
when either operand is. So, where the text shows the operands' types (`frontend.catalog.
operand_types`):

* two values of types with no ``||`` between them (numbers, booleans, dates, times and intervals)
  fail as in PostgreSQL, 42883 ``operator does not exist: integer || integer``; a quoted literal or
  NULL on either side is PostgreSQL's ``unknown``, taken as text, and is left to DuckDB;
* an array and a value that is no array are ``list_append`` (``ARRAY[1] || 2`` is ``{1,2}``; the
  value NULL is appended, a NULL array is an empty one), a value and an array ``list_prepend``;
* two arrays are ``list_concat``, which skips a NULL operand (``ARRAY[1] || NULL::int[]`` is
  ``{1}``), NULL when both are; an array and a bare NULL, which PostgreSQL takes for an array, are
  the array.

An array is an ``ARRAY[...]``, a cast to an array type, an array column of a catalog relation, an
``array_agg`` or one of these concatenations. Operands whose types are not plain are left to DuckDB.

>>> import sqlglot
>>> q = sqlglot.parse_one("SELECT ARRAY[1] || 2, 0 || ARRAY[1], ARRAY[1, 2] || NULL, 'a' || 1", read="risingwave")
>>> concat_operator(q).sql("duckdb")
"SELECT LIST_APPEND([1], 2), LIST_PREPEND(0, [1]), [1, 2], 'a' || 1"
>>> concat_operator(sqlglot.parse_one("SELECT 1 || 2", read="risingwave"))
Traceback (most recent call last):
  ...
risingspark.errors.UndefinedFunction: operator does not exist: integer || integer
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlglot import exp

from frontend.catalog.jsonb_edit import is_jsonb
from frontend.catalog.operand_types import OperandTypes, no_operator
from risingspark.types import TypeName

if TYPE_CHECKING:
    from frontend.catalog.rewrite import RewriteContext

# types between which PostgreSQL has no ``||`` (jsonb, bytea, structs... have one, or are not checked)
_NO_CONCAT = {TypeName.SMALLINT, TypeName.INT, TypeName.BIGINT, TypeName.NUMERIC, TypeName.REAL, TypeName.DOUBLE,
              TypeName.BOOLEAN, TypeName.DATE, TypeName.TIMESTAMP, TypeName.TIMESTAMPTZ, TypeName.INTERVAL}
_ARRAY_OPS = (exp.ArrayAppend, exp.ArrayPrepend, exp.ArrayConcat)


def concat_operator(query: exp.Expression, ctx: RewriteContext | None = None) -> exp.Expression:
    types = OperandTypes.of(query, ctx)
    for node in reversed(list(query.find_all(exp.DPipe))):  # innermost first: ``ARRAY[1] || 2 || 3``
        out = _concat(node.this, node.expression, types)
        if out is not None:
            node.replace(out)
    return query


def _concat(a: exp.Expression, b: exp.Expression, types: OperandTypes) -> exp.Expression | None:
    arrays = (_is_array(a, types), _is_array(b, types))
    if arrays == (True, True):
        return _array_cat(a, b)
    if True in arrays:
        array, other = (a, b) if arrays[0] else (b, a)
        if _is_null(other):
            return array.copy()
        if _is_scalar(other, types):
            if array is a:
                return exp.ArrayAppend(this=a.copy(), expression=b.copy())
            return exp.ArrayPrepend(this=b.copy(), expression=a.copy())
        return None
    ta, tb = types.type_of(a), types.type_of(b)
    if ta is not None and tb is not None and ta.name in _NO_CONCAT and tb.name in _NO_CONCAT:
        raise no_operator(ta.display(), "||", tb.display())
    return None


def _array_cat(a: exp.Expression, b: exp.Expression) -> exp.Expression:
    """PostgreSQL's ``array_cat``: ``list_concat``, NULL when both are (DuckDB's is ``[]``)."""
    cat = exp.ArrayConcat(this=a.copy(), expressions=[b.copy()])
    if isinstance(a, exp.Array) or isinstance(b, exp.Array):  # (a constructor is never NULL)
        return cat
    both_null = exp.and_(exp.Is(this=a.copy(), expression=exp.null()), exp.Is(this=b.copy(), expression=exp.null()))
    return exp.Case(ifs=[exp.If(this=both_null, true=exp.null())], default=cat)


def _is_array(e: exp.Expression, types: OperandTypes) -> bool:
    while isinstance(e, exp.Paren):
        e = e.this
    if isinstance(e, (exp.Array, exp.ArrayAgg, *_ARRAY_OPS)):
        return True
    if isinstance(e, exp.Case):  # (an `_array_cat`)
        return isinstance(e.args.get("default"), exp.ArrayConcat)
    t = types.type_of(e) if isinstance(e, exp.Cast | exp.Column) else None
    return t is not None and t.element is not None


def _is_scalar(e: exp.Expression, types: OperandTypes) -> bool:
    """Whether `e` is plainly no array: a value of a type the text shows, or a NULL of one, or a jsonb."""
    t = types.type_of(e)
    return (t is not None and t.element is None) or is_jsonb(e, types)


def _is_null(e: exp.Expression) -> bool:
    while isinstance(e, exp.Paren):
        e = e.this
    return isinstance(e, exp.Null)
