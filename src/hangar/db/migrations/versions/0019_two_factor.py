"""Two-factor sign-in: authenticators, recovery codes, sign-in challenges, and the
organization setting that requires it of admins

- `two_factor`: one row per account that began enrolling (hangar.auth.two_factor).
- `recovery_codes`: ten per enrolled account, SHA-256 only.
- `sign_in_challenges`: a sign-in between its password and its code, one per account.
- `organizations.require_two_factor`: false for every existing organization (a constant
  default: no table rewrite on PostgreSQL 11 and later).

An expand step: 0016's code (1.5.0) reads none of it. The way back drops it all (every
account signs in with its password alone again).

Revision ID: 0019
Revises: 0018
"""

import sqlalchemy as sa
from alembic import op

revision: str = "0019"
down_revision: str | None = "0018"
oldest_compatible = "0016"


def upgrade() -> None:
    op.create_table(
        "two_factor",
        sa.Column("user_id", sa.Uuid(), nullable=False),
        sa.Column("secret_encrypted", sa.String(length=300), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("confirmed_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_step", sa.BigInteger(), nullable=True),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name=op.f("fk_two_factor_user_id_users")
        ),
        sa.PrimaryKeyConstraint("user_id", name=op.f("pk_two_factor")),
    )
    op.create_table(
        "recovery_codes",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("user_id", sa.Uuid(), nullable=False),
        sa.Column("code_hash", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("used_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name=op.f("fk_recovery_codes_user_id_users")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_recovery_codes")),
    )
    op.create_index(op.f("ix_recovery_codes_user_id"), "recovery_codes", ["user_id"], unique=False)
    op.create_table(
        "sign_in_challenges",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("user_id", sa.Uuid(), nullable=False),
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name=op.f("fk_sign_in_challenges_user_id_users")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_sign_in_challenges")),
        sa.UniqueConstraint("token_hash", name=op.f("uq_sign_in_challenges_token_hash")),
        sa.UniqueConstraint("user_id", name=op.f("uq_sign_in_challenges_user_id")),
    )
    op.add_column(
        "organizations",
        sa.Column("require_two_factor", sa.Boolean(), nullable=False, server_default=sa.false()),
    )


def downgrade() -> None:
    # SQLite drops a column in place since 3.35, no table copy.
    op.drop_column("organizations", "require_two_factor")
    op.drop_table("sign_in_challenges")
    op.drop_index(op.f("ix_recovery_codes_user_id"), table_name="recovery_codes")
    op.drop_table("recovery_codes")
    op.drop_table("two_factor")
