"""Rewrites of WHERE before binding, as RisingWave's (and PostgreSQL's) predicate normalization.

`factor_or`: a conjunct ``(a AND b) OR (a AND c)`` is ``a AND (b OR c)``. TPC-H's q19 writes its join
condition inside each branch of an OR; factored out, it becomes a join key instead of a condition over
a cross join.

>>> import sqlglot
>>> w = sqlglot.parse_one("(t.k = s.k AND t.x > 1) OR (s.k = t.k AND t.x < 0) OR (t.k = s.k AND s.y = 2)")
>>> [c.sql() for c in factor_or([w])]
['t.k = s.k', 't.x > 1 OR t.x < 0 OR s.y = 2']
"""

from __future__ import annotations

from typing import cast

from sqlglot import exp


def _disjuncts(node: exp.Expression) -> list[exp.Expression]:
    if isinstance(node, exp.Paren):
        return _disjuncts(node.this)
    if isinstance(node, exp.Or):
        return _disjuncts(node.this) + _disjuncts(node.expression)
    return [node]


def _conjuncts(node: exp.Expression) -> list[exp.Expression]:
    if isinstance(node, exp.Paren):
        return _conjuncts(node.this)
    if isinstance(node, exp.And):
        return _conjuncts(node.this) + _conjuncts(node.expression)
    return [node]


def _key(node: exp.Expression) -> str:
    """`node`'s text, the same for ``a = b`` and ``b = a``."""
    if isinstance(node, exp.EQ | exp.NullSafeEQ):
        return f"{type(node).__name__}:{min(node.left.sql(), node.right.sql())}:{max(node.left.sql(), node.right.sql())}"
    return node.sql()


def factor_or(conjuncts: list[exp.Expression]) -> list[exp.Expression]:
    """The conjuncts with the conjuncts common to every branch of an OR taken out of it."""
    out: list[exp.Expression] = []
    for c in conjuncts:
        branches = _disjuncts(c)
        if len(branches) < 2:
            out.append(c)
            continue
        parts = [_conjuncts(b) for b in branches]
        keys = [{_key(x) for x in p} for p in parts]
        common = [x for x in parts[0] if all(_key(x) in k for k in keys[1:])]
        if not common:
            out.append(c)
            continue
        shared = {_key(x) for x in common}
        out += [x.copy() for x in common]
        rests = [[x for x in p if _key(x) not in shared] for p in parts]
        if all(rests):  # (a branch with nothing left is TRUE: so is the OR)
            out.append(cast(exp.Expression, exp.or_(*[exp.and_(*[x.copy() for x in r]) if len(r) > 1 else r[0].copy()
                                                       for r in rests])))
    return out
