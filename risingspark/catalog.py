"""Catalog objects shared by every service: databases, schemas and relations (tables, materialized
views, views, indexes), with their streaming-job state.

Meta owns and persists them; the frontend binds names against a snapshot of them; compute builds
epoch rounds from their stream plans.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field, replace
from typing import Any

from risingspark.storage.desc import StateTableDesc
from risingspark.table_kind import APPEND_ONLY, ON_CONFLICT, ConflictBehavior
from risingspark.types import Field
from risingspark.users import DEFAULT_SUPER_USER, DEFAULT_SUPER_USER_ID

DEFAULT_DATABASE = "dev"
DEFAULT_SCHEMA = "public"
DEFAULT_USER = DEFAULT_SUPER_USER
DEFAULT_RESOURCE_GROUP = "default"
VIEW_DEPENDENCIES = "view_dependencies"  # `RelationCatalog.extra` key: ids of the views a job's query names
# `RelationCatalog.extra` key of a job that asked for serverless backfill: its state (`meta.serverless`)
SERVERLESS_BACKFILL = "serverless_backfill"
# `RelationCatalog.extra` keys of a job's backfill rate: its fixed limit (rows/s per parallelism), and
# whether meta adapts it to the barrier latency (`meta.backfill_rate`)
BACKFILL_RATE_LIMIT = "backfill_rate_limit"
ADAPTIVE_BACKFILL_RATE = "adaptive_backfill_rate"


class RelationKind(enum.StrEnum):
    """A table, a materialized view, a view (a stored query, no data, no job) or an index (as in
    RisingWave: a materialized view of its table sorted and distributed by the index columns)."""

    TABLE = "table"
    MATERIALIZED_VIEW = "materialized_view"
    VIEW = "view"
    INDEX = "index"

    @property
    def display(self) -> str:
        return self.value.replace("_", " ")


class JobStatus(enum.StrEnum):
    CREATING = "creating"
    CREATED = "created"


class CreateType(enum.StrEnum):
    FOREGROUND = "FOREGROUND"
    BACKGROUND = "BACKGROUND"


class BackfillType(enum.StrEnum):
    """As RisingWave's `rw_ddl_progress.backfill_type`."""

    ARRANGEMENT_BACKFILL = "ARRANGEMENT_BACKFILL"
    SNAPSHOT_BACKFILL = "SNAPSHOT_BACKFILL"
    NO_SHUFFLE_BACKFILL = "NO_SHUFFLE_BACKFILL"


@dataclass(frozen=True)
class DatabaseCatalog:
    id: int
    name: str
    resource_group: str = DEFAULT_RESOURCE_GROUP
    owner: int = DEFAULT_SUPER_USER_ID


@dataclass(frozen=True)
class SchemaCatalog:
    id: int
    database_id: int
    name: str
    owner: int = DEFAULT_SUPER_USER_ID


@dataclass(frozen=True)
class RelationCatalog:
    """A table or materialized view, and its streaming job.

    Attributes:
        fields: every column, hidden ones included (``_row_id``, stream-key columns an MV keeps).
        pk: indices of the stream key (a table's primary key, or its hidden ``_row_id``).
        dist_key: indices hashed to the vnode of each row.
        definition: the CREATE statement as the user wrote it.
        plan: the stream plan (`risingspark.stream_plan` JSON) the compute node runs.
        state_tables: descriptors of every state table of the job; the first is the relation's own
            data (its `table_id` equals `id`).
        dependencies: ids of the relations the job reads.
        owner: the id of the user owning it (`risingspark.users`).
    """

    id: int
    database_id: int
    schema_id: int
    name: str
    kind: RelationKind
    fields: tuple[Field, ...]
    pk: tuple[int, ...]
    dist_key: tuple[int, ...]
    definition: str
    status: JobStatus = JobStatus.CREATED
    create_type: CreateType = CreateType.FOREGROUND
    backfill_type: BackfillType | None = None
    plan: dict[str, Any] | None = None
    state_tables: tuple[StateTableDesc, ...] = ()
    dependencies: tuple[int, ...] = ()
    parallelism: int = 0
    row_id_index: int | None = None
    created_at_epoch: int = 0
    initialized_at_epoch: int | None = None
    resource_group: str = DEFAULT_RESOURCE_GROUP
    extra: dict[str, Any] = field(default_factory=dict)
    owner: int = DEFAULT_SUPER_USER_ID  # the user who created it (an index: its table's owner)

    @property
    def table_desc(self) -> StateTableDesc:
        return self.state_tables[0]

    @property
    def depends_on(self) -> tuple[int, ...]:
        """Every relation this one needs: the upstreams of its job, and the views its query names
        (a view has no job; its query is bound in place, so it is no upstream)."""
        return (*self.dependencies, *self.extra.get(VIEW_DEPENDENCIES, ()))

    @property
    def append_only(self) -> bool:
        """Whether the relation only ever has rows inserted: a table created APPEND ONLY, or a
        materialized view over append-only inputs that keeps them so (`risingspark.table_kind`)."""
        return bool(self.extra.get(APPEND_ONLY))

    @property
    def conflict(self) -> ConflictBehavior:
        """A table's primary-key conflict behaviour (a table created before tables had one
        overwrites); NoCheck for the other relations."""
        if self.kind is not RelationKind.TABLE:
            return ConflictBehavior.NO_CHECK
        return ConflictBehavior(self.extra.get(ON_CONFLICT, ConflictBehavior.OVERWRITE.value))

    @property
    def visible_fields(self) -> list[Field]:
        return [f for f in self.fields if not f.hidden]

    @property
    def is_creating(self) -> bool:
        return self.status is JobStatus.CREATING

    def with_status(self, status: JobStatus) -> RelationCatalog:
        return replace(self, status=status)
