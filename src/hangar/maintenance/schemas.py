"""Maintenance log entries and work orders, as the public API and its OpenAPI description
show them.

The single list of the resource's public fields: the queries select exactly these names.
Open (extra keys allowed: `hangar.kit.schemas.Open`), as the spec's versioning asks.
"""

from __future__ import annotations

from datetime import date, datetime

from pydantic import Field

from hangar.kit.schemas import Open
from hangar.maintenance.models import EventType, WorkOrderStatus


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
