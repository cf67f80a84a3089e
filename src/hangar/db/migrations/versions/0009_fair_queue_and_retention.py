"""fair delivery queue and retention: the indexes they read by

- `ix_webhook_deliveries_queue`: each subscription's pending deliveries, oldest due first. The
  claim walks it to find the subscriptions with due work and takes a few of each in turn. It
  replaces `ix_webhook_deliveries_due` (pending deliveries by due time alone): with both, the
  planner, misjudging how many deliveries are due beside millions of finished ones, read a
  subscription's four oldest through the old one, every due delivery of every subscription
  (123 ms instead of 5 for a claim of 50 among 20,000 due, under 5 million finished).
- `ix_webhook_deliveries_leased`: each subscription's leased deliveries (attempts in flight,
  or leases a dead worker left behind), counted against its cap at every claim. It holds only
  leased rows, so it stays as small as the number of attempts under way.
- `ix_webhook_deliveries_finished`, `ix_webhook_deliveries_event_id`, `ix_events_created_at`,
  `ix_sessions_expires_at`, `ix_invitations_expires_at`: retention deletes the oldest rows in
  small batches, each found by an index rather than a table scan (an event is deleted only
  when no delivery refers to it, which the event_id index answers).

On PostgreSQL the indexes are built CONCURRENTLY, outside the migration's transaction, so an
install with a long history keeps recording events and delivering while they build.

Revision ID: 0009
Revises: 0008
"""

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"

PENDING = sa.text("status = 'pending'")
LEASED = sa.text("status = 'pending' AND lease_until IS NOT NULL")
FINISHED = sa.text("status <> 'pending'")

# (name, table, columns, partial predicate or None)
INDEXES: tuple[tuple[str, str, list[str], sa.TextClause | None], ...] = (
    (
        "ix_webhook_deliveries_queue",
        "webhook_deliveries",
        ["subscription_id", "next_attempt_at", "id"],
        PENDING,
    ),
    (
        "ix_webhook_deliveries_leased",
        "webhook_deliveries",
        ["subscription_id", "lease_until"],
        LEASED,
    ),
    ("ix_webhook_deliveries_finished", "webhook_deliveries", ["completed_at"], FINISHED),
    ("ix_webhook_deliveries_event_id", "webhook_deliveries", ["event_id"], None),
    ("ix_events_created_at", "events", ["created_at"], None),
    ("ix_sessions_expires_at", "sessions", ["expires_at"], None),
    ("ix_invitations_expires_at", "invitations", ["expires_at"], None),
)


REPLACED = ("ix_webhook_deliveries_due", "webhook_deliveries", ["next_attempt_at"], PENDING)


def _create(name: str, table: str, columns: list[str], where: sa.TextClause | None) -> None:
    op.create_index(
        name,
        table,
        columns,
        postgresql_where=where,
        sqlite_where=where,
        postgresql_concurrently=True,
    )


def upgrade() -> None:
    with op.get_context().autocommit_block():
        for index in INDEXES:
            _create(*index)
        op.drop_index(REPLACED[0], table_name=REPLACED[1], postgresql_concurrently=True)


def downgrade() -> None:
    with op.get_context().autocommit_block():
        _create(*REPLACED)
        for name, table, _, _ in reversed(INDEXES):
            op.drop_index(name, table_name=table, postgresql_concurrently=True)
