"""Maintenance records (maintenance.manage): log entries and work orders. No events fire.

Work orders move freely between `open` and `in_progress`; `completed` and `cancelled` are
final. Callers own the transaction.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Annotated

from pydantic import Field
from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncConnection

from hangar.fleet.service import require_aircraft
from hangar.kit.bodies import BodyDate, BodyId, RequestBody
from hangar.kit.errors import Conflict
from hangar.kit.params import AwareDateTime
from hangar.kit.rows import created, locked, moved, public
from hangar.maintenance.models import EventType, MaintenanceLog, WorkOrder, WorkOrderStatus
from hangar.maintenance.schemas import MaintenanceLogRow, WorkOrderRow
from hangar.orgs.actors import Actor
from hangar.orgs.commands import require_member

FINAL = ("completed", "cancelled")
Cert = Annotated[str | None, Field(max_length=40)]
Name = Annotated[str | None, Field(max_length=200)]
Hours = Annotated[float | None, Field(ge=0)]


class NewLogBody(RequestBody):
    aircraft_id: BodyId
    event_type: EventType
    event_date: BodyDate | None = None  # omitted: today (UTC)
    hobbs_at_event: Hours = None
    tach_at_event: Hours = None
    ap_cert_number: Cert = None
    ia_cert_number: Cert = None
    ia_name: Name = None
    ia_sign_off: str | None = Field(None, max_length=2000)
    return_to_service: bool | None = None
    performed_by_name: Name = None
    performed_by_cert_number: Cert = None
    performed_at: AwareDateTime | None = None
    last_100hr_hobbs: Hours = None
    annual_due_date: BodyDate | None = None
    work_performed: str = Field(min_length=1, max_length=100_000)


class WorkOrderFields(RequestBody):
    title: str | None = Field(None, max_length=300)
    work_type: str | None = Field(None, max_length=40)
    ap_signer_id: BodyId | None = None
    ia_signer_id: BodyId | None = None


class NewWorkOrderBody(WorkOrderFields):
    aircraft_id: BodyId


class WorkOrderPatch(WorkOrderFields):
    status: WorkOrderStatus


async def _check_signers(conn: AsyncConnection, actor: Actor, body: WorkOrderFields) -> None:
    for field in ("ap_signer_id", "ia_signer_id"):
        signer = getattr(body, field)
        if signer is not None:
            await require_member(conn, actor.org_id, signer, field)


async def create_log(
    conn: AsyncConnection, actor: Actor, body: NewLogBody, now: datetime
) -> MaintenanceLogRow:
    """A new entry, its text kept whole (only the public API cuts it), returned whole."""
    await require_aircraft(conn, actor.org_id, body.aircraft_id, "aircraft_id")
    values = body.model_dump() | {"event_date": body.event_date or now.astimezone(UTC).date()}
    return public(await created(conn, MaintenanceLog, actor.org_id, values, now), MaintenanceLogRow)


async def create_work_order(
    conn: AsyncConnection, actor: Actor, body: NewWorkOrderBody, now: datetime
) -> WorkOrderRow:
    await require_aircraft(conn, actor.org_id, body.aircraft_id, "aircraft_id")
    await _check_signers(conn, actor, body)
    values = body.model_dump() | {"status": "open"}
    return public(await created(conn, WorkOrder, actor.org_id, values, now), WorkOrderRow)


async def update_work_order(
    conn: AsyncConnection,
    actor: Actor,
    work_order_id: uuid.UUID,
    body: WorkOrderPatch,
    now: datetime,
) -> WorkOrderRow:
    """The new status plus whichever other fields the body names."""
    current = await locked(conn, WorkOrder, actor.org_id, work_order_id, "work order")
    if current["status"] in FINAL:
        raise Conflict(f"The work order is {current['status']}; it can no longer change")
    await _check_signers(conn, actor, body)
    values = body.model_dump(exclude_unset=True)
    if body.status == "completed":
        values["completed_at"] = now
    row = await moved(
        conn,
        update(WorkOrder)
        .where(WorkOrder.id == work_order_id, WorkOrder.status.not_in(FINAL))
        .values(values),
        "The work order was closed meanwhile",
    )
    return public(row, WorkOrderRow)
