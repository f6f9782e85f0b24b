"""A table created in a real meta service's catalog without a frontend (its stream plan as the
frontend would make it: DML → exchange on the key → materialize with OVERWRITE), for tests of meta
and of frontend paths that need a table but no compute node."""

from __future__ import annotations

from meta.service import MetaService
from risingspark.catalog import JobStatus, RelationCatalog, RelationKind
from risingspark.storage.desc import StateTableDesc
from risingspark.stream_plan import StreamDml, StreamExchange, StreamMaterialize, node_to_json
from risingspark.table_kind import ConflictBehavior
from risingspark.types import INT8, Field


def create_table(meta: MetaService, name: str, fields: tuple[Field, ...] = (Field("id", INT8),)) -> RelationCatalog:
    """``CREATE TABLE name (fields...)`` in ``dev.public``, keyed by its first column."""
    rid = meta.allocate_ids(1)
    desc = StateTableDesc(rid, fields, (0,), (0,))
    plan = StreamMaterialize(fields=fields, stream_key=(0,), table=desc, conflict=ConflictBehavior.OVERWRITE,
                             input=StreamExchange(fields=fields, stream_key=(0,), dist_key=(0,),
                                                  input=StreamDml(fields=fields, stream_key=(0,), table_id=rid)))
    snap = meta.catalog_snapshot()
    db = snap.database("dev")
    schema = snap.schema(db.id, "public")
    return meta.create_relation(RelationCatalog(rid, db.id, schema.id, name, RelationKind.TABLE, fields, (0,), (0,),
                                                f"CREATE TABLE {name}", JobStatus.CREATED, plan=node_to_json(plan),
                                                state_tables=(desc,)))
