"""One view of every relation the catalogs describe: user tables and materialized views (OID = catalog
id) and the system tables themselves (fixed OIDs below 1000), with their visible columns.

>>> view_query("CREATE MATERIALIZED VIEW m WITH (x = 1) AS SELECT a FROM t WHERE b > 1")
'SELECT a FROM t WHERE b > 1'
>>> relkind("materialized_view"), relation_type("materialized_view"), table_type("table")
('m', 'materialized view', 'BASE TABLE')
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from frontend.catalog.oids import (
    PG_TYPES_BY_OID,
    ROOT_OID,
    SYSTEM_NAMESPACES,
    ColumnType,
)
from frontend.catalog.table import SystemContext, SystemTable
from risingspark.catalog import RelationCatalog, RelationKind

_RELKIND = {"table": "r", "materialized_view": "m", "view": "v", "index": "i", "source": "s", "sink": "k"}
_TABLE_TYPE = {"table": "BASE TABLE", "materialized_view": "MATERIALIZED VIEW", "view": "VIEW",
               "source": "SOURCE", "sink": "SINK", "index": "INDEX"}


def relkind(kind: str) -> str:
    """`pg_class.relkind` of a relation kind (``RelationKind`` value)."""
    return _RELKIND.get(kind, "r")


def relation_type(kind: str) -> str:
    """`rw_relations.relation_type` of a relation kind."""
    return kind.replace("_", " ")


def table_type(kind: str) -> str:
    """`information_schema.tables.table_type` of a relation kind."""
    return _TABLE_TYPE.get(kind, kind.replace("_", " ").upper())


_AS_QUERY = re.compile(r"\bAS\s+(?=\(*\s*(?:SELECT|WITH|VALUES)\b)", re.IGNORECASE)


def view_query(definition: str) -> str:
    """The query of a ``CREATE [MATERIALIZED] VIEW ... AS query`` statement."""
    m = _AS_QUERY.search(definition)
    return definition[m.end():].strip().rstrip(";").strip() if m else definition


_SYSTEM_COLUMN_TYPES = {"int2vector": 22, "oidvector": 30, "oid": 26, "int2": 21, "int4": 23, "int8": 20, "bool": 16, "text": 25, "name": 19,
                        "char": 18, "float4": 700, "float8": 701, "timestamptz": 1184}


def _system_column_type(spec: str) -> ColumnType:
    if spec.endswith("[]"):
        elem = _system_column_type(spec[:-2])
        arr = PG_TYPES_BY_OID[elem.oid].array_oid
        return ColumnType(arr, -1, -1, elem.collation, False)
    t = PG_TYPES_BY_OID[_SYSTEM_COLUMN_TYPES[spec]]
    return ColumnType(t.oid, -1, t.length, t.collation, t.byval)


@dataclass(frozen=True)
class CatalogColumn:
    name: str
    type: ColumnType
    display: str  # format_type text
    not_null: bool
    comment: str | None = None


@dataclass(frozen=True)
class CatalogRelation:
    """A relation as `pg_class` and `pg_attribute` show it."""

    oid: int
    name: str
    schema: str
    namespace: int
    kind: str  # RelationKind value, or "system table"
    columns: tuple[CatalogColumn, ...]
    owner: int = ROOT_OID
    definition: str = ""
    comment: str | None = None
    user: RelationCatalog | None = None

    @property
    def relkind(self) -> str:
        return "r" if self.kind == "system table" else relkind(self.kind)


def user_relation(ctx: SystemContext, rel: RelationCatalog) -> CatalogRelation:
    comments = rel.extra.get("column_comments") or {}
    pk = {rel.fields[i].name for i in rel.pk}
    not_null = set(rel.extra.get("not_null") or [])
    is_table = rel.kind is RelationKind.TABLE
    cols = tuple(CatalogColumn(f.name, ColumnType.of(f.type), f.type.display(),
                               is_table and (f.name in pk or f.name in not_null), comments.get(f.name))
                 for f in rel.fields if not f.hidden)
    return CatalogRelation(rel.id, rel.name, ctx.schema_name(rel), rel.schema_id, rel.kind.value, cols,
                           owner=rel.owner, definition=rel.definition, comment=rel.extra.get("comment"), user=rel)


def system_relation(table: SystemTable) -> CatalogRelation:
    cols = []
    for name, spec in table.column_specs():
        t = _system_column_type(spec)
        cols.append(CatalogColumn(name, t, PG_TYPES_BY_OID[t.oid].display, False))
    return CatalogRelation(table.oid, table.name, table.schema, SYSTEM_NAMESPACES[table.schema],
                           "system table", tuple(cols))


def all_relations(ctx: SystemContext) -> Iterator[CatalogRelation]:
    """User relations of the session's database, then every system table."""
    from frontend.catalog.system import SYSTEM_TABLES

    for rel in ctx.relations():
        yield user_relation(ctx, rel)
    for table in SYSTEM_TABLES.values():
        yield system_relation(table)


def user_relations(ctx: SystemContext, *kinds: RelationKind) -> Iterator[CatalogRelation]:
    for rel in ctx.relations():
        if not kinds or rel.kind in kinds:
            yield user_relation(ctx, rel)
