"""A real with an integer or numeric operand as PostgreSQL computes it, in batch queries.

PostgreSQL has no operator for a real and an integer or a numeric: it picks the one for a real and a
double (``float48mul``, ``float48eq``...), so ``r * 2`` is a double, computed from the real widened,
and ``r = 3.14159`` (r a real read from ``'3.14159'``) compares the real's exact value with the
double nearest 3.14159: false. DuckDB computes both as reals: the product a real, the literal
rounded to a real first (true).

* Arithmetic (``+ - * /``) of an operand whose type is a real and one that is an integer or a
  numeric, both plain in the text (`frontend.catalog.operand_types`): the real is cast to a double.
* A comparison (``= <> < <= > >=``, ``IS [NOT] DISTINCT FROM``, ``BETWEEN``) of such operands: the
  same, unless the other is a number literal whose nearest double is a real too (``r > 2.5``): the
  answer is the same then, and the comparison keeps its shape.
* A comparison of an operand whose type is not plain with a number literal that has a fraction and
  is no real (``x = 3.14159``): DuckDB is asked at run time (it folds the ``typeof`` when it binds)::

      CASE WHEN typeof(x) = 'FLOAT' THEN x = CAST(3.14159 AS DOUBLE) ELSE x = 3.14159 END

  An integer literal is left there: it differs only past 2^24, and ``k = 123456789`` keeps the shape
  index lookups read (`frontend.index_lookup`).

Arithmetic with an operand whose type is not plain (a real column of VALUES or a subquery) is left:
its type would depend on the operand's, which a ``CASE`` cannot give.

>>> import sqlglot
>>> q = sqlglot.parse_one("SELECT x::real * 2, y = 0.1, y < 2.5, y = 3", read="risingwave")
>>> real_operands(q).sql("duckdb")
"SELECT CAST(CAST(x AS REAL) AS DOUBLE) * 2, CASE WHEN TYPEOF(y) = 'FLOAT' THEN y = CAST(0.1 AS DOUBLE) ELSE y = 0.1 END, y < 2.5, y = 3"
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING

from sqlglot import exp

from frontend.catalog.operand_types import ARITHMETIC, OperandTypes, is_number

if TYPE_CHECKING:
    from frontend.catalog.rewrite import RewriteContext

COMPARISONS = (exp.EQ, exp.NEQ, exp.LT, exp.LTE, exp.GT, exp.GTE, exp.NullSafeEQ, exp.NullSafeNEQ)


def real_operands(query: exp.Expression, ctx: RewriteContext | None = None) -> exp.Expression:
    types = OperandTypes.of(query, ctx)
    for node in reversed(list(query.find_all(*ARITHMETIC, *COMPARISONS, exp.Between))):
        if isinstance(node, exp.Between):
            out = _between(node, types)
            if out is not None:
                node.replace(out)
            continue
        a, b = node.this, node.expression
        kinds = (types.kind(a), types.kind(b))
        if kinds in (("real", "exact"), ("exact", "real")):
            exact = b if kinds[0] == "real" else a
            if isinstance(node, ARITHMETIC) or not _fits_real(exact):
                side = "this" if kinds[0] == "real" else "expression"
                node.set(side, _double(node.args[side]))
        elif isinstance(node, COMPARISONS) and None in kinds:
            literal = b if kinds[0] is None else a
            if _fractional_not_real(literal):
                x = a if literal is b else b
                node.replace(_if_real(x, node, {id(literal)}))
    return query


def _between(node: exp.Between, types: OperandTypes) -> exp.Expression | None:
    x, bounds = node.this, [node.args["low"], node.args["high"]]
    kind = types.kind(x)
    if kind == "real":
        if any(types.kind(b) == "exact" and not _fits_real(b) for b in bounds):
            node.set("this", _double(x))
        return None
    if kind is None and any(_fractional_not_real(b) for b in bounds):
        return _if_real(x, node, {id(b) for b in bounds if _fractional_not_real(b)})
    return None


def _if_real(x: exp.Expression, node: exp.Expression, literals: set[int]) -> exp.Expression:
    """``CASE WHEN typeof(x) = 'FLOAT' THEN <node, the literals cast to double> ELSE node END``."""
    widened = node.copy()
    for old, new in list(zip(node.walk(), widened.walk(), strict=True)):
        if id(old) in literals and isinstance(new, exp.Expression):
            new.replace(_double(new))
    is_real = exp.EQ(this=exp.Anonymous(this="typeof", expressions=[x.copy()]), expression=exp.Literal.string("FLOAT"))
    return exp.Case(ifs=[exp.If(this=is_real, true=widened)], default=node.copy())


def _double(e: exp.Expression) -> exp.Expression:
    return exp.cast(e.copy(), exp.DataType.Type.DOUBLE)


def _fits_real(e: exp.Expression) -> bool:
    """Whether `e` is a number literal whose nearest double is a real too (``2.5``, ``-3``)."""
    if not is_number(e):
        return False
    value = float(e.find(exp.Literal).this)  # type: ignore[union-attr]
    try:
        return struct.unpack("f", struct.pack("f", value))[0] == value
    except OverflowError:
        return False


def _fractional_not_real(e: exp.Expression) -> bool:
    literal = e.find(exp.Literal) if is_number(e) else None
    return literal is not None and not literal.is_int and not _fits_real(e)
