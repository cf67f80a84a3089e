"""Reads of maintenance records for the public API: the 500 most recent of each kind."""

from __future__ import annotations

import functools
import uuid

from sqlalchemy import func

from hangar.db.reads import Read, ReadConnection
from hangar.kit.schemas import field_names
from hangar.kit.scoping import KeyContext, bound, rows, scoped
from hangar.maintenance.models import MaintenanceLog, WorkOrder
from hangar.maintenance.schemas import MaintenanceLog as MaintenanceLogOut
from hangar.maintenance.schemas import MaintenanceLogRow, WorkOrderRow
from hangar.maintenance.schemas import WorkOrder as WorkOrderOut

RECENT_LIMIT = 500
WORK_PERFORMED_LIMIT = 1000

# The full text stays in the database; the public API sends the first 1000 characters.
_LOG_COLUMNS = [
    func.substr(
        MaintenanceLog.work_performed,
        1,
        WORK_PERFORMED_LIMIT,
        type_=MaintenanceLog.work_performed.type,
    ).label("work_performed")
    if name == "work_performed"
    else getattr(MaintenanceLog, name)
    for name in field_names(MaintenanceLogOut)
]
_WORK_ORDER_COLUMNS = [getattr(WorkOrder, name) for name in field_names(WorkOrderOut)]


# Each built at its first request (once every column type is declared), one statement per
# combination of filters present, the values as bound parameters.


@functools.cache
def _logs(aircraft: bool) -> Read[MaintenanceLogRow]:
    stmt = scoped(MaintenanceLog, *_LOG_COLUMNS)
    if aircraft:
        stmt = stmt.where(
            MaintenanceLog.aircraft_id == bound("aircraft_id", MaintenanceLog.aircraft_id)
        )
    stmt = stmt.order_by(MaintenanceLog.event_date.desc().nulls_last(), MaintenanceLog.id.desc())
    return Read(stmt.limit(RECENT_LIMIT), MaintenanceLogRow)


@functools.cache
def _work_orders(status: bool) -> Read[WorkOrderRow]:
    stmt = scoped(WorkOrder, *_WORK_ORDER_COLUMNS)
    if status:
        stmt = stmt.where(WorkOrder.status == bound("status", WorkOrder.status))
    stmt = stmt.order_by(WorkOrder.created_at.desc().nulls_last(), WorkOrder.id.desc())
    return Read(stmt.limit(RECENT_LIMIT), WorkOrderRow)


async def logs(
    conn: ReadConnection, key: KeyContext, *, aircraft_id: uuid.UUID | None
) -> list[MaintenanceLogRow]:
    if aircraft_id is None:
        return await rows(conn, _logs(False), key)
    return await rows(conn, _logs(True), key, aircraft_id=aircraft_id)


async def work_orders(
    conn: ReadConnection, key: KeyContext, *, status: str | None
) -> list[WorkOrderRow]:
    if status is None:
        return await rows(conn, _work_orders(False), key)
    return await rows(conn, _work_orders(True), key, status=status)
