"""Snapshot backfill: per job, the snapshot epoch, the pinned upstream SSTs, and how far the job has
consumed the upstream's change log.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "snapshot_backfill",
        sa.Column("job_id", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("upstream_id", sa.Integer, nullable=False),
        sa.Column("snapshot_epoch", sa.BigInteger, nullable=False),
        sa.Column("consumed_epoch", sa.BigInteger, nullable=False),
        sa.Column("snapshot_done", sa.Boolean, nullable=False),
        sa.Column("unique_keys", sa.Boolean, nullable=False),
        sa.Column("total_rows", sa.BigInteger, nullable=False),
        sa.Column("ssts", sa.Text, nullable=False),
        sa.Column("splits", sa.Text, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("snapshot_backfill")
