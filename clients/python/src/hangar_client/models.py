"""The API's resources as frozen dataclasses, field for field as the service spec lists them.

Ids are `str`: the spec promises strings and no format. Timestamps are timezone-aware
`datetime` (UTC), date-only fields `date`. Status-like fields are typed with the documented
values (`Literal`) but hold whatever string arrives, so a value added later does not crash.
Unknown keys are ignored.

The filters of the listing operations are TypedDicts, declared once for the operation and both
clients' `**filters` (and held to the OpenAPI document's query parameters like the models).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import date, datetime
from typing import Any, Literal, TypedDict

from hangar_client import _wire
from hangar_client._decode import OFF_WIRE, decode

ActivityType = Literal["dual_training", "solo", "ground", "checkride", "flight_review", "checkout"]
ReservationStatus = Literal["confirmed", "standby", "completed", "cancelled", "no_show", "expired"]
Severity = Literal["minor", "major", "grounding"]
SquawkStatus = Literal["open", "in_progress", "resolved", "deferred"]
MaintenanceEventType = Literal["100hr", "annual", "oil_change", "ad", "other"]
WorkOrderStatus = Literal["open", "in_progress", "completed", "cancelled"]


class ReservationFilters(TypedDict, total=False):
    """The filters of `reservations_page` and `reservations`, as keyword arguments; one left
    out (or None) does not filter."""

    aircraft_id: str | None
    pilot_id: str | None
    status: ReservationStatus | None
    start_after: datetime | None
    start_before: datetime | None


class SquawkFilters(TypedDict, total=False):
    """The filters of `squawks`, as keyword arguments; one left out (or None) does not
    filter."""

    status: SquawkStatus | None
    aircraft_id: str | None
    is_grounding: bool | None


@dataclass(frozen=True)
class Reservation:
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


@dataclass(frozen=True)
class ReservationPage:
    items: tuple[Reservation, ...]
    next_cursor: str | None  # pass back as `after`, with the same filters

    @classmethod
    def from_json(cls, body: Any) -> ReservationPage:
        head = decode(_PageHead, body)
        items = _wire.field(_wire.obj(body), "items")
        if not isinstance(items, list):
            raise _wire.InvalidPayload("items is not a list")
        return cls(tuple(decode(Reservation, item) for item in items), head.next_cursor)


@dataclass(frozen=True)
class _PageHead:
    next_cursor: str | None


@dataclass(frozen=True)
class Aircraft:
    id: str
    tail_number: str
    aircraft_type: str
    display_name: str | None
    is_active: bool
    hobbs_current: float | None
    tach_current: float | None
    annual_due_date: date | None
    last_100hr_hobbs: float | None


@dataclass(frozen=True)
class Squawk:
    id: str
    aircraft_id: str
    description: str
    severity: Severity
    status: SquawkStatus
    is_grounding: bool
    created_at: datetime | None
    resolved_at: datetime | None


@dataclass(frozen=True)
class Contact:
    """A member's contact fields: sent only to a key that also carries read:members.full."""

    email: str
    first_name: str
    last_name: str
    phone: str | None


@dataclass(frozen=True)
class Member:
    user_id: str
    role_id: str | None
    role_name: str | None
    status: str
    is_discovery: bool
    joined_at: datetime | None
    # None when the key lacks read:members.full (the API then omits the four keys).
    contact: Contact | None = field(default=None, metadata=OFF_WIRE)

    @classmethod
    def from_json(cls, body: Any) -> Member:
        member = decode(cls, body)
        if "email" not in body:
            return member
        return replace(member, contact=decode(Contact, body))


@dataclass(frozen=True)
class MaintenanceLog:
    id: str
    aircraft_id: str
    event_type: MaintenanceEventType
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
    work_performed: str  # the first 1000 characters


@dataclass(frozen=True)
class WorkOrder:
    id: str
    aircraft_id: str
    title: str | None
    work_type: str | None
    status: WorkOrderStatus
    ap_signer_id: str | None
    ia_signer_id: str | None
    created_at: datetime | None
    completed_at: datetime | None
