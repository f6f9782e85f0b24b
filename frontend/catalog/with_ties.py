"""``FETCH FIRST n ROWS WITH TIES`` as PostgreSQL reads it, for DuckDB.

PostgreSQL returns the first ``n`` rows after the OFFSET and then every further row that ties with
the last of them on the ORDER BY keys. DuckDB has no WITH TIES: sqlglot wrote the clause as a plain
``LIMIT n``, so the tied rows were silently left out. The rule here keeps the rows whose
``row_number()`` over the ORDER BY is past the offset and whose ``rank()`` is within offset + n (a row
tied with the n-th has its rank; a row after it and not tied with it has a rank past offset + n), as
a ``QUALIFY`` of the same SELECT, and drops the LIMIT and OFFSET. ORDER BY items that are output
positions or output names are replaced by the output's expression in the window. A WITH TIES over
``SELECT DISTINCT`` or a set operation is 0A000 (the windows would see the rows before DISTINCT or
before the operation); one without ORDER BY is PostgreSQL's 42601.

>>> import sqlglot
>>> q = sqlglot.parse_one("SELECT id, g AS k FROM t ORDER BY k DESC OFFSET 2 FETCH FIRST 3 ROWS WITH TIES",
...                       read="risingwave")
>>> with_ties(q).sql("duckdb")  # doctest: +NORMALIZE_WHITESPACE
'SELECT id, g AS k FROM t QUALIFY RANK() OVER (ORDER BY g DESC NULLS FIRST) <= (2) + (3) AND ROW_NUMBER() OVER (ORDER BY g DESC NULLS FIRST) > (2) ORDER BY k DESC NULLS FIRST'
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlglot import exp

from risingspark.errors import FeatureNotSupported, SyntaxError_

if TYPE_CHECKING:
    from frontend.catalog.rewrite import RewriteContext


def with_ties(query: exp.Expression, ctx: RewriteContext | None = None) -> exp.Expression:
    for node in list(query.find_all(exp.Query)):
        fetch = node.args.get("limit")
        if not isinstance(fetch, exp.Fetch) or not _ties(fetch):
            continue
        order = node.args.get("order")
        if order is None or not order.expressions:
            raise SyntaxError_("WITH TIES cannot be specified without ORDER BY clause")
        if not isinstance(node, exp.Select) or node.args.get("distinct") is not None:
            raise FeatureNotSupported("FETCH FIRST ... WITH TIES over SELECT DISTINCT or a set operation is not "
                                      "supported")
        _qualify(node, fetch, order)
    return query


def _ties(fetch: exp.Fetch) -> bool:
    options = fetch.args.get("limit_options")
    return bool(options is not None and options.args.get("with_ties"))


def _qualify(select: exp.Select, fetch: exp.Fetch, order: exp.Order) -> None:
    count = fetch.args.get("count")
    count = count.copy() if count is not None else exp.Literal.number(1)
    offset = select.args.get("offset")
    skip = offset.expression.copy() if isinstance(offset, exp.Offset) else None
    keys = exp.Order(expressions=[_key(select, o) for o in order.expressions])

    def over(fn: str) -> exp.Window:
        return exp.Window(this=exp.Anonymous(this=fn, expressions=[]), order=keys.copy())

    cond: exp.Condition = exp.LTE(this=over("rank"), expression=exp.Add(
        this=exp.Paren(this=skip.copy() if skip is not None else exp.Literal.number(0)),
        expression=exp.Paren(this=count)))
    if skip is not None:
        cond = exp.and_(cond, exp.GT(this=over("row_number"), expression=exp.Paren(this=skip)))
    if select.args.get("qualify") is not None:
        cond = exp.and_(select.args["qualify"].this, cond)
    select.set("qualify", exp.Qualify(this=cond))
    select.set("limit", None)
    select.set("offset", None)


def _key(select: exp.Select, ordered: exp.Ordered) -> exp.Ordered:
    """`ordered` with an output position or output name replaced by the output's expression."""
    out = ordered.copy()
    key = ordered.this
    outputs = select.expressions
    if isinstance(key, exp.Literal) and key.is_int and 1 <= int(key.name) <= len(outputs):
        out.set("this", _unaliased(outputs[int(key.name) - 1]))
    elif isinstance(key, exp.Column) and not key.table:
        named = [e for e in outputs if isinstance(e, exp.Alias) and e.alias == key.name]
        if len(named) == 1:
            out.set("this", _unaliased(named[0]))
    return out


def _unaliased(e: exp.Expression) -> exp.Expression:
    return (e.this if isinstance(e, exp.Alias) else e).copy()
