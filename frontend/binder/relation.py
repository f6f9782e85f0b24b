"""Query blocks of a materialized view: FROM (relations, subqueries, CTEs, time windows, joins),
WHERE (with IN / EXISTS subqueries as semi / anti joins), the select list, GROUP BY, HAVING,
ORDER BY ... LIMIT, set operations."""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from meta.catalog import CatalogSnapshot
from risingspark.catalog import DEFAULT_SCHEMA, RelationCatalog
from risingspark.errors import (
    FeatureNotSupported,
    InvalidSchemaName,
    UndefinedTable,
)
from risingspark.functions import FunctionCatalog
from risingspark.types import (
    Field,
)

SYSTEM_SCHEMAS = ("rw_catalog", "pg_catalog", "information_schema")


def ident(node: exp.Expression | str | None) -> str:
    """An identifier as Postgres sees it: unquoted names fold to lower case."""
    if node is None:
        return ""
    if isinstance(node, str):
        return node.lower()
    if isinstance(node, exp.Identifier):
        return node.name if node.quoted else node.name.lower()
    return node.name.lower()


@dataclass(frozen=True)
class RelationRef:
    """A resolved FROM item: a user relation (`relation`) or a system table (`schema`.`name`)."""

    schema: str
    name: str
    relation: RelationCatalog | None


class CatalogReader:
    """Resolves relation names for one session (database and search path)."""

    def __init__(self, snapshot: CatalogSnapshot, database: str, search_path: list[str]) -> None:
        self.snapshot = snapshot
        db = snapshot.database(database)
        if db is None:
            raise UndefinedTable(f'database "{database}" does not exist')
        self.database = db
        self.search_path = [s for s in search_path if s and s != "$user"] or [DEFAULT_SCHEMA]

    def schema_id(self, name: str) -> int:
        s = self.snapshot.schema(self.database.id, name)
        if s is None:
            raise InvalidSchemaName(f'schema "{name}" does not exist')
        return s.id

    def current_schema_id(self) -> int:
        for name in self.search_path:
            s = self.snapshot.schema(self.database.id, name)
            if s is not None:
                return s.id
        return self.schema_id(DEFAULT_SCHEMA)

    def lookup(self, name: str, schema: str | None = None) -> RelationRef | None:
        if schema in SYSTEM_SCHEMAS:
            return RelationRef(schema, name, None)
        schemas = [schema] if schema else self.search_path
        for s in schemas:
            sc = self.snapshot.schema(self.database.id, s)
            if sc is None:
                if schema:
                    raise InvalidSchemaName(f'schema "{schema}" does not exist')
                continue
            rel = self.snapshot.relation(sc.id, name)
            if rel is not None:
                return RelationRef(s, name, rel)
        if schema is None:
            from frontend.catalog.system import find_system_table

            sys_schema = find_system_table(name)
            if sys_schema is not None:
                return RelationRef(sys_schema, name, None)
        return None

    def function(self, name: str, schema: str | None = None) -> FunctionCatalog | None:
        """A user-defined function by name, in `schema` or along the search path. A schema the
        catalog does not hold (``pg_catalog``, whose functions are built-ins) holds none."""
        for s in [schema] if schema else self.search_path:
            sc = self.snapshot.schema(self.database.id, s)
            if sc is None:
                continue
            fn = self.snapshot.function(sc.id, name)
            if fn is not None:
                return fn
        return None

    def resolve(self, table: exp.Table) -> RelationRef:
        name, schema = ident(table.this), ident(table.args.get("db")) or None
        catalog = ident(table.args.get("catalog")) or None
        if catalog and catalog != self.database.name:
            raise FeatureNotSupported(f"cross-database references are not implemented: {table.sql()}")
        ref = self.lookup(name, schema)
        if ref is None:
            raise UndefinedTable(f'relation "{name if not schema else schema + "." + name}" does not exist')
        return ref

    def resolve_user(self, table: exp.Table) -> RelationCatalog:
        ref = self.resolve(table)
        if ref.relation is None:
            raise FeatureNotSupported(f'cannot modify or stream from system table "{ref.schema}.{ref.name}"')
        return ref.relation



def visible_fields(rel: RelationCatalog) -> list[Field]:
    return [f for f in rel.fields if not f.hidden]
