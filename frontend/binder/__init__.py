"""The binder: resolves names against a catalog snapshot and types expressions as PostgreSQL does.

It binds the queries of materialized views (which the stream planner turns into a stream plan) and
resolves relation names for every other statement. What a streaming query cannot do yet fails here,
at CREATE, with SQLSTATE 0A000 naming the feature — never later with a wrong answer.

Split by concern, as RisingWave's binder: `relation` (names and the catalog reader), `bound` (the
bound tree and scopes), `query` (query blocks, FROM, WHERE subqueries, set operations),
`expression`, `function` and `aggregate` (scalar expressions and calls), `coercion` (literals and
PostgreSQL's type resolution).
"""

from frontend.binder.bound import (
    BoundFrom,
    BoundJoin,
    BoundQuery,
    BoundScan,
    BoundSetOp,
    BoundStreamSelect,
    BoundSubquery,
    FromItem,
    OrderItem,
    RowNumber,
    Scope,
    SelectItem,
    query_froms,
    reads_changelog,
    scans_of,
)
from frontend.binder.coercion import coerce, common_type, literal, numeric_result
from frontend.binder.expression import bind_expr
from frontend.binder.query import QueryBinder, bind_stream_select
from frontend.binder.relation import SYSTEM_SCHEMAS, CatalogReader, RelationRef, ident, visible_fields

__all__ = [
    "SYSTEM_SCHEMAS", "BoundFrom", "BoundJoin", "BoundQuery", "BoundScan", "BoundSetOp", "BoundStreamSelect",
    "BoundSubquery", "CatalogReader", "FromItem", "OrderItem", "QueryBinder", "RelationRef", "RowNumber", "Scope",
    "SelectItem", "bind_expr", "bind_stream_select", "coerce", "common_type", "ident", "literal", "numeric_result",
    "query_froms", "reads_changelog", "scans_of", "visible_fields",
]
