"""reservation changes: a count and a time per organization, the calendar feed's validators

One row per organization: how many times its reservations have changed, and when last. The
calendar feed answers conditional requests from it (ETag, Last-Modified) without reading its
500 events. Every existing organization starts at version 1, changed now: a calendar that
polled before this migration has no validator yet, so nothing it holds can be wrongly kept.

Revision ID: 0007
Revises: 0006
"""

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"

organizations = sa.table("organizations", sa.column("id", sa.Uuid()))


def upgrade() -> None:
    changes = op.create_table(
        "reservation_changes",
        sa.Column("org_id", sa.Uuid(), nullable=False),
        sa.Column("version", sa.BigInteger(), nullable=False),
        sa.Column("changed_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["org_id"],
            ["organizations.id"],
            name=op.f("fk_reservation_changes_org_id_organizations"),
        ),
        sa.PrimaryKeyConstraint("org_id", name=op.f("pk_reservation_changes")),
    )
    # CURRENT_TIMESTAMP is UTC on both databases (SQLite's as naive text, as hangar stores it).
    op.execute(
        changes.insert().from_select(
            ["org_id", "version", "changed_at"],
            sa.select(organizations.c.id, sa.literal(1), sa.func.current_timestamp()),
        )
    )


def downgrade() -> None:
    op.drop_table("reservation_changes")
