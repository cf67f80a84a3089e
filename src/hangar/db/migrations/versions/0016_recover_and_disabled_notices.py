"""Recover, and the notice that a subscription was disabled

- `webhook_recoveries`: each Recover an administrator asked for (who, when, since when, how
  many deliveries it queued), pruned by age like the delivery log.
- `webhook_deliveries.recovery_id`: the recovery that queued a delivery (or queued it again);
  NULL for every existing one. Not a foreign key, so SQLite adds the column in place instead
  of copying the table, and a recovery is pruned by age alone.
- `ix_webhook_deliveries_recovering` (recovery_id) WHERE status = 'pending' AND recovery_id IS
  NOT NULL: whether a recovery still has deliveries waiting (RECOVERY_RUNNING), from the few
  rows a running recovery has, whatever the table holds.
- `ix_events_org_created_at` (org_id, created_at, id): an organization's events from a time on,
  oldest first, which Recover reads, without walking every other organization's.
- `webhook_disabled_notices`: one row per subscription ever disabled, written in the
  transaction that disables it; the worker's `webhook-alerts` job mails the organization's
  admins and clears `due_at` (partial index: the few waiting).

The two indexes on the big tables are built CONCURRENTLY on PostgreSQL, as 0009's were, so
an install with a long history keeps recording events and delivering while they build. The
way back drops all of it; recovered deliveries stay, as ordinary ones.

Revision ID: 0016
Revises: 0015
"""

import sqlalchemy as sa
from alembic import op

revision: str = "0016"
down_revision: str | None = "0015"

RECOVERING = sa.text("status = 'pending' AND recovery_id IS NOT NULL")
DUE = sa.text("due_at IS NOT NULL")


def upgrade() -> None:
    op.create_table(
        "webhook_recoveries",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("org_id", sa.Uuid(), nullable=False),
        sa.Column("subscription_id", sa.Uuid(), nullable=False),
        sa.Column("requested_by", sa.Uuid(), nullable=False),
        sa.Column("requested_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("since", sa.DateTime(timezone=True), nullable=False),
        sa.Column("deliveries", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["org_id"],
            ["organizations.id"],
            name=op.f("fk_webhook_recoveries_org_id_organizations"),
        ),
        sa.ForeignKeyConstraint(
            ["subscription_id"],
            ["webhook_subscriptions.id"],
            name=op.f("fk_webhook_recoveries_subscription_id_webhook_subscriptions"),
        ),
        sa.ForeignKeyConstraint(
            ["requested_by"], ["users.id"], name=op.f("fk_webhook_recoveries_requested_by_users")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_webhook_recoveries")),
    )
    op.create_index(
        op.f("ix_webhook_recoveries_requested_at"), "webhook_recoveries", ["requested_at"]
    )
    op.create_index(
        op.f("ix_webhook_recoveries_subscription_id_requested_at"),
        "webhook_recoveries",
        ["subscription_id", "requested_at"],
    )
    op.create_table(
        "webhook_disabled_notices",
        sa.Column("subscription_id", sa.Uuid(), nullable=False),
        sa.Column("disabled_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("due_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("sent_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("failures", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("last_error", sa.String(length=500), nullable=True),
        sa.ForeignKeyConstraint(
            ["subscription_id"],
            ["webhook_subscriptions.id"],
            name=op.f("fk_webhook_disabled_notices_subscription_id_webhook_subscriptions"),
        ),
        sa.PrimaryKeyConstraint("subscription_id", name=op.f("pk_webhook_disabled_notices")),
    )
    op.create_index(
        "ix_webhook_disabled_notices_due_at",
        "webhook_disabled_notices",
        ["due_at"],
        postgresql_where=DUE,
        sqlite_where=DUE,
    )
    # Nullable and without a default: a change of the catalogue alone on both databases (no
    # table rewrite, no copy).
    op.add_column("webhook_deliveries", sa.Column("recovery_id", sa.Uuid(), nullable=True))
    with op.get_context().autocommit_block():
        op.create_index(
            "ix_webhook_deliveries_recovering",
            "webhook_deliveries",
            ["recovery_id"],
            postgresql_where=RECOVERING,
            sqlite_where=RECOVERING,
            postgresql_concurrently=True,
        )
        op.create_index(
            "ix_events_org_created_at",
            "events",
            ["org_id", "created_at", "id"],
            postgresql_concurrently=True,
        )


def downgrade() -> None:
    with op.get_context().autocommit_block():
        op.drop_index("ix_events_org_created_at", table_name="events", postgresql_concurrently=True)
        op.drop_index(
            "ix_webhook_deliveries_recovering",
            table_name="webhook_deliveries",
            postgresql_concurrently=True,
        )
    # SQLite drops a column in place since 3.35 (its index is gone first), no table copy.
    op.drop_column("webhook_deliveries", "recovery_id")
    op.drop_index("ix_webhook_disabled_notices_due_at", table_name="webhook_disabled_notices")
    op.drop_table("webhook_disabled_notices")
    op.drop_index(
        op.f("ix_webhook_recoveries_subscription_id_requested_at"), table_name="webhook_recoveries"
    )
    op.drop_index(op.f("ix_webhook_recoveries_requested_at"), table_name="webhook_recoveries")
    op.drop_table("webhook_recoveries")
