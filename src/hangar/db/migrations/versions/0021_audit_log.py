"""The audit log

- `audit_entries`: one row per admin action (hangar.audit), written in the action's own
  transaction. The actor's account id has no foreign key and the actor's email is kept as
  it was, so an entry outlives the account it names.
- `ix_audit_entries_org_id_at_id` (org_id, at, id): a page of one organization's log,
  newest first; `ix_audit_entries_at` (at): retention's oldest-first batches across every
  organization.

An expand step: a new table that the code before it neither reads nor writes (actions made
by such code, during a rolling upgrade, are not recorded). The way back drops the log.

Revision ID: 0021
Revises: 0020
"""

import sqlalchemy as sa
from alembic import op

revision: str = "0021"
down_revision: str | None = "0020"
oldest_compatible = "0016"


def upgrade() -> None:
    op.create_table(
        "audit_entries",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("org_id", sa.Uuid(), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("actor_kind", sa.String(length=10), nullable=False),
        sa.Column("actor_user_id", sa.Uuid(), nullable=True),
        sa.Column("actor_email", sa.String(length=320), nullable=True),
        sa.Column("client_address", sa.String(length=64), nullable=True),
        sa.Column("action", sa.String(length=40), nullable=False),
        sa.Column("target_type", sa.String(length=30), nullable=False),
        sa.Column("target_id", sa.String(length=64), nullable=False),
        sa.Column("details", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(
            ["org_id"], ["organizations.id"], name=op.f("fk_audit_entries_org_id_organizations")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_audit_entries")),
    )
    op.create_index(
        "ix_audit_entries_org_id_at_id", "audit_entries", ["org_id", "at", "id"], unique=False
    )
    op.create_index("ix_audit_entries_at", "audit_entries", ["at"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_audit_entries_at", table_name="audit_entries")
    op.drop_index("ix_audit_entries_org_id_at_id", table_name="audit_entries")
    op.drop_table("audit_entries")
