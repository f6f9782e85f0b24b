"""A table created in a real meta service's catalog without a frontend (its stream plan as the
frontend would make it: DML → exchange on the key → materialize with OVERWRITE), for tests of meta
and of frontend paths that need a table but no compute node."""

from __future__ import annotations

from pathlib import Path

from meta.service import MetaService
from meta.store.store import MetaStore
from risingspark.catalog import JobStatus, RelationCatalog, RelationKind
from risingspark.storage.desc import StateTableDesc
from risingspark.storage.object_store import ObjectStore
from risingspark.stream_plan import StreamDml, StreamExchange, StreamMaterialize, node_to_json
from risingspark.table_kind import ConflictBehavior
from risingspark.types import INT8, Field


def sqlite_meta(tmp_path: Path) -> MetaService:
    """A meta service over a new SQLite store and an object store under `tmp_path`, without barriers."""
    store = MetaStore(f"sqlite:///{tmp_path / 'meta.db'}")
    store.upgrade()
    return MetaService(store, ObjectStore(str(tmp_path / "objects")), None)


def create_table(meta: MetaService, name: str, fields: tuple[Field, ...] = (Field("id", INT8),), key: int = 0,
                 *, row_id: bool = False, extra: dict | None = None) -> RelationCatalog:
    """``CREATE TABLE name (fields...)`` in ``dev.public``, keyed by column `key` (the first; with
    `row_id`, that column is the hidden row id), with the catalog's `extra` (``not_null``...)."""
    rid = meta.allocate_ids(1)
    pk = (key,)
    desc = StateTableDesc(rid, fields, pk, pk)
    plan = StreamMaterialize(fields=fields, stream_key=pk, table=desc, conflict=ConflictBehavior.OVERWRITE,
                             input=StreamExchange(fields=fields, stream_key=pk, dist_key=pk,
                                                  input=StreamDml(fields=fields, stream_key=pk, table_id=rid)))
    snap = meta.catalog_snapshot()
    db = snap.database("dev")
    schema = snap.schema(db.id, "public")
    return meta.create_relation(RelationCatalog(rid, db.id, schema.id, name, RelationKind.TABLE, fields, pk, pk,
                                                f"CREATE TABLE {name}", JobStatus.CREATED, plan=node_to_json(plan),
                                                state_tables=(desc,), row_id_index=key if row_id else None,
                                                extra=extra or {}))
