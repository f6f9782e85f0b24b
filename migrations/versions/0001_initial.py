"""The initial meta store schema: catalog, hummock version, DML batches, backfill progress.

Revision ID: 0001
Revises:
Create Date: 2026-11-22
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "system_params",
        sa.Column("name", sa.String(128), primary_key=True),
        sa.Column("value", sa.Text, nullable=False),
    )
    op.create_table(
        "id_counters",
        sa.Column("name", sa.String(64), primary_key=True),
        sa.Column("next_id", sa.BigInteger, nullable=False),
    )
    op.create_table(
        "databases",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("name", sa.String(255), nullable=False, unique=True),
        sa.Column("resource_group", sa.String(255), nullable=False),
    )
    op.create_table(
        "schemas",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("database_id", sa.Integer, nullable=False),
        sa.Column("name", sa.String(255), nullable=False),
        sa.UniqueConstraint("database_id", "name", name="uq_schemas_database_name"),
    )
    op.create_table(
        "relations",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("database_id", sa.Integer, nullable=False),
        sa.Column("schema_id", sa.Integer, nullable=False),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("fields", sa.Text, nullable=False),
        sa.Column("pk", sa.Text, nullable=False),
        sa.Column("dist_key", sa.Text, nullable=False),
        sa.Column("definition", sa.Text, nullable=False),
        sa.Column("status", sa.String(32), nullable=False),
        sa.Column("create_type", sa.String(32), nullable=False),
        sa.Column("backfill_type", sa.String(32), nullable=True),
        sa.Column("plan", sa.Text, nullable=True),
        sa.Column("state_tables", sa.Text, nullable=False),
        sa.Column("dependencies", sa.Text, nullable=False),
        sa.Column("parallelism", sa.Integer, nullable=False),
        sa.Column("row_id_index", sa.Integer, nullable=True),
        sa.Column("created_at_epoch", sa.BigInteger, nullable=False),
        sa.Column("initialized_at_epoch", sa.BigInteger, nullable=True),
        sa.Column("resource_group", sa.String(255), nullable=False),
        sa.Column("extra", sa.Text, nullable=False),
        sa.UniqueConstraint("schema_id", "name", name="uq_relations_schema_name"),
    )
    op.create_table(
        "hummock_version",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("version_id", sa.BigInteger, nullable=False),
        sa.Column("committed_epoch", sa.BigInteger, nullable=False),
    )
    op.create_table(
        "sstables",
        sa.Column("id", sa.BigInteger, primary_key=True, autoincrement=False),
        sa.Column("table_id", sa.Integer, nullable=False),
        sa.Column("path", sa.String(1024), nullable=False, unique=True),
        sa.Column("level", sa.Integer, nullable=False),
        sa.Column("sub_level", sa.BigInteger, nullable=False),
        sa.Column("min_vnode", sa.Integer, nullable=False),
        sa.Column("max_vnode", sa.Integer, nullable=False),
        sa.Column("min_epoch", sa.BigInteger, nullable=False),
        sa.Column("max_epoch", sa.BigInteger, nullable=False),
        sa.Column("row_count", sa.BigInteger, nullable=False),
        sa.Column("tombstone_count", sa.BigInteger, nullable=False),
        sa.Column("size_bytes", sa.BigInteger, nullable=False),
    )
    op.create_index("ix_sstables_table_id", "sstables", ["table_id"])
    op.create_table(
        "objects_to_delete",
        sa.Column("path", sa.String(1024), primary_key=True),
        sa.Column("after_version", sa.BigInteger, nullable=False),
    )
    op.create_table(
        "change_logs",
        sa.Column("id", sa.BigInteger, primary_key=True, autoincrement=False),
        sa.Column("table_id", sa.Integer, nullable=False),
        sa.Column("epoch", sa.BigInteger, nullable=False),
        sa.Column("path", sa.String(1024), nullable=False),
        sa.Column("row_count", sa.BigInteger, nullable=False),
    )
    op.create_index("ix_change_logs_table_id", "change_logs", ["table_id"])
    op.create_index("ix_change_logs_epoch", "change_logs", ["epoch"])
    op.create_table(
        "dml_batches",
        sa.Column("id", sa.BigInteger, primary_key=True, autoincrement=False),
        sa.Column("table_id", sa.Integer, nullable=False),
        sa.Column("path", sa.String(1024), nullable=False),
        sa.Column("row_count", sa.BigInteger, nullable=False),
        sa.Column("committed_epoch", sa.BigInteger, nullable=True),
    )
    op.create_index("ix_dml_batches_committed_epoch", "dml_batches", ["committed_epoch"])
    op.create_table(
        "backfill_progress",
        sa.Column("job_id", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("upstream_id", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("vnode", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("position", sa.Text, nullable=True),
        sa.Column("finished", sa.Boolean, nullable=False),
        sa.Column("row_count", sa.BigInteger, nullable=False),
    )
    op.create_table(
        "table_stats",
        sa.Column("table_id", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("row_count", sa.BigInteger, nullable=False),
    )


def downgrade() -> None:
    for name in ("table_stats", "backfill_progress", "dml_batches", "change_logs", "objects_to_delete",
                 "sstables", "hummock_version", "relations", "schemas", "databases", "id_counters",
                 "system_params"):
        op.drop_table(name)
