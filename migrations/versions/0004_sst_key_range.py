"""SSTs record their key range (memcomparable keys of the first and last row), for leveled
compaction by key range; empty for SSTs written before.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-25
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("sstables") as batch:
        batch.add_column(sa.Column("min_key", sa.LargeBinary, nullable=False, server_default=sa.text("''")))
        batch.add_column(sa.Column("max_key", sa.LargeBinary, nullable=False, server_default=sa.text("''")))


def downgrade() -> None:
    with op.batch_alter_table("sstables") as batch:
        batch.drop_column("max_key")
        batch.drop_column("min_key")
