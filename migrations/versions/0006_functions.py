"""User-defined functions (``CREATE FUNCTION ... LANGUAGE javascript``): name, schema, argument names
and types, return type, language, body and owner. Types are stored as their SQL text, argument names
and types as JSON arrays (TEXT, as every JSON value of the meta store).

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-08
"""

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "functions",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("database_id", sa.Integer, nullable=False),
        sa.Column("schema_id", sa.Integer, nullable=False),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("arg_names", sa.Text, nullable=False),
        sa.Column("arg_types", sa.Text, nullable=False),
        sa.Column("return_type", sa.String(255), nullable=False),
        sa.Column("language", sa.String(32), nullable=False),
        sa.Column("body", sa.Text, nullable=False),
        sa.Column("owner", sa.Integer, nullable=False),
        sa.UniqueConstraint("schema_id", "name", name="uq_functions_schema_name"),
    )


def downgrade() -> None:
    op.drop_table("functions")
