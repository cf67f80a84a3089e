"""a webhook subscription's previous secret, for rotation with overlap

- `webhook_subscriptions.previous_secret_encrypted`: the secret a rotation replaced, sealed
  like `secret_encrypted` (Fernet, key from HANGAR_SECRET_KEY); NULL when none still signs
  or the secret was never rotated.
- `webhook_subscriptions.previous_secret_expires_at`: until when it also signs each
  delivery (`X-Service-Signature-Previous`, a second `v1,` in `webhook-signature`).

Both nullable, so every existing subscription reads as one never rotated; the way back drops
them, and with them any grace still running (deliveries are then signed with the current
secret alone).

Revision ID: 0013
Revises: 0012
"""

import sqlalchemy as sa
from alembic import op

revision: str = "0013"
down_revision: str | None = "0012"


COLUMNS = (
    sa.Column("previous_secret_encrypted", sa.Text(), nullable=True),
    sa.Column("previous_secret_expires_at", sa.DateTime(timezone=True), nullable=True),
)


def upgrade() -> None:
    with op.batch_alter_table("webhook_subscriptions") as batch:
        for column in COLUMNS:
            batch.add_column(column)


def downgrade() -> None:
    with op.batch_alter_table("webhook_subscriptions") as batch:  # SQLite rebuilds the table
        for column in reversed(COLUMNS):
            batch.drop_column(column.name)
