"""The check of HANGAR_SECRET_KEY

- `secret_key_checks`: one row, the fingerprint of the key the database's secrets are sealed
  with (hangar.db.key_check). Empty after this migration: the first process to start writes
  it, from the key that opens the newest live webhook secret.

A new table only: the previous release never reads it, and nothing is locked or rewritten.
The way back drops it.

Revision ID: 0017
Revises: 0016
"""

import sqlalchemy as sa
from alembic import op

revision: str = "0017"
down_revision: str | None = "0016"


def upgrade() -> None:
    op.create_table(
        "secret_key_checks",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("fingerprint", sa.String(length=64), nullable=False),
        sa.Column("set_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_secret_key_checks")),
    )


def downgrade() -> None:
    op.drop_table("secret_key_checks")
