"""Backfill progress per scan of a job (a join scans two upstreams, a self-join the same one twice):
the key becomes (job_id, scan_id, vnode).

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-22
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

COLUMNS = "job_id, upstream_id, vnode, position, finished, row_count"


def _table(name: str, with_scan: bool) -> None:
    cols = [sa.Column("job_id", sa.Integer, primary_key=True, autoincrement=False)]
    if with_scan:
        cols.append(sa.Column("scan_id", sa.Integer, primary_key=True, autoincrement=False))
        cols.append(sa.Column("upstream_id", sa.Integer, nullable=False))
    else:
        cols.append(sa.Column("upstream_id", sa.Integer, primary_key=True, autoincrement=False))
    cols += [sa.Column("vnode", sa.Integer, primary_key=True, autoincrement=False),
             sa.Column("position", sa.Text, nullable=True),
             sa.Column("finished", sa.Boolean, nullable=False),
             sa.Column("row_count", sa.BigInteger, nullable=False)]
    op.create_table(name, *cols)


def upgrade() -> None:
    _table("backfill_progress_next", with_scan=True)
    op.execute(f"INSERT INTO backfill_progress_next (scan_id, {COLUMNS}) SELECT 0, {COLUMNS} FROM backfill_progress")
    op.drop_table("backfill_progress")
    op.rename_table("backfill_progress_next", "backfill_progress")


def downgrade() -> None:
    _table("backfill_progress_prev", with_scan=False)
    op.execute(f"INSERT INTO backfill_progress_prev ({COLUMNS}) SELECT {COLUMNS} FROM backfill_progress "
               f"WHERE scan_id = 0")
    op.drop_table("backfill_progress")
    op.rename_table("backfill_progress_prev", "backfill_progress")
