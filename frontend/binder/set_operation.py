"""Set operations of materialized-view queries: ``UNION``, ``INTERSECT``, ``EXCEPT`` (each with
``ALL``), and RisingWave's ``CORRESPONDING [BY (...)]``.

UNION [ALL] is a plan node of its own (`frontend.planner.stream`). The others are rewritten into
queries the stream planner already maintains incrementally, with PostgreSQL's semantics (rows compare
as in DISTINCT: NULL equals NULL):

- ``a INTERSECT b`` / ``a EXCEPT b``: one grouping over both inputs tagged by side,
  ``SELECT cols FROM (SELECT cols, 1 l, 0 r FROM a UNION ALL SELECT cols, 0, 1 FROM b) GROUP BY cols
  HAVING sum(l) > 0 AND sum(r) > 0`` (``= 0`` for EXCEPT).
- ``a INTERSECT ALL b`` / ``a EXCEPT ALL b``: a row repeated m times in a and n times in b appears
  min(m, n) / max(m - n, 0) times. Each input numbers its copies of a row (ROW_NUMBER() OVER
  (PARTITION BY cols), a group TopN); a copy of a is kept when b has (INTERSECT) or has not (EXCEPT)
  the copy with the same number: a semi / anti join on ``cols IS NOT DISTINCT FROM`` and the number.
- ``CORRESPONDING``: each input keeps the columns both have, by name, in the left input's order;
  ``CORRESPONDING BY (x, y)``: the listed ones, in that order.

Columns are renamed by position (``_rw_c<i>``) inside the rewrite and get the left input's names back
at the end, so names that repeat or are not identifiers stay harmless.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlglot import exp

from frontend.binder.relation import ident
from risingspark.errors import FeatureNotSupported, InvalidColumnReference, SyntaxError_

if TYPE_CHECKING:
    from frontend.binder.query import QueryBinder

_NAMES = {exp.Union: "UNION", exp.Intersect: "INTERSECT", exp.Except: "EXCEPT"}


def rewrite_set_operation(binder: QueryBinder, node: exp.SetOperation) -> exp.Expression | None:
    """`node` as a query without INTERSECT, EXCEPT or CORRESPONDING, or None when it is a plain
    UNION [ALL]."""
    name = _NAMES.get(type(node))
    if name is None:
        raise FeatureNotSupported(f"{type(node).__name__.upper()} in a materialized view is not supported")
    for arg, feature in (("order", "ORDER BY"), ("limit", "LIMIT"), ("offset", "OFFSET")):
        if node.args.get(arg):
            raise FeatureNotSupported(f"{feature} on a {name} in a materialized view is not supported yet; put the "
                                      f"{name} in a subquery")
    left, right = node.this, node.expression
    if node.args.get("by_name"):
        if (node.args.get("kind") or "").upper() != "INNER" or node.args.get("side"):
            raise FeatureNotSupported(f"{name} BY NAME in a materialized view is not supported")
        left, right = _corresponding(binder, node, left, right)
    elif node.args.get("side") or node.args.get("kind"):
        raise FeatureNotSupported(f"{name} with {node.args.get('side') or node.args.get('kind')} is not supported")
    distinct = bool(node.args.get("distinct"))
    if isinstance(node, exp.Union):
        if left is node.this and right is node.expression:
            return None
        return exp.union(left, right, distinct=distinct)
    names = [f.name for f in binder.query(left).fields]
    n = len(names)
    if len(binder.query(right).fields) != n:
        raise SyntaxError_(f"each {name} query must have the same number of columns")
    cols = [f"_rw_c{i}" for i in range(n)]
    if distinct:
        return _by_grouping(left, right, cols, names, keep_right=isinstance(node, exp.Intersect))
    return _by_numbering(left, right, cols, names, semi=isinstance(node, exp.Intersect))


def _corresponding(binder: QueryBinder, node: exp.SetOperation, left: exp.Expression,
                   right: exp.Expression) -> tuple[exp.Expression, exp.Expression]:
    """Both inputs narrowed to their corresponding columns."""
    lnames = [f.name for f in binder.query(left).fields]
    rnames = [f.name for f in binder.query(right).fields]
    for names in (lnames, rnames):
        dup = next((n for n in names if names.count(n) > 1), None)
        if dup is not None:
            raise InvalidColumnReference(f'column name "{dup}" appears more than once in an input of CORRESPONDING')
    by = [ident(c) for c in node.args.get("on") or []]
    if by:
        for c in by:
            if c not in lnames or c not in rnames:
                raise InvalidColumnReference(f'column "{c}" of CORRESPONDING BY is not in both inputs')
        if len(set(by)) != len(by):
            raise InvalidColumnReference("a column appears twice in CORRESPONDING BY")
        common = by
    else:
        common = [c for c in lnames if c in rnames]
        if not common:
            raise InvalidColumnReference("the inputs of CORRESPONDING have no column name in common")
    return _project(left, lnames, common, "_rw_corresponding_l"), _project(right, rnames, common,
                                                                          "_rw_corresponding_r")


def _project(query: exp.Expression, names: list[str], keep: list[str], alias: str) -> exp.Select:
    cols = [f"_rw_c{i}" for i in range(len(names))]
    return exp.select(*[exp.alias_(exp.column(cols[names.index(k)]), k, quoted=True) for k in keep]) \
        .from_(_aliased(query, alias, cols))


def _aliased(query: exp.Expression, alias: str, cols: list[str]) -> exp.Subquery:
    return exp.Subquery(this=query.copy(), alias=exp.TableAlias(this=exp.to_identifier(alias),
                                                                columns=[exp.to_identifier(c) for c in cols]))


def _by_grouping(left: exp.Expression, right: exp.Expression, cols: list[str], names: list[str],
                 keep_right: bool) -> exp.Select:
    tagged = exp.union(
        exp.select(*cols, exp.alias_(exp.Literal.number(1), "_rw_l"), exp.alias_(exp.Literal.number(0), "_rw_r"))
        .from_(_aliased(left, "_rw_left", cols)),
        exp.select(*cols, exp.alias_(exp.Literal.number(0), "_rw_l"), exp.alias_(exp.Literal.number(1), "_rw_r"))
        .from_(_aliased(right, "_rw_right", cols)),
        distinct=False)
    right_count = exp.Sum(this=exp.column("_rw_r"))
    having = exp.and_(exp.GT(this=exp.Sum(this=exp.column("_rw_l")), expression=exp.Literal.number(0)),
                      exp.GT(this=right_count, expression=exp.Literal.number(0)) if keep_right
                      else exp.EQ(this=right_count, expression=exp.Literal.number(0)))
    return exp.select(*[exp.alias_(exp.column(c), n, quoted=True) for c, n in zip(cols, names, strict=True)]) \
        .from_(exp.Subquery(this=tagged, alias=exp.TableAlias(this=exp.to_identifier("_rw_tagged")))) \
        .group_by(*cols).having(having)


def _numbered(query: exp.Expression, alias: str, cols: list[str]) -> exp.Select:
    """The rows of `query` with ``_rw_copy``: the number of each copy of a row among its equals."""
    rn = exp.Window(this=exp.RowNumber(), partition_by=[exp.column(c) for c in cols],
                    order=exp.Order(expressions=[exp.Ordered(this=exp.column(c), nulls_first=True) for c in cols]))
    return exp.select(*cols, exp.alias_(rn, "_rw_copy")).from_(_aliased(query, alias, cols))


def _by_numbering(left: exp.Expression, right: exp.Expression, cols: list[str], names: list[str],
                  semi: bool) -> exp.Select:
    same: list[exp.Expression] = [exp.NullSafeEQ(this=exp.column(c, table="_rw_b"), expression=exp.column(c, table="_rw_a"))
                                  for c in cols]
    same.append(exp.EQ(this=exp.column("_rw_copy", table="_rw_b"), expression=exp.column("_rw_copy", table="_rw_a")))
    exists = exp.Exists(this=exp.select(exp.Literal.number(1)).from_(
        exp.Subquery(this=_numbered(right, "_rw_right", cols), alias=exp.TableAlias(this=exp.to_identifier("_rw_b"))))
        .where(exp.and_(*same)))
    return exp.select(*[exp.alias_(exp.column(c, table="_rw_a"), n, quoted=True) for c, n in zip(cols, names,
                                                                                                   strict=True)]) \
        .from_(exp.Subquery(this=_numbered(left, "_rw_left", cols), alias=exp.TableAlias(this=exp.to_identifier("_rw_a")))) \
        .where(exists if semi else exp.Not(this=exists))
