"""Reads of maintenance records for the public API: the 500 most recent of each kind."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import func
from sqlalchemy.ext.asyncio import AsyncConnection

from hangar.auth.apikey import KeyContext
from hangar.external.schemas import MaintenanceLog as MaintenanceLogOut
from hangar.external.schemas import WorkOrder as WorkOrderOut
from hangar.external.schemas import field_names
from hangar.external.scoping import as_dicts, visible
from hangar.maintenance.models import MaintenanceLog, WorkOrder

RECENT_LIMIT = 500
WORK_PERFORMED_LIMIT = 1000

# The full text stays in the database; the public API sends the first 1000 characters.
_LOG_COLUMNS = [
    func.substr(MaintenanceLog.work_performed, 1, WORK_PERFORMED_LIMIT).label("work_performed")
    if name == "work_performed"
    else getattr(MaintenanceLog, name)
    for name in field_names(MaintenanceLogOut)
]
_WORK_ORDER_COLUMNS = [getattr(WorkOrder, name) for name in field_names(WorkOrderOut)]


async def logs(
    conn: AsyncConnection, key: KeyContext, *, aircraft_id: uuid.UUID | None
) -> list[dict[str, Any]]:
    stmt = visible(MaintenanceLog, key, *_LOG_COLUMNS)
    if aircraft_id is not None:
        stmt = stmt.where(MaintenanceLog.aircraft_id == aircraft_id)
    stmt = stmt.order_by(MaintenanceLog.event_date.desc().nulls_last(), MaintenanceLog.id.desc())
    return as_dicts(await conn.execute(stmt.limit(RECENT_LIMIT)))


async def work_orders(
    conn: AsyncConnection, key: KeyContext, *, status: str | None
) -> list[dict[str, Any]]:
    stmt = visible(WorkOrder, key, *_WORK_ORDER_COLUMNS)
    if status is not None:
        stmt = stmt.where(WorkOrder.status == status)
    stmt = stmt.order_by(WorkOrder.created_at.desc().nulls_last(), WorkOrder.id.desc())
    return as_dicts(await conn.execute(stmt.limit(RECENT_LIMIT)))
