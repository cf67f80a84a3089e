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
from hangar_client.events import EventData, EventName, parse_data

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
        return cls(tuple(decode(Reservation, item) for item in _items(body)), head.next_cursor)


@dataclass(frozen=True)
class _PageHead:
    next_cursor: str | None


def _items(page: Any) -> list[Any]:
    items = _wire.field(_wire.obj(page), "items")
    if not _wire.is_list(items):
        raise _wire.InvalidPayload("items is not a list")
    return items


@dataclass(frozen=True)
class Event:
    """One item of the events API (`client.events`): something that happened in the
    organization, oldest first. `data` is typed as the webhook deliveries' is (the classes of
    `hangar_client.events`; `UnknownData` for an event this version does not know);
    `raw_data` is the same object as sent, byte for byte the `data` of the deliveries once
    serialised compactly (what `hangar-client listen` forwards)."""

    id: str  # the deliveries of this event carry it as X-Service-Event-Id
    event: EventName
    created_at: datetime
    data: EventData
    raw_data: dict[str, Any] = field(repr=False)

    @classmethod
    def from_json(cls, body: Any) -> Event:
        head = decode(_EventHead, body)
        raw = _wire.obj(_wire.field(body, "data"))
        return cls(head.id, head.event, head.created_at, parse_data(head.event, raw), dict(raw))


@dataclass(frozen=True)
class _EventHead:
    id: str
    event: EventName
    created_at: datetime


@dataclass(frozen=True)
class EventPage:
    """One page of the events API. `next_cursor` is a string on every page, the last one
    too: pass it back as `after` (with the same `event` and `created_after`) to get only what
    came after. Fewer items than the `limit` asked for means caught up for now."""

    items: tuple[Event, ...]
    next_cursor: str

    @classmethod
    def from_json(cls, body: Any) -> EventPage:
        cursor = _wire.string(_wire.field(_wire.obj(body), "next_cursor"))
        return cls(tuple(Event.from_json(item) for item in _items(body)), cursor)


@dataclass(frozen=True)
class CallingKey:
    """The key that made the call: its first 12 characters, its scopes and, once rotated
    out, when it stops working."""

    prefix: str
    scopes: tuple[str, ...]
    expires_at: datetime | None


@dataclass(frozen=True)
class KeyOrganization:
    """The organization a key belongs to. `id` is the `X-Service-Organization` header of its
    webhook deliveries."""

    id: str
    name: str
    key: CallingKey


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
