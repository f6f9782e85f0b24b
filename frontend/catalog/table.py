"""The building blocks of system tables: `SystemTable` declarations, the `SystemContext` their rows
are computed from, and a per-snapshot cache of built tables.

>>> SystemTable("pg_catalog", "pg_x", 1, "oid oid, names text[]").arrow_schema()
oid: int64
names: list<item: string>
  child 0, item: string
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from risingspark.catalog import DEFAULT_SCHEMA, RelationCatalog
from risingspark.users import DEFAULT_SUPER_USER_ID, UserCatalog

_ARROW: dict[str, pa.DataType] = {
    "oid": pa.int64(), "int2": pa.int16(), "int4": pa.int32(), "int8": pa.int64(), "bool": pa.bool_(),
    "text": pa.string(), "name": pa.string(), "char": pa.string(), "float4": pa.float32(),
    "float8": pa.float64(), "timestamptz": pa.timestamp("us", tz="UTC"),
    # Postgres' vector types hold non-negative values here; unsigned elements keep them apart from
    # arrays (int2[]) through DuckDB, so the wire sends them as int2vector/oidvector ("1 2").
    "int2vector": pa.list_(pa.uint16()), "oidvector": pa.list_(pa.uint32()),
}


def arrow_type(name: str) -> pa.DataType:
    """The Arrow type of a system column's Postgres type (``oid``, ``text[]``, ...)."""
    if name.endswith("[]"):
        return pa.list_(arrow_type(name[:-2]))
    return _ARROW[name]


@dataclass(frozen=True)
class SessionInfo:
    """One connected session, as SHOW PROCESSLIST and `pg_stat_activity` list it."""

    pid: int
    user: str
    host: str
    database: str
    application_name: str
    backend_start: float
    query_start: float | None
    query: str | None


@dataclass(frozen=True)
class SystemContext:
    """What system tables are built from: the catalog snapshot and the session's view of it."""

    snapshot: Any  # meta.catalog.CatalogSnapshot
    database_id: int
    database: str
    ddl_progress: Callable[[], list]  # meta.service.DdlProgress rows
    user: str = "root"
    search_path: tuple[str, ...] = (DEFAULT_SCHEMA,)
    settings: tuple[tuple[str, str, str], ...] = ()  # (name, value, description) of session variables
    sessions: Callable[[], list[SessionInfo]] = field(default=lambda: [])
    row_count: Callable[[int], int] = field(default=lambda table_id: 0)
    version: Any = None  # the storage version the statement pinned (risingspark.storage.desc.HummockVersion)
    write_stalls: Callable[[], list] = field(default=lambda: [])  # meta.compaction.write_stall.WriteStall rows
    user_id: int = DEFAULT_SUPER_USER_ID  # the session's user

    @property
    def roles(self) -> list[UserCatalog]:
        """Every user, by id (`pg_roles`, `pg_user`, owners)."""
        return sorted(self.snapshot.users.values(), key=lambda u: u.id)

    def user_name(self, user_id: int) -> str | None:
        user = self.snapshot.users.get(user_id)
        return user.name if user is not None else None

    @property
    def is_superuser(self) -> bool:
        user = self.snapshot.users.get(self.user_id)
        return user is not None and user.is_super

    def relations(self) -> list[RelationCatalog]:
        """The database's relations, by id."""
        return sorted((r for r in self.snapshot.relations.values() if r.database_id == self.database_id),
                      key=lambda r: r.id)

    def relations_named(self, names: set[str]) -> list[RelationCatalog]:
        """The database's relations called one of `names`, by id (by the snapshot's name index: the
        cost is the names', not the catalog's)."""
        found = (r for n in names for r in self.snapshot.relations_named(n) if r.database_id == self.database_id)
        return sorted(found, key=lambda r: r.id)

    def schemas(self) -> list[Any]:
        """The database's schemas (`risingspark.catalog.SchemaCatalog`), by id."""
        return sorted((s for s in self.snapshot.schemas.values() if s.database_id == self.database_id),
                      key=lambda s: s.id)

    def functions(self) -> list[Any]:
        """The database's user-defined functions (`risingspark.functions.FunctionCatalog`), by id."""
        return sorted((f for f in self.snapshot.functions.values() if f.database_id == self.database_id),
                      key=lambda f: f.id)

    def schema_name(self, rel: RelationCatalog) -> str:
        return self.snapshot.schemas[rel.schema_id].name


@dataclass(frozen=True)
class SystemTable:
    """A system table: its identity, its columns (``"name type, ..."``) and its rows."""

    schema: str
    name: str
    oid: int
    columns: str
    rows: Callable[[SystemContext], list[tuple]] = lambda ctx: []
    cached: bool = True  # rows depend only on the catalog snapshot

    def column_specs(self) -> list[tuple[str, str]]:
        out = []
        for part in self.columns.split(","):
            name, _, typ = part.strip().partition(" ")
            out.append((name, typ.strip()))
        return out

    def column_names(self) -> list[str]:
        return [n for n, _ in self.column_specs()]

    def arrow_schema(self) -> pa.Schema:
        return pa.schema([(n, arrow_type(t)) for n, t in self.column_specs()])

    def build(self, ctx: SystemContext) -> pa.Table:
        """The table's rows as Arrow (cached per catalog snapshot when `cached`)."""
        if not self.cached:
            return self._build(ctx)
        key = (self.schema, self.name, ctx.database_id, ctx.snapshot.version, id(ctx.snapshot))
        return _CACHE.get(key, lambda: self._build(ctx))

    def _build(self, ctx: SystemContext) -> pa.Table:
        schema = self.arrow_schema()
        rows = self.rows(ctx)
        columns = list(zip(*rows, strict=True)) if rows else [()] * len(schema)
        return pa.Table.from_arrays([pa.array(list(c), f.type) for c, f in zip(columns, schema, strict=True)],
                                    schema=schema)


class _TableCache:
    """A small LRU of built system tables."""

    def __init__(self, size: int = 128) -> None:
        self._size = size
        self._lock = threading.Lock()
        self._entries: OrderedDict[tuple, pa.Table] = OrderedDict()

    def get(self, key: tuple, build: Callable[[], pa.Table]) -> pa.Table:
        with self._lock:
            if key in self._entries:
                self._entries.move_to_end(key)
                return self._entries[key]
        table = build()
        with self._lock:
            self._entries[key] = table
            while len(self._entries) > self._size:
                self._entries.popitem(last=False)
        return table


_CACHE = _TableCache()
