"""The type of ``sum`` as PostgreSQL's, in batch queries.

PostgreSQL's ``sum`` of a ``smallint`` or an ``integer`` is a ``bigint`` (``int2_sum``,
``int4_sum``), of a ``real`` a ``real`` (``float4pl``), of a ``bigint`` a ``numeric`` and of a
double a double. DuckDB's sum of any integer is a HUGEINT (a client is told a numeric: ``sum(1)``
was ``1`` of type numeric) and of a real a DOUBLE. Where the text shows the argument's type
(`frontend.catalog.operand_types`; arithmetic of integers is of its wider operand's type, as
PostgreSQL's ``int2pl``, ``int24mul``...: ``sum(x * 2)`` of a smallint ``x`` is a bigint too), the
aggregate, with its FILTER and OVER, is cast to PostgreSQL's type::

    sum(i) FILTER (WHERE ...) OVER (...)  ->  CAST(sum(i) FILTER (WHERE ...) OVER (...) AS BIGINT)
    sum(r)                                ->  CAST(sum(r) AS REAL)

A bigint's sum (a HUGEINT) is told a numeric already, and ``avg`` of a real is a double in both. A
sum with an ORDER BY of its own is left, as in `frontend.catalog.float_aggregates` (whose check of a
real sum's overflow goes inside the cast: a sum past a real's range is 22003 there, before the cast).

A real's sum is added in doubles and rounded once to a real, where PostgreSQL rounds each running
sum to a real: many rows of very different sizes can end one unit in the last place apart
(``16777216 + 1 + 1`` is 16777216 in reals, 16777218 here). The binder types a query over catalog
relations (`frontend.batch_types`); this covers the ones it does not bind (VALUES, no FROM, a
function in FROM).

>>> import sqlglot
>>> q = sqlglot.parse_one("SELECT sum(x::real), sum(x::int * 2), sum(x::bigint), sum(x::int) OVER () FROM t",
...                       read="risingwave")
>>> sum_types(q).sql("duckdb")
'SELECT CAST(SUM(CAST(x AS REAL)) AS REAL), CAST(SUM(CAST(x AS INT) * 2) AS BIGINT), SUM(CAST(x AS BIGINT)), CAST(SUM(CAST(x AS INT)) OVER () AS BIGINT) FROM t'
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlglot import exp

from frontend.catalog.float_aggregates import aggregate_call, aggregate_values
from frontend.catalog.operand_types import OperandTypes
from risingspark.types import TypeName

if TYPE_CHECKING:
    from frontend.catalog.rewrite import RewriteContext


def sum_types(query: exp.Expression, ctx: RewriteContext | None = None) -> exp.Expression:
    types: OperandTypes | None = None
    for node in reversed(list(query.find_all(exp.Sum))):  # (an inner aggregate first: `sum(sum(x)) OVER ()`)
        values = aggregate_values(node)
        if values is None:
            continue
        types = types or OperandTypes.of(query, ctx)
        if types.kind(values) == "real":
            target = "REAL"
        elif types.integer_type(values) in (TypeName.SMALLINT, TypeName.INT):
            target = "BIGINT"
        else:
            continue
        call = aggregate_call(node)
        call.replace(exp.cast(call.copy(), target))
    return query

