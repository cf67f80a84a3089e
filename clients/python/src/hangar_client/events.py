"""Webhook deliveries: the envelope, the `data` of each of the 13 events (and test.ping),
`parse_event`, and `parse_data`, which the events API's items share. Field lists are the
spec's Event catalogue; events that open with the same fields take them from one private
base, as the server's catalogue does (a subclass's fields follow its base's, so the spec's
order holds).

Verify the signature (`verify_signature`) on the raw bytes before parsing them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any, Literal

from hangar_client import _wire
from hangar_client._decode import decode

# The catalogue's names (test.ping is no event of the catalogue). A `str` at run time: a name
# added later arrives as it is.
EventName = Literal[
    "squawk.created",
    "squawk.resolved",
    "squawk.escalated",
    "reservation.created",
    "reservation.confirmed",
    "reservation.cancelled",
    "reservation.checked_in",
    "reservation.completed",
    "flight_session.completed",
    "aircraft.grounded",
    "aircraft.reactivated",
    "mel.created",
    "mel.expired",
]


@dataclass(frozen=True)
class _SquawkData:
    id: str
    aircraft_id: str
    description: str
    severity: str


@dataclass(frozen=True)
class SquawkCreated(_SquawkData):
    is_grounding: bool
    reported_by: str
    created_at: datetime


@dataclass(frozen=True)
class SquawkResolved(_SquawkData):
    is_grounding: bool
    resolved_by: str
    resolved_at: datetime


@dataclass(frozen=True)
class SquawkEscalated:
    id: str
    aircraft_id: str
    description: str
    severity: Literal["grounding"]


@dataclass(frozen=True)
class _ReservationPeople:
    id: str
    aircraft_id: str | None
    pilot_id: str | None
    instructor_id: str | None


@dataclass(frozen=True)
class _ReservationSlot(_ReservationPeople):
    start_time: datetime
    end_time: datetime
    activity_type: str


@dataclass(frozen=True)
class ReservationCreated(_ReservationSlot):
    """reservation.created, and reservation.confirmed (identical payloads)."""

    status: str
    is_backup: bool


@dataclass(frozen=True)
class ReservationCancelled(_ReservationSlot):
    cancellation_reason: str


@dataclass(frozen=True)
class ReservationCheckedIn(_ReservationPeople):
    checked_in_at: datetime
    forced: bool  # the check-in overrode a blocking issue


@dataclass(frozen=True)
class ReservationCompleted(_ReservationPeople):
    """reservation.completed, and flight_session.completed (byte-identical payloads)."""

    checkout_completed_at: datetime
    hobbs_out: float
    hobbs_in: float


@dataclass(frozen=True)
class AircraftGrounded:
    """Only `id` and `reason` are always present: branch on `reason`. With
    `admin_deactivate` the other three are set; with `mel_expired`, `tail_number` only."""

    id: str
    reason: Literal["admin_deactivate", "mel_expired"]
    tail_number: str | None = None
    aircraft_type: str | None = None
    is_active: bool | None = None


@dataclass(frozen=True)
class AircraftReactivated:
    id: str
    tail_number: str
    aircraft_type: str
    is_active: bool


@dataclass(frozen=True)
class _MelData:
    id: str
    aircraft_id: str
    item_description: str
    mel_category: Literal["a", "b", "c", "d"]


@dataclass(frozen=True)
class MelCreated(_MelData):
    deferral_date: date
    due_date: date


@dataclass(frozen=True)
class MelExpired(_MelData):
    due_date: date
    auto_grounded: bool


@dataclass(frozen=True)
class TestPing:
    """What the Test action in Org Settings delivers."""

    __test__ = False  # not a pytest test class, whatever its name
    message: str


@dataclass(frozen=True)
class UnknownData:
    """The data of an event this client version does not know (events are additive)."""

    raw: dict[str, Any]


EventData = (
    SquawkCreated
    | SquawkResolved
    | SquawkEscalated
    | ReservationCreated
    | ReservationCancelled
    | ReservationCheckedIn
    | ReservationCompleted
    | AircraftGrounded
    | AircraftReactivated
    | MelCreated
    | MelExpired
    | TestPing
    | UnknownData
)

EVENT_TYPES: dict[str, type[EventData]] = {
    "squawk.created": SquawkCreated,
    "squawk.resolved": SquawkResolved,
    "squawk.escalated": SquawkEscalated,
    "reservation.created": ReservationCreated,
    "reservation.confirmed": ReservationCreated,
    "reservation.cancelled": ReservationCancelled,
    "reservation.checked_in": ReservationCheckedIn,
    "reservation.completed": ReservationCompleted,
    "flight_session.completed": ReservationCompleted,
    "aircraft.grounded": AircraftGrounded,
    "aircraft.reactivated": AircraftReactivated,
    "mel.created": MelCreated,
    "mel.expired": MelExpired,
    "test.ping": TestPing,
}


@dataclass(frozen=True)
class WebhookEvent:
    event: str
    delivered_at: datetime
    data: EventData


def parse_event(raw_body: bytes | str) -> WebhookEvent:
    """The delivery's envelope and typed data. An event name this version does not know
    gives `UnknownData` rather than an error; a known event with a malformed payload raises
    `InvalidPayload` (a ValueError)."""
    try:
        body = _wire.obj(json.loads(raw_body))
    except json.JSONDecodeError as exc:
        raise _wire.InvalidPayload(f"not JSON: {exc}") from None
    name = _wire.string(_wire.field(body, "event"))
    delivered_at = _wire.timestamp(_wire.field(body, "delivered_at"))
    return WebhookEvent(name, delivered_at, parse_data(name, _wire.field(body, "data")))


def parse_data(name: str, data: Any) -> EventData:
    """The typed `data` of event `name`, as a delivery or the events API carries it:
    `UnknownData` for a name this version does not know, `InvalidPayload` for a known one
    whose payload is malformed."""
    raw = _wire.obj(data)
    kind = EVENT_TYPES.get(name)
    return decode(kind, raw) if kind else UnknownData(dict(raw))
