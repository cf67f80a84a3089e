"""memberships hold each organization's own record of a person; invitations

Names and phone move from `users` (the person's account, shared by every organization) to
`memberships` (one organization's record of the person): each membership takes a copy of its
user's values, then `users` drops them. Statuses are left as they are, so today's members stay
active. `invitations` holds the links that turn a pending membership into an active one.

Revision ID: 0005
Revises: 0004
"""

from typing import Any

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"

CONTACT = ("first_name", "last_name", "phone")


def _add_contact_columns(table: str) -> None:
    # The server default fills the NOT NULL columns of existing rows; it is dropped once the
    # values are copied, as the application always writes them.
    with op.batch_alter_table(table) as batch:
        batch.add_column(
            sa.Column("first_name", sa.String(length=100), nullable=False, server_default="")
        )
        batch.add_column(
            sa.Column("last_name", sa.String(length=100), nullable=False, server_default="")
        )
        batch.add_column(sa.Column("phone", sa.String(length=40), nullable=True))


def _drop_server_defaults(table: str) -> None:
    with op.batch_alter_table(table) as batch:
        for name in ("first_name", "last_name"):
            batch.alter_column(
                name,
                existing_type=sa.String(length=100),
                existing_nullable=False,
                server_default=None,
            )


def _drop_contact_columns(table: str) -> None:
    with op.batch_alter_table(table) as batch:
        for name in CONTACT:
            batch.drop_column(name)


def _or_blank(name: str, value: sa.ScalarSelect[Any]) -> sa.ColumnElement[Any]:
    # Names are NOT NULL: a row with nothing to copy (a user without memberships, on the way
    # down) gets an empty name; phone stays NULL.
    return value if name == "phone" else sa.func.coalesce(value, "")


def _table(name: str, *columns: str) -> sa.TableClause:
    return sa.table(name, *(sa.column(c) for c in (*columns, *CONTACT)))


def _copy_contact(target: sa.TableClause, source: sa.Select[Any]) -> None:
    """Set each contact column of every `target` row from the row `source` picks for it.

    A correlated subquery per column: plain SQL that SQLite and PostgreSQL both run.
    """
    values = {
        name: _or_blank(
            name, source.with_only_columns(source.selected_columns[name]).scalar_subquery()
        )
        for name in CONTACT
    }
    op.execute(target.update().values(values))


def upgrade() -> None:
    _add_contact_columns("memberships")
    users = _table("users", "id")
    memberships = _table("memberships", "user_id")
    _copy_contact(memberships, sa.select(users).where(users.c.id == memberships.c.user_id))
    _drop_server_defaults("memberships")
    _drop_contact_columns("users")

    op.create_table(
        "invitations",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("membership_id", sa.Uuid(), nullable=False),
        sa.Column("org_id", sa.Uuid(), nullable=False),
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("accepted_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["membership_id"],
            ["memberships.id"],
            name=op.f("fk_invitations_membership_id_memberships"),
        ),
        sa.ForeignKeyConstraint(
            ["org_id"], ["organizations.id"], name=op.f("fk_invitations_org_id_organizations")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_invitations")),
        sa.UniqueConstraint("membership_id", name=op.f("uq_invitations_membership_id")),
        sa.UniqueConstraint("token_hash", name=op.f("uq_invitations_token_hash")),
    )
    with op.batch_alter_table("invitations") as batch:
        batch.create_index(batch.f("ix_invitations_org_id"), ["org_id"], unique=False)


def downgrade() -> None:
    """Back to one record per person. Where organizations recorded a person differently, the
    record of the person's earliest membership wins: the others are lost."""
    op.drop_table("invitations")
    _add_contact_columns("users")
    users = _table("users", "id")
    memberships = sa.table(
        "memberships",
        sa.column("id"),
        sa.column("user_id"),
        sa.column("joined_at"),
        *(sa.column(c) for c in CONTACT),
    )
    _copy_contact(
        users,
        sa.select(memberships)
        .where(memberships.c.user_id == users.c.id)
        .order_by(memberships.c.joined_at.is_(None), memberships.c.joined_at, memberships.c.id)
        .limit(1),
    )
    _drop_server_defaults("users")
    _drop_contact_columns("memberships")
