"""``SELECT *`` over USING and NATURAL joins in PostgreSQL's column order, for DuckDB.

PostgreSQL lists the output of ``l JOIN r USING (u1, u2)`` as the merged USING columns first (in the
USING list's order), then ``l``'s other columns, then ``r``'s; NATURAL means USING every column name
both sides have, in ``l``'s order. A merged column is ``l``'s for an inner or LEFT join, ``r``'s for a
RIGHT join and ``COALESCE(l, r)`` for a FULL join (PostgreSQL's ``buildMergedJoinVar``). DuckDB
lists ``l``'s columns with the USING column in its place, then ``r``'s others. The values are the
same, but a client reads the wrong column under a position, and an ``ORDER BY 1``, a UNION or a
derived table over the star see DuckDB's order.

So before DuckDB runs a query, every bare ``*`` of a SELECT whose FROM has a USING or NATURAL join
is expanded here into PostgreSQL's list, each column written as its FROM item's alias and name, the
merged ones as above. The algorithm folds each FROM item's join chain left to right, keeping the
chain's output as (name, expression) pairs: a USING or NATURAL join takes its columns out of both
sides (each must be there exactly once, as PostgreSQL requires) and puts them first; any other join
appends the right side. Comma-separated items are chains of their own (JOIN binds tighter than a
comma), listed in order. A FROM item's own columns come from `columns_of` (the engine binds
``SELECT * FROM item``). SELECTs are expanded innermost first, so a derived table's columns are
already PostgreSQL's when the SELECT over it asks for them.

Left as DuckDB lists them: a parenthesized join (no FROM item alias to qualify by), a FROM item
without an alias (but a table named by its name alone), one `columns_of` cannot bind alone (a LATERAL subquery), and a USING column that
is missing or ambiguous on a side (DuckDB then reports the error). Distributed mode gets the same
order from sqlglot's star expansion (`frontend.distributed`).
"""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from frontend.binder.relation import ident

ColumnsOf = Callable[[exp.Expression, exp.Select], list[str] | None]
"""A FROM item's column names, bound in the context of the SELECT it is in (its CTEs); None if the
item cannot be bound alone."""

_Columns = list[tuple[str, exp.Expression]]


class _Unexpandable(Exception):
    pass


def expand_join_stars(query: exp.Expression, columns_of: ColumnsOf) -> exp.Expression:
    """Expand, in place, the bare stars of every SELECT in `query` whose FROM has a USING or NATURAL
    join (see the module doc); returns `query`."""
    selects = [s for s in query.find_all(exp.Select) if _has_merging_join(s) and _has_bare_star(s)]
    for select in reversed(selects):  # (find_all is breadth first: inner SELECTs come later)
        try:
            columns = _output_columns(select, columns_of)
        except _Unexpandable:
            continue
        items: list[exp.Expr] = []
        for e in select.expressions:
            if isinstance(e, exp.Star):
                items.extend(exp.alias_(expr.copy(), exp.to_identifier(name, quoted=True)) for name, expr in columns)
            else:
                items.append(e)
        select.set("expressions", items)
    return query


def _has_merging_join(select: exp.Select) -> bool:
    return any(j.args.get("using") or _natural(j) for j in select.args.get("joins") or ())


def _has_bare_star(select: exp.Select) -> bool:
    return any(isinstance(e, exp.Star) for e in select.expressions)


def _natural(join: exp.Join) -> bool:
    return (join.args.get("method") or "").upper() == "NATURAL"


def _is_comma(join: exp.Join) -> bool:
    """``FROM a, b``: sqlglot's join with no kind, side, method or condition."""
    return not (join.side or join.kind or join.args.get("method") or join.args.get("on") or join.args.get("using"))


def _output_columns(select: exp.Select, columns_of: ColumnsOf) -> _Columns:
    from_ = select.args.get("from") or select.args.get("from_")
    if from_ is None:
        raise _Unexpandable
    chains: list[_Columns] = [_item_columns(from_.this, select, columns_of)]
    for join in select.args.get("joins") or ():
        right = _item_columns(join.this, select, columns_of)
        if _is_comma(join):
            chains.append(right)
        elif join.args.get("using") or _natural(join):
            chains[-1] = _merge(chains[-1], right, join)
        else:
            chains[-1] = chains[-1] + right
    return [c for chain in chains for c in chain]


def _item_columns(item: exp.Expression, select: exp.Select, columns_of: ColumnsOf) -> _Columns:
    alias = item.args.get("alias")
    name = alias.this if isinstance(alias, exp.TableAlias) else None
    if name is None and isinstance(item, exp.Table) and not item.args.get("db"):
        name = item.this  # a table named by its name alone
    if not isinstance(name, exp.Identifier) or isinstance(item, exp.Lateral):
        raise _Unexpandable
    names = columns_of(item, select)
    if names is None:
        raise _Unexpandable
    return [(n, exp.Column(this=exp.to_identifier(n, quoted=True), table=name.copy())) for n in names]


def _merge(left: _Columns, right: _Columns, join: exp.Join) -> _Columns:
    if _natural(join):
        right_names = {n for n, _ in right}
        using = [n for n, _ in left if n in right_names]
    else:
        using = [ident(u) for u in join.args["using"]]
    if len(set(using)) != len(using):
        raise _Unexpandable
    side = (join.side or "").upper()
    merged: _Columns = []
    for u in using:
        lefts = [e for n, e in left if n == u]
        rights = [e for n, e in right if n == u]
        if len(lefts) != 1 or len(rights) != 1:
            raise _Unexpandable  # PostgreSQL's error, reported by DuckDB as it may
        if side == "FULL":
            expr: exp.Expression = exp.Coalesce(this=lefts[0].copy(), expressions=[rights[0].copy()])
        else:
            expr = (rights if side == "RIGHT" else lefts)[0]
        merged.append((u, expr))
    taken = set(using)
    return merged + [(n, e) for n, e in left if n not in taken] + [(n, e) for n, e in right if n not in taken]
