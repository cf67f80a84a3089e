"""initial schema: organizations, people, fleet, reservations, squawks, maintenance, API keys

Revision ID: 0001
Revises:
Create Date: 2026-11-22 07:43:22.232252
"""

from typing import Any

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None


def upgrade() -> None:
    op.create_table(
        "organizations",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_organizations")),
    )
    op.create_table(
        "users",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("email", sa.String(length=320), nullable=False),
        sa.Column("password_hash", sa.String(length=200), nullable=True),
        sa.Column("first_name", sa.String(length=100), nullable=False),
        sa.Column("last_name", sa.String(length=100), nullable=False),
        sa.Column("phone", sa.String(length=40), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_users")),
        sa.UniqueConstraint("email", name=op.f("uq_users_email")),
    )
    op.create_table(
        "aircraft",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("org_id", sa.Uuid(), nullable=False),
        sa.Column("tail_number", sa.String(length=20), nullable=False),
        sa.Column("aircraft_type", sa.String(length=100), nullable=False),
        sa.Column("display_name", sa.String(length=100), nullable=True),
        sa.Column("is_active", sa.Boolean(), nullable=False),
        sa.Column("hobbs_current", sa.Double(), nullable=True),
        sa.Column("tach_current", sa.Double(), nullable=True),
        sa.Column("annual_due_date", sa.Date(), nullable=True),
        sa.Column("last_100hr_hobbs", sa.Double(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("deleted_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["org_id"], ["organizations.id"], name=op.f("fk_aircraft_org_id_organizations")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_aircraft")),
    )
    with op.batch_alter_table("aircraft", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_aircraft_org_id"), ["org_id"], unique=False)

    op.create_table(
        "api_keys",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("org_id", sa.Uuid(), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("key_hash", sa.String(length=64), nullable=False),
        sa.Column("prefix", sa.String(length=12), nullable=False),
        sa.Column("scopes", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("created_by", sa.Uuid(), nullable=True),
        sa.Column("last_used_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("replaced_by", sa.Uuid(), nullable=True),
        sa.ForeignKeyConstraint(
            ["created_by"], ["users.id"], name=op.f("fk_api_keys_created_by_users")
        ),
        sa.ForeignKeyConstraint(
            ["org_id"], ["organizations.id"], name=op.f("fk_api_keys_org_id_organizations")
        ),
        sa.ForeignKeyConstraint(
            ["replaced_by"], ["api_keys.id"], name=op.f("fk_api_keys_replaced_by_api_keys")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_api_keys")),
        sa.UniqueConstraint("key_hash", name=op.f("uq_api_keys_key_hash")),
    )
    with op.batch_alter_table("api_keys", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_api_keys_org_id"), ["org_id"], unique=False)

    op.create_table(
        "roles",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("org_id", sa.Uuid(), nullable=False),
        sa.Column("name", sa.String(length=40), nullable=False),
        sa.ForeignKeyConstraint(
            ["org_id"], ["organizations.id"], name=op.f("fk_roles_org_id_organizations")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_roles")),
        sa.UniqueConstraint("org_id", "name", name=op.f("uq_roles_org_id_name")),
    )
    op.create_table(
        "maintenance_logs",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("org_id", sa.Uuid(), nullable=False),
        sa.Column("aircraft_id", sa.Uuid(), nullable=False),
        sa.Column("event_type", sa.String(length=20), nullable=False),
        sa.Column("event_date", sa.Date(), nullable=True),
        sa.Column("hobbs_at_event", sa.Double(), nullable=True),
        sa.Column("tach_at_event", sa.Double(), nullable=True),
        sa.Column("ap_cert_number", sa.String(length=40), nullable=True),
        sa.Column("ia_cert_number", sa.String(length=40), nullable=True),
        sa.Column("ia_name", sa.String(length=200), nullable=True),
        sa.Column("ia_sign_off", sa.String(length=2000), nullable=True),
        sa.Column("return_to_service", sa.Boolean(), nullable=True),
        sa.Column("performed_by_name", sa.String(length=200), nullable=True),
        sa.Column("performed_by_cert_number", sa.String(length=40), nullable=True),
        sa.Column("performed_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_100hr_hobbs", sa.Double(), nullable=True),
        sa.Column("annual_due_date", sa.Date(), nullable=True),
        sa.Column("work_performed", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("deleted_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["aircraft_id"], ["aircraft.id"], name=op.f("fk_maintenance_logs_aircraft_id_aircraft")
        ),
        sa.ForeignKeyConstraint(
            ["org_id"], ["organizations.id"], name=op.f("fk_maintenance_logs_org_id_organizations")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_maintenance_logs")),
    )
    op.create_table(
        "mel_items",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("org_id", sa.Uuid(), nullable=False),
        sa.Column("aircraft_id", sa.Uuid(), nullable=False),
        sa.Column("item_description", sa.String(length=2000), nullable=False),
        sa.Column("mel_category", sa.String(length=1), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("deferral_date", sa.Date(), nullable=False),
        sa.Column("due_date", sa.Date(), nullable=False),
        sa.Column("expired_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["aircraft_id"], ["aircraft.id"], name=op.f("fk_mel_items_aircraft_id_aircraft")
        ),
        sa.ForeignKeyConstraint(
            ["org_id"], ["organizations.id"], name=op.f("fk_mel_items_org_id_organizations")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_mel_items")),
    )
    with op.batch_alter_table("mel_items", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_mel_items_org_id"), ["org_id"], unique=False)

    op.create_table(
        "memberships",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("org_id", sa.Uuid(), nullable=False),
        sa.Column("user_id", sa.Uuid(), nullable=False),
        sa.Column("role_id", sa.Uuid(), nullable=True),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("is_discovery", sa.Boolean(), nullable=False),
        sa.Column("joined_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("deleted_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["org_id"], ["organizations.id"], name=op.f("fk_memberships_org_id_organizations")
        ),
        sa.ForeignKeyConstraint(
            ["role_id"], ["roles.id"], name=op.f("fk_memberships_role_id_roles")
        ),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name=op.f("fk_memberships_user_id_users")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_memberships")),
    )
    with op.batch_alter_table("memberships", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_memberships_org_id"), ["org_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_memberships_user_id"), ["user_id"], unique=False)

    op.create_table(
        "reservations",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("org_id", sa.Uuid(), nullable=False),
        sa.Column("aircraft_id", sa.Uuid(), nullable=True),
        sa.Column("pilot_id", sa.Uuid(), nullable=True),
        sa.Column("instructor_id", sa.Uuid(), nullable=True),
        sa.Column("activity_type", sa.String(length=20), nullable=False),
        sa.Column("start_time", sa.DateTime(timezone=True), nullable=True),
        sa.Column("end_time", sa.DateTime(timezone=True), nullable=True),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("is_backup", sa.Boolean(), nullable=False),
        sa.Column("checked_in_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("completed_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("cancellation_reason", sa.String(length=500), nullable=True),
        sa.Column("hobbs_out", sa.Double(), nullable=True),
        sa.Column("hobbs_in", sa.Double(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("deleted_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["aircraft_id"], ["aircraft.id"], name=op.f("fk_reservations_aircraft_id_aircraft")
        ),
        sa.ForeignKeyConstraint(
            ["instructor_id"], ["users.id"], name=op.f("fk_reservations_instructor_id_users")
        ),
        sa.ForeignKeyConstraint(
            ["org_id"], ["organizations.id"], name=op.f("fk_reservations_org_id_organizations")
        ),
        sa.ForeignKeyConstraint(
            ["pilot_id"], ["users.id"], name=op.f("fk_reservations_pilot_id_users")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_reservations")),
    )
    op.create_table(
        "squawks",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("org_id", sa.Uuid(), nullable=False),
        sa.Column("aircraft_id", sa.Uuid(), nullable=False),
        sa.Column("description", sa.String(length=4000), nullable=False),
        sa.Column("severity", sa.String(length=20), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("is_grounding", sa.Boolean(), nullable=False),
        sa.Column("reported_by", sa.Uuid(), nullable=True),
        sa.Column("resolved_by", sa.Uuid(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("resolved_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("deleted_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["aircraft_id"], ["aircraft.id"], name=op.f("fk_squawks_aircraft_id_aircraft")
        ),
        sa.ForeignKeyConstraint(
            ["org_id"], ["organizations.id"], name=op.f("fk_squawks_org_id_organizations")
        ),
        sa.ForeignKeyConstraint(
            ["reported_by"], ["users.id"], name=op.f("fk_squawks_reported_by_users")
        ),
        sa.ForeignKeyConstraint(
            ["resolved_by"], ["users.id"], name=op.f("fk_squawks_resolved_by_users")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_squawks")),
    )
    op.create_table(
        "work_orders",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("org_id", sa.Uuid(), nullable=False),
        sa.Column("aircraft_id", sa.Uuid(), nullable=False),
        sa.Column("title", sa.String(length=300), nullable=True),
        sa.Column("work_type", sa.String(length=40), nullable=True),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("ap_signer_id", sa.Uuid(), nullable=True),
        sa.Column("ia_signer_id", sa.Uuid(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("completed_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("deleted_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["aircraft_id"], ["aircraft.id"], name=op.f("fk_work_orders_aircraft_id_aircraft")
        ),
        sa.ForeignKeyConstraint(
            ["ap_signer_id"], ["users.id"], name=op.f("fk_work_orders_ap_signer_id_users")
        ),
        sa.ForeignKeyConstraint(
            ["ia_signer_id"], ["users.id"], name=op.f("fk_work_orders_ia_signer_id_users")
        ),
        sa.ForeignKeyConstraint(
            ["org_id"], ["organizations.id"], name=op.f("fk_work_orders_org_id_organizations")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_work_orders")),
    )

    _read_path_indexes()


def _read_path_indexes() -> None:
    """Indexes that serve the public API's newest-first reads, one per list.

    Each is partial on deleted_at IS NULL, as every public query is. On PostgreSQL the
    columns that may be null sort NULLS LAST to match the queries' order; SQLite already
    sorts nulls last in a descending column and has no syntax for saying so.
    """
    pg = op.get_bind().dialect.name == "postgresql"
    live = sa.text("deleted_at IS NULL")
    where: dict[str, Any] = {"postgresql_where": live, "sqlite_where": live}

    def newest_first(column: str, nullable: bool) -> sa.TextClause:
        return sa.text(f"{column} DESC NULLS LAST" if pg and nullable else f"{column} DESC")

    # Reservations are read in two keyset runs (dated, then undated), each by (start, id).
    op.create_index(
        "ix_reservations_org_start_id",
        "reservations",
        ["org_id", sa.text("start_time DESC"), sa.text("id DESC")],
        **where,
    )
    op.create_index(
        "ix_squawks_org_recent",
        "squawks",
        ["org_id", newest_first("created_at", True), sa.text("id DESC")],
        **where,
    )
    op.create_index(
        "ix_maintenance_logs_org_recent",
        "maintenance_logs",
        ["org_id", newest_first("event_date", True), sa.text("id DESC")],
        **where,
    )
    op.create_index(
        "ix_maintenance_logs_org_aircraft_recent",
        "maintenance_logs",
        ["org_id", "aircraft_id", newest_first("event_date", True), sa.text("id DESC")],
        **where,
    )
    op.create_index(
        "ix_work_orders_org_recent",
        "work_orders",
        ["org_id", newest_first("created_at", True), sa.text("id DESC")],
        **where,
    )


def downgrade() -> None:
    for name, table in (
        ("ix_work_orders_org_recent", "work_orders"),
        ("ix_maintenance_logs_org_aircraft_recent", "maintenance_logs"),
        ("ix_maintenance_logs_org_recent", "maintenance_logs"),
        ("ix_squawks_org_recent", "squawks"),
        ("ix_reservations_org_start_id", "reservations"),
    ):
        op.drop_index(name, table_name=table)
    op.drop_table("work_orders")
    op.drop_table("squawks")
    op.drop_table("reservations")
    with op.batch_alter_table("memberships", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_memberships_user_id"))
        batch_op.drop_index(batch_op.f("ix_memberships_org_id"))

    op.drop_table("memberships")
    with op.batch_alter_table("mel_items", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_mel_items_org_id"))

    op.drop_table("mel_items")
    op.drop_table("maintenance_logs")
    op.drop_table("roles")
    with op.batch_alter_table("api_keys", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_api_keys_org_id"))

    op.drop_table("api_keys")
    with op.batch_alter_table("aircraft", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_aircraft_org_id"))

    op.drop_table("aircraft")
    op.drop_table("users")
    op.drop_table("organizations")
