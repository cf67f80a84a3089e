"""Idempotency keys

- `idempotency_keys`: one row per (organization, account, `Idempotency-Key`) a management
  POST was sent with (hangar.idempotency): the request's fingerprint, "running" until the
  action's answer is kept ("done"), the answer's status and its headers and body sealed;
  kept a day, then pruned by the retention job.
- `ix_idempotency_keys_created_at` (created_at): retention's oldest-first batches across
  every organization.

An expand step: a new table that the code before it neither reads nor writes (requests
that code answers during a rolling upgrade ignore the header, as they always have). The
way back drops the keys: a POST sent again afterwards is done again.

Revision ID: 0022
Revises: 0021
"""

import sqlalchemy as sa
from alembic import op

revision: str = "0022"
down_revision: str | None = "0021"
oldest_compatible = "0016"


def upgrade() -> None:
    op.create_table(
        "idempotency_keys",
        sa.Column("org_id", sa.Uuid(), nullable=False),
        sa.Column("user_id", sa.Uuid(), nullable=False),
        sa.Column("key", sa.String(length=255), nullable=False),
        sa.Column("fingerprint", sa.String(length=64), nullable=False),
        sa.Column("state", sa.String(length=7), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("status", sa.Integer(), nullable=True),
        sa.Column("answer_sealed", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(
            ["org_id"], ["organizations.id"], name=op.f("fk_idempotency_keys_org_id_organizations")
        ),
        sa.PrimaryKeyConstraint("org_id", "user_id", "key", name=op.f("pk_idempotency_keys")),
    )
    op.create_index(
        "ix_idempotency_keys_created_at", "idempotency_keys", ["created_at"], unique=False
    )


def downgrade() -> None:
    op.drop_index("ix_idempotency_keys_created_at", table_name="idempotency_keys")
    op.drop_table("idempotency_keys")
