"""The 13 event names and the exact `data` object of each (service-spec.md, Event catalogue).

Builders take the row as the command just wrote it and return exactly the spec's fields;
ids become strings, timestamps stay datetimes (serialized as UTC with Z by the outbox).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date, datetime
from typing import Any, Literal, TypedDict, overload

from hangar.kit.errors import ApiError

SQUAWK_CREATED = "squawk.created"
SQUAWK_RESOLVED = "squawk.resolved"
SQUAWK_ESCALATED = "squawk.escalated"
RESERVATION_CREATED = "reservation.created"
RESERVATION_CONFIRMED = "reservation.confirmed"
RESERVATION_CANCELLED = "reservation.cancelled"
RESERVATION_CHECKED_IN = "reservation.checked_in"
RESERVATION_COMPLETED = "reservation.completed"
FLIGHT_SESSION_COMPLETED = "flight_session.completed"
AIRCRAFT_GROUNDED = "aircraft.grounded"
AIRCRAFT_REACTIVATED = "aircraft.reactivated"
MEL_CREATED = "mel.created"
MEL_EXPIRED = "mel.expired"

EVENT_NAMES: tuple[str, ...] = (
    SQUAWK_CREATED,
    SQUAWK_RESOLVED,
    SQUAWK_ESCALATED,
    RESERVATION_CREATED,
    RESERVATION_CONFIRMED,
    RESERVATION_CANCELLED,
    RESERVATION_CHECKED_IN,
    RESERVATION_COMPLETED,
    FLIGHT_SESSION_COMPLETED,
    AIRCRAFT_GROUNDED,
    AIRCRAFT_REACTIVATED,
    MEL_CREATED,
    MEL_EXPIRED,
)
# The scope that reads what each event concerns: the events API returns an event only to a
# key that holds it besides read:events, so a key never reads through /events what the
# operation it concerns would refuse it (a flight session completes a reservation).
READ_SCOPE: dict[str, str] = {
    SQUAWK_CREATED: "read:squawks",
    SQUAWK_RESOLVED: "read:squawks",
    SQUAWK_ESCALATED: "read:squawks",
    RESERVATION_CREATED: "read:reservations",
    RESERVATION_CONFIRMED: "read:reservations",
    RESERVATION_CANCELLED: "read:reservations",
    RESERVATION_CHECKED_IN: "read:reservations",
    RESERVATION_COMPLETED: "read:reservations",
    FLIGHT_SESSION_COMPLETED: "read:reservations",
    AIRCRAFT_GROUNDED: "read:aircraft",
    AIRCRAFT_REACTIVATED: "read:aircraft",
    MEL_CREATED: "read:maintenance",
    MEL_EXPIRED: "read:maintenance",
}
ALL_EVENTS = "*"
TEST_PING = "test.ping"

Row = Mapping[str, Any]


def unknown_event(
    name: str, loc: list[str], *, what: str = "an event name of the catalogue"
) -> ApiError:
    """The 422 UNKNOWN_EVENT for `name`, given where it was read (`loc`, as validation errors
    say it) and what it should have been."""
    message = f"{name!r} is not {what}"
    return ApiError(
        422, "UNKNOWN_EVENT", f"Unknown event: {message}", [{"loc": loc, "msg": message}]
    )


# The `data` of each event, as the spec's Event catalogue lists it. Keys in the spec's order:
# a TypedDict that extends another lists the base's keys first, as the builders write them.
# Timestamps are datetimes here; the outbox serializes them (UTC, Z).


class SquawkData(TypedDict):
    id: str
    aircraft_id: str
    description: str
    severity: str


class SquawkCreated(SquawkData):
    is_grounding: bool
    reported_by: str | None
    created_at: datetime


class SquawkResolved(SquawkData):
    is_grounding: bool
    resolved_by: str | None
    resolved_at: datetime | None


class ReservationPeople(TypedDict):
    id: str
    aircraft_id: str | None
    pilot_id: str | None
    instructor_id: str | None


class ReservationSlot(ReservationPeople):
    start_time: datetime
    end_time: datetime
    activity_type: str


class ReservationCreated(ReservationSlot):
    status: str
    is_backup: bool


class ReservationCancelled(ReservationSlot):
    cancellation_reason: str


class ReservationCheckedIn(ReservationPeople):
    checked_in_at: datetime
    forced: bool


class ReservationCompleted(ReservationPeople):
    checkout_completed_at: datetime
    hobbs_out: float
    hobbs_in: float


class AircraftGroundedByJob(TypedDict):
    id: str
    tail_number: str
    reason: Literal["mel_expired"]


class AircraftState(TypedDict):
    id: str
    tail_number: str
    aircraft_type: str
    is_active: bool


class AircraftGrounded(AircraftState):
    reason: Literal["admin_deactivate"]


class MelData(TypedDict):
    id: str
    aircraft_id: str
    item_description: str
    mel_category: str


class MelCreated(MelData):
    deferral_date: str | None
    due_date: str | None


class MelExpired(MelData):
    due_date: str | None
    auto_grounded: bool


class Ping(TypedDict):
    message: str


EventData = (
    SquawkData
    | SquawkCreated
    | SquawkResolved
    | ReservationCreated
    | ReservationCancelled
    | ReservationCheckedIn
    | ReservationCompleted
    | AircraftGrounded
    | AircraftGroundedByJob
    | AircraftState
    | MelCreated
    | MelExpired
    | Ping
)


def _id(value: Any) -> str:
    return str(value)


def _opt_id(value: Any) -> str | None:
    return None if value is None else str(value)


def _date(value: date | None) -> str | None:
    return None if value is None else value.isoformat()


# The key order of each payload is the spec's, and part of the bytes signed: the shared
# leading fields are spelled once, the rest follows in order.
def _squawk(s: Row, severity: str | None = None) -> SquawkData:
    return {
        "id": _id(s["id"]),
        "aircraft_id": _id(s["aircraft_id"]),
        "description": s["description"],
        "severity": severity or s["severity"],
    }


def squawk_created(s: Row) -> SquawkCreated:
    return {
        **_squawk(s),
        "is_grounding": bool(s["is_grounding"]),
        "reported_by": _opt_id(s["reported_by"]),
        "created_at": s["created_at"],
    }


def squawk_resolved(s: Row) -> SquawkResolved:
    return {
        **_squawk(s),
        "is_grounding": bool(s["is_grounding"]),
        "resolved_by": _opt_id(s["resolved_by"]),
        "resolved_at": s["resolved_at"],
    }


def squawk_escalated(s: Row) -> SquawkData:
    return _squawk(s, severity="grounding")


def _reservation_people(r: Row) -> ReservationPeople:
    return {
        "id": _id(r["id"]),
        "aircraft_id": _opt_id(r["aircraft_id"]),
        "pilot_id": _opt_id(r["pilot_id"]),
        "instructor_id": _opt_id(r["instructor_id"]),
    }


def _reservation_slot(r: Row) -> ReservationSlot:
    return {
        **_reservation_people(r),
        "start_time": r["start_time"],
        "end_time": r["end_time"],
        "activity_type": r["activity_type"],
    }


def reservation_created(r: Row) -> ReservationCreated:
    """Also the data of reservation.confirmed: the two carry identical payloads."""
    return {**_reservation_slot(r), "status": r["status"], "is_backup": bool(r["is_backup"])}


def reservation_cancelled(r: Row) -> ReservationCancelled:
    return {**_reservation_slot(r), "cancellation_reason": r["cancellation_reason"] or ""}


def reservation_checked_in(r: Row, *, forced: bool) -> ReservationCheckedIn:
    return {**_reservation_people(r), "checked_in_at": r["checked_in_at"], "forced": forced}


def reservation_completed(r: Row) -> ReservationCompleted:
    """Also the data of flight_session.completed, byte for byte."""
    return {
        **_reservation_people(r),
        "checkout_completed_at": r["completed_at"],
        "hobbs_out": float(r["hobbs_out"]),
        "hobbs_in": float(r["hobbs_in"]),
    }


@overload
def aircraft_grounded(a: Row, *, reason: Literal["admin_deactivate"]) -> AircraftGrounded: ...
@overload
def aircraft_grounded(a: Row, *, reason: Literal["mel_expired"]) -> AircraftGroundedByJob: ...
def aircraft_grounded(
    a: Row, *, reason: Literal["admin_deactivate", "mel_expired"]
) -> AircraftGrounded | AircraftGroundedByJob:
    if reason == "mel_expired":
        return {"id": _id(a["id"]), "tail_number": a["tail_number"], "reason": reason}
    return {
        "id": _id(a["id"]),
        "tail_number": a["tail_number"],
        "aircraft_type": a["aircraft_type"],
        "is_active": False,
        "reason": reason,
    }


def aircraft_reactivated(a: Row) -> AircraftState:
    return {
        "id": _id(a["id"]),
        "tail_number": a["tail_number"],
        "aircraft_type": a["aircraft_type"],
        "is_active": True,
    }


def _mel(m: Row) -> MelData:
    return {
        "id": _id(m["id"]),
        "aircraft_id": _id(m["aircraft_id"]),
        "item_description": m["item_description"],
        "mel_category": m["mel_category"],
    }


def mel_created(m: Row) -> MelCreated:
    return {
        **_mel(m),
        "deferral_date": _date(m["deferral_date"]),
        "due_date": _date(m["due_date"]),
    }


def mel_expired(m: Row, *, auto_grounded: bool) -> MelExpired:
    return {**_mel(m), "due_date": _date(m["due_date"]), "auto_grounded": auto_grounded}


def ping(message: str) -> Ping:
    return {"message": message}
