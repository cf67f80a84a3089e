"""The schema the migrations build is the schema the models describe, on this run's database.

Migrations are written once and frozen; the models go on changing. Without this check a
model change that forgets its migration (or a migration script edited by mistake) is only
found when a query fails in production.
"""

from __future__ import annotations

from typing import Any

from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy.engine import Connection

from hangar.db.engine import make_engine
from hangar.db.migrate import upgrade_async
from hangar.wiring.tables import Base

# The public read path's newest-first indexes: partial and ordered (DESC, NULLS LAST on
# PostgreSQL), which the models do not describe, so only the migrations create them
# (0001's _read_path_indexes, 0003's delivery queue and log, 0009's fair queue and
# retention, 0010's finished deliveries of a subscription, 0016's recoveries still sending,
# 0020's searches of the delivery log by resource and by event).
MIGRATION_ONLY_INDEXES = {
    "ix_reservations_org_start_id",
    "ix_squawks_org_recent",
    "ix_maintenance_logs_org_recent",
    "ix_maintenance_logs_org_aircraft_recent",
    "ix_work_orders_org_recent",
    "ix_webhook_deliveries_subscription_recent",
    "ix_webhook_deliveries_queue",
    "ix_webhook_deliveries_leased",
    "ix_webhook_deliveries_finished",
    "ix_webhook_deliveries_subscription_finished",
    "ix_webhook_deliveries_recovering",
    "ix_webhook_deliveries_resource",
    "ix_webhook_deliveries_subscription_event",
}


def _differences(connection: Connection) -> list[Any]:
    context = MigrationContext.configure(
        connection, opts={"compare_type": True, "compare_server_default": True}
    )
    differences: list[Any] = compare_metadata(context, Base.metadata)
    return differences


def _index_name(difference: Any) -> str | None:
    if isinstance(difference, tuple) and difference[0] == "remove_index":
        return str(difference[1].name)
    return None


async def test_migrations_build_the_tables_the_models_describe(blank_database_url: str) -> None:
    await upgrade_async(blank_database_url)
    engine = make_engine(blank_database_url)
    try:
        async with engine.connect() as connection:
            differences = await connection.run_sync(_differences)
    finally:
        await engine.dispose()

    migration_only = {_index_name(d) for d in differences} & MIGRATION_ONLY_INDEXES
    assert migration_only == MIGRATION_ONLY_INDEXES
    assert [d for d in differences if _index_name(d) not in MIGRATION_ONLY_INDEXES] == []
