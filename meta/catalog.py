"""The catalog manager: databases, schemas and relations, persisted in the meta store and mirrored
in memory, with the users and privileges `meta.users` keeps. Frontends bind names, authenticate and
check privileges against an immutable `CatalogSnapshot`, re-read when `version` moves."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from functools import cached_property

import sqlalchemy as sa

from meta.store.schema import databases, relations, schemas, user_privileges
from meta.store.store import MetaStore, Txn, next_ids
from risingspark.catalog import (
    DEFAULT_DATABASE,
    DEFAULT_RESOURCE_GROUP,
    DEFAULT_SCHEMA,
    BackfillType,
    CreateType,
    DatabaseCatalog,
    JobStatus,
    RelationCatalog,
    RelationKind,
    SchemaCatalog,
)
from risingspark.functions import FunctionCatalog
from risingspark.storage.desc import StateTableDesc
from risingspark.types import Field
from risingspark.users import GrantPrivilege, UserCatalog, default_users

logger = logging.getLogger(__name__)

# Ids below this are reserved for system catalogs (their OIDs in pg_class).
FIRST_USER_ID = 1000


@dataclass(frozen=True)
class CatalogSnapshot:
    version: int
    databases: dict[int, DatabaseCatalog] = field(default_factory=dict)
    schemas: dict[int, SchemaCatalog] = field(default_factory=dict)
    relations: dict[int, RelationCatalog] = field(default_factory=dict)
    users: dict[int, UserCatalog] = field(default_factory=default_users)
    privileges: dict[int, GrantPrivilege] = field(default_factory=dict)  # by privilege id
    functions: dict[int, FunctionCatalog] = field(default_factory=dict)  # user-defined (`meta.functions`)

    def database(self, name: str) -> DatabaseCatalog | None:
        return next((d for d in self.databases.values() if d.name == name), None)

    def schema(self, database_id: int, name: str) -> SchemaCatalog | None:
        return next((s for s in self.schemas.values() if s.database_id == database_id and s.name == name), None)

    def relation(self, schema_id: int, name: str) -> RelationCatalog | None:
        return self._by_name.get((schema_id, name))

    @cached_property
    def _by_name(self) -> dict[tuple[int, str], RelationCatalog]:
        """Relations by schema and name, built once a snapshot (a snapshot never changes): a lookup by
        name costs the same in a catalog of ten relations or of ten thousand."""
        return {(r.schema_id, r.name): r for r in self.relations.values()}

    @cached_property
    def _by_bare_name(self) -> dict[str, list[RelationCatalog]]:
        out: dict[str, list[RelationCatalog]] = {}
        for r in self.relations.values():
            out.setdefault(r.name, []).append(r)
        return out

    @cached_property
    def _dependents(self) -> dict[int, list[RelationCatalog]]:
        out: dict[int, list[RelationCatalog]] = {}
        for r in self.relations.values():
            for dep in r.depends_on:
                out.setdefault(dep, []).append(r)
        return out

    def dependents(self, relation_id: int) -> list[RelationCatalog]:
        return list(self._dependents.get(relation_id, ()))

    def relations_named(self, name: str) -> list[RelationCatalog]:
        """The relations called `name`, in every database and schema."""
        return list(self._by_bare_name.get(name, ()))

    def function(self, schema_id: int, name: str) -> FunctionCatalog | None:
        return next((f for f in self.functions.values() if f.schema_id == schema_id and f.name == name), None)

    def user(self, name: str) -> UserCatalog | None:
        return next((u for u in self.users.values() if u.name == name), None)

    def owner_of(self, object_id: int) -> int | None:
        """The owner of a database, schema, relation or function (they share one id space); None if none."""
        obj = (self.relations.get(object_id) or self.schemas.get(object_id) or self.databases.get(object_id)
               or self.functions.get(object_id))
        return obj.owner if obj is not None else None

    def object_label(self, object_id: int) -> tuple[str, str]:
        """How PostgreSQL's messages name an object: ``("table", "t")``, ``("schema", "s")``..."""
        if object_id in self.relations:
            rel = self.relations[object_id]
            return rel.kind.display, rel.name
        if object_id in self.schemas:
            return "schema", self.schemas[object_id].name
        if object_id in self.databases:
            return "database", self.databases[object_id].name
        return "object", str(object_id)

    def privileges_on(self, object_id: int) -> list[GrantPrivilege]:
        return [p for p in self.privileges.values() if p.object_id == object_id]


def post_order(roots: Iterable[RelationCatalog],
               edges: Callable[[RelationCatalog], Iterable[RelationCatalog]]) -> list[RelationCatalog]:
    """Every relation reachable from `roots` through `edges`, each after those it leads to
    (dependencies first when `edges` gives dependencies; dependents first when it gives dependents)."""
    out: list[RelationCatalog] = []
    seen: set[int] = set()

    def visit(r: RelationCatalog) -> None:
        if r.id in seen:
            return
        seen.add(r.id)
        for nxt in edges(r):
            visit(nxt)
        out.append(r)

    for root in roots:
        visit(root)
    return out


class CatalogManager:
    def __init__(self, store: MetaStore) -> None:
        self._store = store
        self._lock = threading.Lock()
        self._snapshot = self._load()
        self._changed = threading.Condition(self._lock)
        self._listeners: list[Callable[[], None]] = []

    @property
    def snapshot(self) -> CatalogSnapshot:
        return self._snapshot

    def _load(self) -> CatalogSnapshot:
        with self._store.transaction() as tx:
            conn = tx.conn
            if conn.execute(sa.select(databases.c.id).where(databases.c.name == DEFAULT_DATABASE)).first() is None:
                db_id = next_ids(conn, "catalog", 1, start=FIRST_USER_ID)
                conn.execute(databases.insert().values(id=db_id, name=DEFAULT_DATABASE,
                                                       resource_group=DEFAULT_RESOURCE_GROUP))
                conn.execute(schemas.insert().values(id=next_ids(conn, "catalog"), database_id=db_id,
                                                     name=DEFAULT_SCHEMA))
            dbs = {r.id: DatabaseCatalog(r.id, r.name, r.resource_group, r.owner)
                   for r in conn.execute(sa.select(databases))}
            schs = {r.id: SchemaCatalog(r.id, r.database_id, r.name, r.owner) for r in conn.execute(sa.select(schemas))}
            rels = {r.id: _relation_from_row(r) for r in conn.execute(sa.select(relations))}
            from meta.functions import load_functions
            from meta.users import load_users

            users, privileges = load_users(conn)
            functions = load_functions(conn)
        return CatalogSnapshot(1, dbs, schs, rels, users, privileges, functions)

    # ---- writes (inside a transaction; memory follows the commit) ------------------------------
    def allocate_ids(self, tx: Txn, count: int) -> int:
        return next_ids(tx.conn, "catalog", count, start=FIRST_USER_ID)

    def _stage(self, tx: Txn) -> dict[int, RelationCatalog]:
        if "catalog" not in tx.staged:
            tx.staged["catalog"] = dict(self._snapshot.relations)
            tx.on_commit(lambda: self._install(tx.staged["catalog"]))
        return tx.staged["catalog"]

    def _install(self, rels: dict[int, RelationCatalog]) -> None:
        self._swap(relations=rels)

    def _swap(self, **changes) -> None:
        """A new snapshot, one version on, with `changes` (fields of `CatalogSnapshot`)."""
        with self._lock:
            s = self._snapshot
            self._snapshot = replace(s, version=s.version + 1, **changes)
            self._changed.notify_all()
        for listener in self._listeners:
            listener()

    def on_change(self, listener: Callable[[], None]) -> None:
        """Call `listener` (without locks held) after each new snapshot is installed."""
        self._listeners.append(listener)

    def stage_acl(self, tx: Txn) -> tuple[dict[int, UserCatalog], dict[int, GrantPrivilege]]:
        """The users and privileges as `tx` changes them (`meta.users`), installed when it commits."""
        if "acl" not in tx.staged:
            tx.staged["acl"] = (dict(self._snapshot.users), dict(self._snapshot.privileges))
            tx.on_commit(lambda: self._swap(users=tx.staged["acl"][0], privileges=tx.staged["acl"][1]))
        return tx.staged["acl"]

    def stage_functions(self, tx: Txn) -> dict[int, FunctionCatalog]:
        """The functions as `tx` changes them (`meta.functions`), installed when it commits."""
        if "functions" not in tx.staged:
            tx.staged["functions"] = dict(self._snapshot.functions)
            tx.on_commit(lambda: self._swap(functions=tx.staged["functions"]))
        return tx.staged["functions"]

    def _forget_privileges(self, tx: Txn, object_ids: list[int]) -> None:
        """Privileges on objects being dropped go with them."""
        tx.conn.execute(user_privileges.delete().where(user_privileges.c.object_id.in_(object_ids)))
        privileges = self.stage_acl(tx)[1]
        for pid in [p.id for p in privileges.values() if p.object_id in object_ids]:
            del privileges[pid]

    def set_owner(self, tx: Txn, object_ids: list[int], owner: int) -> None:
        """Databases, schemas or relations get a new owner."""
        for table in (databases, schemas, relations):
            tx.conn.execute(table.update().where(table.c.id.in_(object_ids)).values(owner=owner))
        staged = self._stage(tx)
        for i in object_ids:
            if i in staged:
                staged[i] = replace(staged[i], owner=owner)
        others = [i for i in object_ids if i not in staged]
        if others:
            tx.on_commit(lambda: self._swap(
                schemas={k: replace(v, owner=owner) if k in others else v for k, v in self._snapshot.schemas.items()},
                databases={k: replace(v, owner=owner) if k in others else v
                           for k, v in self._snapshot.databases.items()}))

    def create_relation(self, tx: Txn, rel: RelationCatalog) -> None:
        tx.conn.execute(relations.insert().values(**_relation_to_row(rel)))
        self._stage(tx)[rel.id] = rel

    def set_status(self, tx: Txn, rel_id: int, status: JobStatus) -> None:
        tx.conn.execute(relations.update().where(relations.c.id == rel_id).values(status=status.value))
        staged = self._stage(tx)
        if rel_id in staged:
            staged[rel_id] = replace(staged[rel_id], status=status)

    def set_initialized(self, tx: Txn, rel_id: int, epoch: int) -> None:
        tx.conn.execute(relations.update().where(relations.c.id == rel_id).values(initialized_at_epoch=epoch))
        staged = self._stage(tx)
        if rel_id in staged:
            staged[rel_id] = replace(staged[rel_id], initialized_at_epoch=epoch)

    def set_parallelism(self, tx: Txn, rel_id: int, parallelism: int) -> None:
        tx.conn.execute(relations.update().where(relations.c.id == rel_id).values(parallelism=parallelism))
        staged = self._stage(tx)
        if rel_id in staged:
            staged[rel_id] = replace(staged[rel_id], parallelism=parallelism)

    def rename(self, tx: Txn, rel_id: int, name: str) -> None:
        tx.conn.execute(relations.update().where(relations.c.id == rel_id).values(name=name))
        staged = self._stage(tx)
        if rel_id in staged:
            staged[rel_id] = replace(staged[rel_id], name=name)

    def set_extra(self, tx: Txn, rel_id: int, extra: dict) -> None:
        tx.conn.execute(relations.update().where(relations.c.id == rel_id).values(extra=json.dumps(extra)))
        staged = self._stage(tx)
        if rel_id in staged:
            staged[rel_id] = replace(staged[rel_id], extra=extra)

    def create_schema(self, tx: Txn, schema: SchemaCatalog) -> None:
        tx.conn.execute(schemas.insert().values(id=schema.id, database_id=schema.database_id, name=schema.name,
                                                owner=schema.owner))
        tx.on_commit(lambda: self._swap(schemas={**self._snapshot.schemas, schema.id: schema}))

    def create_database(self, tx: Txn, db: DatabaseCatalog, public: SchemaCatalog) -> None:
        """A database and its ``public`` schema."""
        tx.conn.execute(databases.insert().values(id=db.id, name=db.name, resource_group=db.resource_group,
                                                  owner=db.owner))
        self.create_schema(tx, public)
        tx.on_commit(lambda: self._set_databases({**self._snapshot.databases, db.id: db}))

    def drop_database(self, tx: Txn, database_id: int) -> None:
        """An empty database and its schemas."""
        tx.conn.execute(schemas.delete().where(schemas.c.database_id == database_id))
        tx.conn.execute(databases.delete().where(databases.c.id == database_id))
        dropped = [k for k, v in self._snapshot.schemas.items() if v.database_id == database_id]
        self._forget_privileges(tx, [database_id, *dropped])

        def install() -> None:
            for schema_id in dropped:
                self._uninstall_schema(schema_id)
            self._set_databases({k: v for k, v in self._snapshot.databases.items() if k != database_id})

        tx.on_commit(install)

    def _set_databases(self, dbs: dict[int, DatabaseCatalog]) -> None:
        self._swap(databases=dbs)

    def drop_schema(self, tx: Txn, schema_id: int) -> None:
        tx.conn.execute(schemas.delete().where(schemas.c.id == schema_id))
        self._forget_privileges(tx, [schema_id])
        tx.on_commit(lambda: self._uninstall_schema(schema_id))

    def _uninstall_schema(self, schema_id: int) -> None:
        self._swap(schemas={k: v for k, v in self._snapshot.schemas.items() if k != schema_id})

    def drop_relations(self, tx: Txn, ids: list[int]) -> None:
        tx.conn.execute(relations.delete().where(relations.c.id.in_(ids)))
        self._forget_privileges(tx, ids)
        staged = self._stage(tx)
        for i in ids:
            staged.pop(i, None)

    def wait_for_change(self, seen_version: int, timeout: float) -> int:
        with self._lock:
            self._changed.wait_for(lambda: self._snapshot.version != seen_version, timeout)
            return self._snapshot.version


def _relation_to_row(r: RelationCatalog) -> dict:
    return {
        "id": r.id, "database_id": r.database_id, "schema_id": r.schema_id, "name": r.name,
        "kind": r.kind.value, "fields": json.dumps([f.to_json() for f in r.fields]),
        "pk": json.dumps(list(r.pk)), "dist_key": json.dumps(list(r.dist_key)), "definition": r.definition,
        "status": r.status.value, "create_type": r.create_type.value,
        "backfill_type": r.backfill_type.value if r.backfill_type else None,
        "plan": json.dumps(r.plan) if r.plan is not None else None,
        "state_tables": json.dumps([d.to_json() for d in r.state_tables]),
        "dependencies": json.dumps(list(r.dependencies)), "parallelism": r.parallelism,
        "row_id_index": r.row_id_index, "created_at_epoch": r.created_at_epoch,
        "initialized_at_epoch": r.initialized_at_epoch, "resource_group": r.resource_group,
        "extra": json.dumps(r.extra), "owner": r.owner,
    }


def _relation_from_row(r) -> RelationCatalog:
    return RelationCatalog(
        id=r.id, database_id=r.database_id, schema_id=r.schema_id, name=r.name, kind=RelationKind(r.kind),
        fields=tuple(Field.from_json(f) for f in json.loads(r.fields)), pk=tuple(json.loads(r.pk)),
        dist_key=tuple(json.loads(r.dist_key)), definition=r.definition, status=JobStatus(r.status),
        create_type=CreateType(r.create_type),
        backfill_type=BackfillType(r.backfill_type) if r.backfill_type else None,
        plan=json.loads(r.plan) if r.plan else None,
        state_tables=tuple(StateTableDesc.from_json(d) for d in json.loads(r.state_tables)),
        dependencies=tuple(json.loads(r.dependencies)), parallelism=r.parallelism, row_id_index=r.row_id_index,
        created_at_epoch=r.created_at_epoch, initialized_at_epoch=r.initialized_at_epoch,
        resource_group=r.resource_group, extra=json.loads(r.extra), owner=r.owner,
    )
