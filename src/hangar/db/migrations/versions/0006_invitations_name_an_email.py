"""an invitation names an email, not an account

Each membership keeps the email its organization knows the person by (`memberships.email`,
copied from the account for every existing membership), and each invitation the email it
invites (`invitations.email`, copied from its membership). `users.email` becomes nullable: a
pending membership made from now on belongs to a placeholder user with no email and no
password, so its id says nothing about the email's account. The unique constraint on
`users.email` still holds for every non-NULL value (SQLite and PostgreSQL both let NULLs
repeat). Existing rows keep their ids and statuses.

Revision ID: 0006
Revises: 0005
"""

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"

EMAIL = sa.String(length=320)
INDEX = "ix_memberships_org_id_email"

users = sa.table(
    "users", sa.column("id", sa.Uuid()), sa.column("email", EMAIL), sa.column("password_hash")
)
memberships = sa.table(
    "memberships",
    sa.column("id", sa.Uuid()),
    sa.column("user_id", sa.Uuid()),
    sa.column("email", EMAIL),
)
invitations = sa.table(
    "invitations", sa.column("membership_id", sa.Uuid()), sa.column("email", EMAIL)
)


def _add_email(table: sa.TableClause, source: sa.ScalarSelect[str]) -> None:
    # Added nullable, filled by a correlated subquery (plain SQL both databases run), then
    # made NOT NULL: every row has a value to copy, as users.email is NOT NULL until below.
    with op.batch_alter_table(table.name) as batch:
        batch.add_column(sa.Column("email", EMAIL, nullable=True))
    op.execute(table.update().values(email=source))
    with op.batch_alter_table(table.name) as batch:
        batch.alter_column("email", existing_type=EMAIL, nullable=False)


def upgrade() -> None:
    _add_email(
        memberships,
        sa.select(users.c.email).where(users.c.id == memberships.c.user_id).scalar_subquery(),
    )
    _add_email(
        invitations,
        sa.select(memberships.c.email)
        .where(memberships.c.id == invitations.c.membership_id)
        .scalar_subquery(),
    )
    with op.batch_alter_table("memberships") as batch:
        batch.create_index(INDEX, ["org_id", "email"], unique=False)
    with op.batch_alter_table("users") as batch:
        batch.alter_column("email", existing_type=EMAIL, nullable=True)


def downgrade() -> None:
    """Back to every user having an email. A placeholder's membership moves to the account
    that has its email, if one does (the placeholder is deleted); otherwise the placeholder
    takes the email and becomes that account (the first, by id, where several organizations
    invited one new email; the others' memberships move to it)."""
    bind = op.get_bind()
    pending = bind.execute(
        sa.select(memberships.c.id, memberships.c.user_id, memberships.c.email)
        .select_from(memberships.join(users, users.c.id == memberships.c.user_id))
        .where(users.c.email.is_(None))
        .order_by(memberships.c.user_id)
    ).all()
    for membership_id, placeholder, email in pending:
        owner = bind.execute(sa.select(users.c.id).where(users.c.email == email)).scalar()
        if owner is None:
            bind.execute(users.update().where(users.c.id == placeholder).values(email=email))
            continue
        bind.execute(
            memberships.update().where(memberships.c.id == membership_id).values(user_id=owner)
        )
        bind.execute(users.delete().where(users.c.id == placeholder))
    # A placeholder always has its membership; should one have lost it, it is nobody's.
    bind.execute(
        users.delete().where(
            users.c.email.is_(None),
            ~sa.exists().where(memberships.c.user_id == users.c.id),
        )
    )
    with op.batch_alter_table("users") as batch:
        batch.alter_column("email", existing_type=EMAIL, nullable=False)
    with op.batch_alter_table("memberships") as batch:
        batch.drop_index(INDEX)
        batch.drop_column("email")
    with op.batch_alter_table("invitations") as batch:
        batch.drop_column("email")
