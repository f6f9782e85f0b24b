"""Users and privileges: the users table (attributes and a hashed password), the privileges granted
to them, and the owner of every database, schema and relation (root, id 1, for those created before).

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01
"""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

_OWNED = ("databases", "schemas", "relations")


def upgrade() -> None:
    op.create_table(
        "users",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("name", sa.String(255), nullable=False, unique=True),
        sa.Column("is_super", sa.Boolean, nullable=False),
        sa.Column("can_create_db", sa.Boolean, nullable=False),
        sa.Column("can_create_user", sa.Boolean, nullable=False),
        sa.Column("can_login", sa.Boolean, nullable=False),
        sa.Column("password", sa.Text, nullable=True),
    )
    op.create_table(
        "user_privileges",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("user_id", sa.Integer, nullable=False),
        sa.Column("object_id", sa.Integer, nullable=False),
        sa.Column("action", sa.String(32), nullable=False),
        sa.Column("granted_by", sa.Integer, nullable=False),
        sa.Column("with_grant_option", sa.Boolean, nullable=False),
        sa.Column("dependent_id", sa.Integer, nullable=True),
        sa.UniqueConstraint("user_id", "object_id", "action", "granted_by", name="uq_user_privileges_grant"),
    )
    op.create_index("ix_user_privileges_user_id", "user_privileges", ["user_id"])
    op.create_index("ix_user_privileges_object_id", "user_privileges", ["object_id"])
    for table in _OWNED:
        with op.batch_alter_table(table) as batch:
            batch.add_column(sa.Column("owner", sa.Integer, nullable=False, server_default=sa.text("1")))


def downgrade() -> None:
    for table in _OWNED:
        with op.batch_alter_table(table) as batch:
            batch.drop_column("owner")
    op.drop_index("ix_user_privileges_object_id", "user_privileges")
    op.drop_index("ix_user_privileges_user_id", "user_privileges")
    op.drop_table("user_privileges")
    op.drop_table("users")
