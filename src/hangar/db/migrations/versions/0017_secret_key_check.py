"""The check of HANGAR_SECRET_KEY, and which releases the schema still serves

- `secret_key_checks`: one row, the fingerprint of the key the database's secrets are sealed
  with (hangar.db.key_check). Empty after this migration: the first process to start writes
  it, from the key that opens the newest live webhook secret.
- `schema_compatibility`: one row, the oldest migration head whose code still works on this
  schema (hangar.db.migrate.oldest_compatible_head), written by every upgrade to the head: a
  release older than the schema stays ready while it knows that head.

New tables only: the previous release never reads them, and nothing is locked or rewritten
(an expand step: `oldest_compatible` below). The way back drops them.

Revision ID: 0017
Revises: 0016
"""

import sqlalchemy as sa
from alembic import op

revision: str = "0017"
down_revision: str | None = "0016"
# The oldest head whose code works on this schema: 0016's (1.5.0), which reads neither table.
oldest_compatible = "0016"


def upgrade() -> None:
    op.create_table(
        "secret_key_checks",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("fingerprint", sa.String(length=64), nullable=False),
        sa.Column("set_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_secret_key_checks")),
    )
    op.create_table(
        "schema_compatibility",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("oldest_head", sa.String(length=32), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_schema_compatibility")),
    )


def downgrade() -> None:
    op.drop_table("schema_compatibility")
    op.drop_table("secret_key_checks")
