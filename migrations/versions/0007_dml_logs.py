"""The frontends' DML logs (`frontend.dml_log`): per log, the newest record meta has recorded, written
in the transaction that records the record's batch.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-28
"""

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "dml_logs",
        sa.Column("log_id", sa.String(64), primary_key=True),
        sa.Column("recorded_seq", sa.BigInteger, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("dml_logs")
