"""The output columns of a subquery, a CTE or a VALUES list read in a FROM, for
`frontend.catalog.operand_types`, which types them from the expressions that give their values.

A FROM item that is a subquery (``(SELECT 10::float8 AS x) s``), a VALUES list (``(VALUES (1e200::
float8)) v(x)``) or the name of a CTE of an enclosing WITH has its columns in the text: each is named
by the item's (or the CTE's) column aliases by position, else by its projection's output name (the
rewrite has named every projection as PostgreSQL does, `frontend.catalog.rewrite.name_outputs`), and
its values are given by the projection, or by one expression per row of the VALUES list. PostgreSQL
types a VALUES column by the common type of its rows; `OperandTypes` only trusts rows that agree.

What the text does not settle gives no columns (None): a set operation (its columns' types are
resolved across its branches), a ``*`` among the projections, a ``FROM`` item of another form (a
function, a join in parentheses); a name two columns share gives None for that name.

>>> import sqlglot
>>> q = sqlglot.parse_one("WITH c(a) AS (SELECT 1 AS x, 2 AS y) SELECT * FROM c, (VALUES (1, 2), (3, 4)) v(p, q)")
>>> {k: [e.sql() for e in v or []] for k, v in (derived_columns(q.args["from_"].this) or {}).items()}
{'a': ['1'], 'y': ['2']}
>>> {k: [e.sql() for e in v or []] for k, v in (derived_columns(q.args["joins"][0].this) or {}).items()}
{'p': ['1', '3'], 'q': ['2', '4']}
"""

from __future__ import annotations

from sqlglot import exp

Columns = dict[str, list[exp.Expression] | None]


def derived_columns(item: exp.Expression) -> Columns | None:
    """The columns of FROM item `item` by name, each with the expressions that give its values, when
    it is a subquery, a VALUES list or a CTE's name whose columns the text shows; else None."""
    if isinstance(item, exp.Subquery | exp.Values):
        body = item.this if isinstance(item, exp.Subquery) else item
        return _columns(body, item.args.get("alias"))
    if isinstance(item, exp.Table) and isinstance(item.this, exp.Identifier) and not item.db:
        cte = _cte(item)
        if cte is None:
            return None
        columns = _columns(cte.this, cte.args.get("alias"))
        alias = item.args.get("alias")  # (``FROM c AS d(a, b)`` renames them again)
        if columns is not None and isinstance(alias, exp.TableAlias) and alias.columns:
            return _renamed(list(columns.items()), alias)
        return columns
    return None


def _cte(table: exp.Table) -> exp.CTE | None:
    """The CTE `table` names: of the nearest enclosing WITH that defines the name before the CTE the
    table is in, if any (a later one, or the CTE itself, is not visible there without RECURSIVE; with
    it, the columns are resolved across the CTE's UNION: None)."""
    node: exp.Expr | None = table
    inside: exp.CTE | None = None  # (the CTE of the WITH at hand whose body holds the table)
    while node is not None:
        with_ = node.args.get("with_") if isinstance(node, exp.Query) else None
        if isinstance(with_, exp.With):
            if inside is not None and inside.parent is with_ and with_.args.get("recursive"):
                return None
            for cte in with_.expressions:
                if cte is inside:
                    break
                if isinstance(cte, exp.CTE) and cte.alias_or_name == table.name:
                    return cte
        if isinstance(node, exp.CTE):
            inside = node
        node = node.parent
    return None


def _columns(body: exp.Expression, alias: exp.Expression | None) -> Columns | None:
    """The columns of a SELECT or VALUES body, renamed by `alias`'s columns."""
    if isinstance(body, exp.Values):
        rows = [r.expressions for r in body.expressions if isinstance(r, exp.Tuple)]
        if not rows or len(rows) != len(body.expressions) or len({len(r) for r in rows}) != 1:
            return None
        items: list[tuple[str, list[exp.Expression] | None]] = \
            [(f"column{i + 1}", [r[i] for r in rows]) for i in range(len(rows[0]))]
    elif isinstance(body, exp.Select) and not any(isinstance(e, exp.Star) or e.is_star for e in body.expressions):
        items = [(e.alias_or_name, [e.unalias()]) for e in body.expressions]
    else:
        return None
    return _renamed(items, alias)


def _renamed(items: list[tuple[str, list[exp.Expression] | None]], alias: exp.Expression | None) -> Columns:
    """`items` renamed by position by `alias`'s column list (the rest keep their names); a name two
    columns share is None."""
    names = [c.name for c in alias.columns] if isinstance(alias, exp.TableAlias) else []
    columns: Columns = {}
    for i, (name, values) in enumerate(items):
        name = names[i] if i < len(names) else name
        columns[name] = None if name in columns else values
    return columns
