"""what the claim shares attempts by: a subscription's destination, and whether it times out

- `webhook_subscriptions.destination`: the host and port its URL delivers to (`host:port`,
  the host lower-cased ASCII, an IPv6 literal in brackets), written whenever the URL is;
  the claim caps the attempts in flight to one destination across every organization.
- `webhook_subscriptions.timing_out_since`: when its attempts began to time out, NULL once
  one is answered; such a subscription has one attempt in flight at a time.

Existing rows get their destination from their stored URL. The way back drops both.

Revision ID: 0015
Revises: 0014
"""

import contextlib
from urllib.parse import urlsplit

import sqlalchemy as sa
from alembic import op

revision: str = "0015"
down_revision: str | None = "0014"

COLUMNS = (
    sa.Column("destination", sa.String(300), nullable=False, server_default=sa.text("''")),
    sa.Column("timing_out_since", sa.DateTime(timezone=True), nullable=True),
)


def destination(url: str) -> str:
    """host:port of a stored URL, as hangar.webhooks.egress.url_parsing writes it for a new one."""
    parts = urlsplit(url.strip())
    host = parts.hostname or ""
    with contextlib.suppress(UnicodeError):  # else as it is: at worst, a destination of its own
        host = host.encode("idna").decode("ascii")
    if ":" in host:
        host = f"[{host}]"
    try:
        port = parts.port or 443
    except ValueError:
        port = 443
    return f"{host}:{port}"


def upgrade() -> None:
    with op.batch_alter_table("webhook_subscriptions") as batch:
        for column in COLUMNS:
            batch.add_column(column)
    subscriptions = sa.table(
        "webhook_subscriptions",
        sa.column("id", sa.Uuid()),
        sa.column("url", sa.String()),
        sa.column("destination", sa.String()),
    )
    conn = op.get_bind()
    for row in conn.execute(sa.select(subscriptions.c.id, subscriptions.c.url)).all():
        conn.execute(
            subscriptions.update()
            .where(subscriptions.c.id == row.id)
            .values(destination=destination(row.url))
        )


def downgrade() -> None:
    with op.batch_alter_table("webhook_subscriptions") as batch:  # SQLite rebuilds the table
        for column in reversed(COLUMNS):
            batch.drop_column(column.name)
