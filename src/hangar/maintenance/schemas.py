"""Maintenance log entries and work orders, as the public API shows them: the schemas and
their row types (hangar.kit.schemas says how the two go together)."""

from __future__ import annotations

import uuid
from datetime import date, datetime
from typing import TypedDict

from pydantic import Field

from hangar.kit.schemas import Open
from hangar.maintenance.models import EventType
from hangar.maintenance.models import WorkOrderStatus as WorkOrderStatus  # the read API's filter


class MaintenanceLog(Open):
    id: str
    aircraft_id: str
    event_type: EventType
    event_date: date | None
    hobbs_at_event: float | None
    tach_at_event: float | None
    ap_cert_number: str | None
    ia_cert_number: str | None
    ia_name: str | None
    ia_sign_off: str | None
    return_to_service: bool | None
    performed_by_name: str | None
    performed_by_cert_number: str | None
    performed_at: datetime | None
    last_100hr_hobbs: float | None
    annual_due_date: date | None
    work_performed: str = Field(description="The first 1000 characters")


class MaintenanceLogRow(TypedDict):
    """What the public read and the action return: `MaintenanceLog`'s fields, in its order
    (the read cuts work_performed; the action returns it whole)."""

    id: uuid.UUID
    aircraft_id: uuid.UUID
    event_type: EventType
    event_date: date | None
    hobbs_at_event: float | None
    tach_at_event: float | None
    ap_cert_number: str | None
    ia_cert_number: str | None
    ia_name: str | None
    ia_sign_off: str | None
    return_to_service: bool | None
    performed_by_name: str | None
    performed_by_cert_number: str | None
    performed_at: datetime | None
    last_100hr_hobbs: float | None
    annual_due_date: date | None
    work_performed: str


class WorkOrder(Open):
    id: str
    aircraft_id: str
    title: str | None
    work_type: str | None
    status: WorkOrderStatus
    ap_signer_id: str | None
    ia_signer_id: str | None
    created_at: datetime | None
    completed_at: datetime | None


class WorkOrderRow(TypedDict):
    """What the public read and the action return: `WorkOrder`'s fields, in its order."""

    id: uuid.UUID
    aircraft_id: uuid.UUID
    title: str | None
    work_type: str | None
    status: WorkOrderStatus
    ap_signer_id: uuid.UUID | None
    ia_signer_id: uuid.UUID | None
    created_at: datetime | None
    completed_at: datetime | None
