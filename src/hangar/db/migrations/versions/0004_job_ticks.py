"""job ticks: one row per scheduled job and minute, so each tick runs once in a cluster

Revision ID: 0004
Revises: 0003
"""

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"


def upgrade() -> None:
    op.create_table(
        "job_ticks",
        sa.Column("job", sa.String(length=60), nullable=False),
        sa.Column("tick", sa.DateTime(timezone=True), nullable=False),
        sa.Column("ran_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("job", "tick", name="pk_job_ticks"),
    )


def downgrade() -> None:
    op.drop_table("job_ticks")
