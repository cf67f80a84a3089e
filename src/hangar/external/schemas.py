"""The public resources, as the OpenAPI description shows them.

These models are the single list of each resource's public fields: the queries select
exactly these names. They stay open (extra keys allowed: `hangar.kit.schemas.Open`), as the
spec's versioning asks.
"""

from __future__ import annotations

from datetime import date, datetime

from pydantic import Field

from hangar.kit.schemas import Open
from hangar.maintenance.models import EventType as EventType
from hangar.maintenance.models import WorkOrderStatus as WorkOrderStatus
from hangar.reservations.models import ActivityType as ActivityType
from hangar.reservations.models import ReservationStatus as ReservationStatus
from hangar.squawks.models import Severity as Severity
from hangar.squawks.models import SquawkStatus as SquawkStatus


class Reservation(Open):
    id: str
    aircraft_id: str | None
    pilot_id: str | None
    instructor_id: str | None
    activity_type: ActivityType
    start_time: datetime | None
    end_time: datetime | None
    status: ReservationStatus
    checked_in_at: datetime | None
    completed_at: datetime | None


class ReservationPage(Open):
    items: list[Reservation]
    next_cursor: str | None = Field(
        description="Pass back as `after`, with the same filters, for the next page; "
        "non-null whenever a full page came back."
    )


class Aircraft(Open):
    id: str
    tail_number: str
    aircraft_type: str
    display_name: str | None
    is_active: bool = Field(description="false while the aircraft is grounded")
    hobbs_current: float | None
    tach_current: float | None
    annual_due_date: date | None
    last_100hr_hobbs: float | None


class Squawk(Open):
    id: str
    aircraft_id: str
    description: str
    severity: Severity
    status: SquawkStatus
    is_grounding: bool
    created_at: datetime | None
    resolved_at: datetime | None


_CONTACT = "Only when the key also carries read:members.full; otherwise the key is omitted"


class Member(Open):
    user_id: str
    role_id: str | None
    role_name: str | None
    status: str
    is_discovery: bool
    joined_at: datetime | None
    email: str = Field(None, description=_CONTACT)  # type: ignore[assignment]
    first_name: str = Field(None, description=_CONTACT)  # type: ignore[assignment]
    last_name: str = Field(None, description=_CONTACT)  # type: ignore[assignment]
    phone: str | None = Field(None, description=_CONTACT)


CONTACT_FIELDS = ("email", "first_name", "last_name", "phone")


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
