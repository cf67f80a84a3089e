"""The 13 event names and the exact `data` object of each (service-spec.md, Event catalogue).

Builders take the row as the command just wrote it and return exactly the spec's fields;
ids become strings, timestamps stay datetimes (serialized as UTC with Z by the outbox).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date
from typing import Any, Literal

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
ALL_EVENTS = "*"
TEST_PING = "test.ping"

Row = Mapping[str, Any]


def _id(value: Any) -> str | None:
    return None if value is None else str(value)


def _date(value: date | None) -> str | None:
    return None if value is None else value.isoformat()


# The key order of each payload is the spec's, and part of the bytes signed: the shared
# leading fields are spelled once, the rest follows in order.
def _squawk(s: Row, severity: str | None = None) -> dict[str, Any]:
    return {
        "id": _id(s["id"]),
        "aircraft_id": _id(s["aircraft_id"]),
        "description": s["description"],
        "severity": severity or s["severity"],
    }


def squawk_created(s: Row) -> dict[str, Any]:
    return {
        **_squawk(s),
        "is_grounding": bool(s["is_grounding"]),
        "reported_by": _id(s["reported_by"]),
        "created_at": s["created_at"],
    }


def squawk_resolved(s: Row) -> dict[str, Any]:
    return {
        **_squawk(s),
        "is_grounding": bool(s["is_grounding"]),
        "resolved_by": _id(s["resolved_by"]),
        "resolved_at": s["resolved_at"],
    }


def squawk_escalated(s: Row) -> dict[str, Any]:
    return _squawk(s, severity="grounding")


def _reservation_people(r: Row) -> dict[str, Any]:
    return {
        "id": _id(r["id"]),
        "aircraft_id": _id(r["aircraft_id"]),
        "pilot_id": _id(r["pilot_id"]),
        "instructor_id": _id(r["instructor_id"]),
    }


def _reservation_slot(r: Row) -> dict[str, Any]:
    return {
        **_reservation_people(r),
        "start_time": r["start_time"],
        "end_time": r["end_time"],
        "activity_type": r["activity_type"],
    }


def reservation_created(r: Row) -> dict[str, Any]:
    """Also the data of reservation.confirmed: the two carry identical payloads."""
    return {**_reservation_slot(r), "status": r["status"], "is_backup": bool(r["is_backup"])}


def reservation_cancelled(r: Row) -> dict[str, Any]:
    return {**_reservation_slot(r), "cancellation_reason": r["cancellation_reason"] or ""}


def reservation_checked_in(r: Row, *, forced: bool) -> dict[str, Any]:
    return {**_reservation_people(r), "checked_in_at": r["checked_in_at"], "forced": forced}


def reservation_completed(r: Row) -> dict[str, Any]:
    """Also the data of flight_session.completed, byte for byte."""
    return {
        **_reservation_people(r),
        "checkout_completed_at": r["completed_at"],
        "hobbs_out": float(r["hobbs_out"]),
        "hobbs_in": float(r["hobbs_in"]),
    }


def aircraft_grounded(
    a: Row, *, reason: Literal["admin_deactivate", "mel_expired"]
) -> dict[str, Any]:
    if reason == "mel_expired":
        return {"id": _id(a["id"]), "tail_number": a["tail_number"], "reason": reason}
    return {
        "id": _id(a["id"]),
        "tail_number": a["tail_number"],
        "aircraft_type": a["aircraft_type"],
        "is_active": False,
        "reason": reason,
    }


def aircraft_reactivated(a: Row) -> dict[str, Any]:
    return {
        "id": _id(a["id"]),
        "tail_number": a["tail_number"],
        "aircraft_type": a["aircraft_type"],
        "is_active": True,
    }


def _mel(m: Row) -> dict[str, Any]:
    return {
        "id": _id(m["id"]),
        "aircraft_id": _id(m["aircraft_id"]),
        "item_description": m["item_description"],
        "mel_category": m["mel_category"],
    }


def mel_created(m: Row) -> dict[str, Any]:
    return {
        **_mel(m),
        "deferral_date": _date(m["deferral_date"]),
        "due_date": _date(m["due_date"]),
    }


def mel_expired(m: Row, *, auto_grounded: bool) -> dict[str, Any]:
    return {**_mel(m), "due_date": _date(m["due_date"]), "auto_grounded": auto_grounded}


def ping(message: str) -> dict[str, Any]:
    return {"message": message}
