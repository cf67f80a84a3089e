"""event log positions: the order the events API pages in

- `events.position`: an event's place in its organization's log, given after its transaction
  committed (hangar/webhooks/events/event_log.py), so a reader paging by position never steps over
  an event that committed late. NULL until placed.
- `event_log_ends`: per organization, the last position given; its row is the lock that
  keeps two placers from interleaving.
- `ix_events_org_position` (unique) pages the log; `ix_events_unplaced` (partial) finds what
  is still to be placed.

The events already recorded are placed here, per organization in the order they were made
(created_at, then id), and each organization's end is set after them.

Revision ID: 0012
Revises: 0011
"""

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"

UNPLACED = sa.text("position IS NULL")


def upgrade() -> None:
    op.add_column("events", sa.Column("position", sa.BigInteger(), nullable=True))
    op.create_table(
        "event_log_ends",
        sa.Column("org_id", sa.Uuid(), nullable=False),
        sa.Column("last_position", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(
            ["org_id"], ["organizations.id"], name=op.f("fk_event_log_ends_org_id_organizations")
        ),
        sa.PrimaryKeyConstraint("org_id", name=op.f("pk_event_log_ends")),
    )
    op.execute(
        """
        UPDATE events SET position = placed.n
        FROM (
            SELECT id, ROW_NUMBER() OVER (PARTITION BY org_id ORDER BY created_at, id) AS n
            FROM events
        ) AS placed
        WHERE events.id = placed.id
        """
    )
    op.execute(
        """
        INSERT INTO event_log_ends (org_id, last_position)
        SELECT org_id, MAX(position) FROM events GROUP BY org_id
        """
    )
    op.create_index("ix_events_org_position", "events", ["org_id", "position"], unique=True)
    op.create_index(
        "ix_events_unplaced",
        "events",
        ["org_id"],
        postgresql_where=UNPLACED,
        sqlite_where=UNPLACED,
    )


def downgrade() -> None:
    op.drop_index("ix_events_unplaced", table_name="events")
    op.drop_index("ix_events_org_position", table_name="events")
    op.drop_table("event_log_ends")
    with op.batch_alter_table("events") as batch:  # SQLite rebuilds the table
        batch.drop_column("position")
