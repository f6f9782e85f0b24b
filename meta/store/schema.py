"""The meta store's tables (SQLAlchemy Core). The schema is created and upgraded only by the alembic
migrations in `migrations/`; this module mirrors it for queries.

JSON values are stored as TEXT so SQLite and PostgreSQL behave the same.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    text,
)

metadata = MetaData()

system_params = Table(
    "system_params", metadata,
    Column("name", String(128), primary_key=True),
    Column("value", Text, nullable=False),
)

id_counters = Table(
    "id_counters", metadata,
    Column("name", String(64), primary_key=True),
    Column("next_id", BigInteger, nullable=False),
)

databases = Table(
    "databases", metadata,
    Column("id", Integer, primary_key=True, autoincrement=False),
    Column("name", String(255), nullable=False, unique=True),
    Column("resource_group", String(255), nullable=False),
    Column("owner", Integer, nullable=False, server_default=text("1")),
)

schemas = Table(
    "schemas", metadata,
    Column("id", Integer, primary_key=True, autoincrement=False),
    Column("database_id", Integer, nullable=False),
    Column("name", String(255), nullable=False),
    Column("owner", Integer, nullable=False, server_default=text("1")),
    UniqueConstraint("database_id", "name", name="uq_schemas_database_name"),
)

relations = Table(
    "relations", metadata,
    Column("id", Integer, primary_key=True, autoincrement=False),
    Column("database_id", Integer, nullable=False),
    Column("schema_id", Integer, nullable=False),
    Column("name", String(255), nullable=False),
    Column("kind", String(32), nullable=False),
    Column("fields", Text, nullable=False),
    Column("pk", Text, nullable=False),
    Column("dist_key", Text, nullable=False),
    Column("definition", Text, nullable=False),
    Column("status", String(32), nullable=False),
    Column("create_type", String(32), nullable=False),
    Column("backfill_type", String(32), nullable=True),
    Column("plan", Text, nullable=True),
    Column("state_tables", Text, nullable=False),
    Column("dependencies", Text, nullable=False),
    Column("parallelism", Integer, nullable=False),
    Column("row_id_index", Integer, nullable=True),
    Column("created_at_epoch", BigInteger, nullable=False),
    Column("initialized_at_epoch", BigInteger, nullable=True),
    Column("resource_group", String(255), nullable=False),
    Column("extra", Text, nullable=False),
    Column("owner", Integer, nullable=False, server_default=text("1")),
    UniqueConstraint("schema_id", "name", name="uq_relations_schema_name"),
)

# Users and their privileges (`meta.users`); owners above are user ids (1: root).
users = Table(
    "users", metadata,
    Column("id", Integer, primary_key=True, autoincrement=False),
    Column("name", String(255), nullable=False, unique=True),
    Column("is_super", Boolean, nullable=False),
    Column("can_create_db", Boolean, nullable=False),
    Column("can_create_user", Boolean, nullable=False),
    Column("can_login", Boolean, nullable=False),
    Column("password", Text, nullable=True),  # PostgreSQL's rolpassword: an md5 or SCRAM-SHA-256 secret
)

user_privileges = Table(
    "user_privileges", metadata,
    Column("id", Integer, primary_key=True, autoincrement=False),
    Column("user_id", Integer, nullable=False, index=True),
    Column("object_id", Integer, nullable=False, index=True),
    Column("action", String(32), nullable=False),
    Column("granted_by", Integer, nullable=False),
    Column("with_grant_option", Boolean, nullable=False),
    Column("dependent_id", Integer, nullable=True),
    UniqueConstraint("user_id", "object_id", "action", "granted_by", name="uq_user_privileges_grant"),
)

hummock_version = Table(
    "hummock_version", metadata,
    Column("id", Integer, primary_key=True, autoincrement=False),  # always 1: one row
    Column("version_id", BigInteger, nullable=False),
    Column("committed_epoch", BigInteger, nullable=False),
)

sstables = Table(
    "sstables", metadata,
    Column("id", BigInteger, primary_key=True, autoincrement=False),
    Column("table_id", Integer, nullable=False, index=True),
    Column("path", String(1024), nullable=False, unique=True),
    Column("level", Integer, nullable=False),
    Column("sub_level", BigInteger, nullable=False),
    Column("min_vnode", Integer, nullable=False),
    Column("max_vnode", Integer, nullable=False),
    Column("min_epoch", BigInteger, nullable=False),
    Column("max_epoch", BigInteger, nullable=False),
    Column("row_count", BigInteger, nullable=False),
    Column("tombstone_count", BigInteger, nullable=False),
    Column("size_bytes", BigInteger, nullable=False),
    Column("min_key", LargeBinary, nullable=False, server_default=text("''")),
    Column("max_key", LargeBinary, nullable=False, server_default=text("''")),
)

objects_to_delete = Table(
    "objects_to_delete", metadata,
    Column("path", String(1024), primary_key=True),
    Column("after_version", BigInteger, nullable=False),
)

change_logs = Table(
    "change_logs", metadata,
    Column("id", BigInteger, primary_key=True, autoincrement=False),
    Column("table_id", Integer, nullable=False, index=True),
    Column("epoch", BigInteger, nullable=False, index=True),
    Column("path", String(1024), nullable=False),
    Column("row_count", BigInteger, nullable=False),
)

dml_batches = Table(
    "dml_batches", metadata,
    Column("id", BigInteger, primary_key=True, autoincrement=False),
    Column("table_id", Integer, nullable=False),
    Column("path", String(1024), nullable=False),
    Column("row_count", BigInteger, nullable=False),
    Column("committed_epoch", BigInteger, nullable=True, index=True),
)

# The frontends' DML logs (`frontend.dml_log`): per log, the newest record meta has recorded (in the
# transaction that recorded its batch), from which a frontend replays its log after a crash.
dml_logs = Table(
    "dml_logs", metadata,
    Column("log_id", String(64), primary_key=True),
    Column("recorded_seq", BigInteger, nullable=False),
)

backfill_progress = Table(
    "backfill_progress", metadata,
    Column("job_id", Integer, primary_key=True, autoincrement=False),
    Column("scan_id", Integer, primary_key=True, autoincrement=False),
    Column("upstream_id", Integer, nullable=False),
    Column("vnode", Integer, primary_key=True, autoincrement=False),
    Column("position", Text, nullable=True),
    Column("finished", Boolean, nullable=False),
    Column("row_count", BigInteger, nullable=False),
)

table_stats = Table(
    "table_stats", metadata,
    Column("table_id", Integer, primary_key=True, autoincrement=False),
    Column("row_count", BigInteger, nullable=False),
)

snapshot_backfill = Table(
    "snapshot_backfill", metadata,
    Column("job_id", Integer, primary_key=True, autoincrement=False),
    Column("upstream_id", Integer, nullable=False),
    Column("snapshot_epoch", BigInteger, nullable=False),
    Column("consumed_epoch", BigInteger, nullable=False),
    Column("snapshot_done", Boolean, nullable=False),
    Column("unique_keys", Boolean, nullable=False),
    Column("total_rows", BigInteger, nullable=False),
    Column("ssts", Text, nullable=False),
    Column("splits", Text, nullable=False),
)

functions = Table(
    "functions", metadata,
    Column("id", Integer, primary_key=True, autoincrement=False),
    Column("database_id", Integer, nullable=False),
    Column("schema_id", Integer, nullable=False),
    Column("name", String(255), nullable=False),
    Column("arg_names", Text, nullable=False),  # JSON array
    Column("arg_types", Text, nullable=False),  # JSON array of SQL type texts
    Column("return_type", String(255), nullable=False),
    Column("language", String(32), nullable=False),
    Column("body", Text, nullable=False),
    Column("owner", Integer, nullable=False),
    UniqueConstraint("schema_id", "name", name="uq_functions_schema_name"),
)
