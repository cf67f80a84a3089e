"""delivery log that explains, and Redeliver

Each attempt keeps its outcome's kind and detail (for the sentence the log shows), the
request headers as sent and the response's reason phrase and headers; attempts recorded
before keep NULL there and the log says what it can from their status and error. A
delivery gets `series_from` (0 for every existing one: the series that began at its first
attempt) and a table of redelivery requests.

Revision ID: 0008
Revises: 0007
"""

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"

ATTEMPT_COLUMNS = (
    sa.Column("outcome", sa.String(length=40), nullable=True),
    sa.Column("outcome_detail", sa.String(length=500), nullable=True),
    sa.Column("request_headers", sa.JSON(), nullable=True),
    sa.Column("response_reason", sa.String(length=500), nullable=True),
    sa.Column("response_headers", sa.JSON(), nullable=True),
)


def upgrade() -> None:
    with op.batch_alter_table("webhook_attempts") as batch:
        for column in ATTEMPT_COLUMNS:
            batch.add_column(column)
    with op.batch_alter_table("webhook_deliveries") as batch:
        batch.add_column(sa.Column("series_from", sa.Integer(), nullable=False, server_default="0"))
    op.create_table(
        "webhook_redeliveries",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("delivery_id", sa.Uuid(), nullable=False),
        sa.Column("requested_by", sa.Uuid(), nullable=False),
        sa.Column("requested_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("first_attempt", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["delivery_id"],
            ["webhook_deliveries.id"],
            name=op.f("fk_webhook_redeliveries_delivery_id_webhook_deliveries"),
        ),
        sa.ForeignKeyConstraint(
            ["requested_by"], ["users.id"], name=op.f("fk_webhook_redeliveries_requested_by_users")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_webhook_redeliveries")),
    )
    op.create_index(
        op.f("ix_webhook_redeliveries_delivery_id"),
        "webhook_redeliveries",
        ["delivery_id"],
        unique=False,
    )


def downgrade() -> None:
    op.drop_index(op.f("ix_webhook_redeliveries_delivery_id"), table_name="webhook_redeliveries")
    op.drop_table("webhook_redeliveries")
    with op.batch_alter_table("webhook_deliveries") as batch:
        batch.drop_column("series_from")
    with op.batch_alter_table("webhook_attempts") as batch:
        for column in reversed(ATTEMPT_COLUMNS):
            batch.drop_column(column.name)
