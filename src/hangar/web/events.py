"""The 13 events as integrators and administrators read them: when each fires, and an
example `data` object made by the very builders the outbox uses (webhooks/events/catalogue.py), so
the documented payloads cannot drift from what is sent."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime

import orjson

from hangar.kit.encoding import dumps
from hangar.webhooks.events import catalogue as c

_AIRCRAFT = {
    "id": "0196a1f2-7c3e-7a10-9d1e-3b2f4c5d6e7f",
    "tail_number": "N512SP",
    "aircraft_type": "Cessna 172S",
}
_RESERVATION = {
    "id": "0196a1f2-8d4f-7b21-8e2f-4c3a5d6e7f80",
    "aircraft_id": _AIRCRAFT["id"],
    "pilot_id": "0196a1f2-9e50-7c32-9f30-5d4b6e7f8091",
    "instructor_id": None,
    "start_time": datetime(2026, 5, 4, 14, 0, tzinfo=UTC),
    "end_time": datetime(2026, 5, 4, 16, 0, tzinfo=UTC),
    "activity_type": "dual_training",
    "status": "confirmed",
    "is_backup": False,
    "cancellation_reason": "Weather below minimums",
    "checked_in_at": datetime(2026, 5, 4, 13, 52, tzinfo=UTC),
    "completed_at": datetime(2026, 5, 4, 16, 7, tzinfo=UTC),
    "hobbs_out": 2841.3,
    "hobbs_in": 2843.1,
}
_SQUAWK = {
    "id": "0196a1f3-0a61-7d43-8a41-6e5c7f8091a2",
    "aircraft_id": _AIRCRAFT["id"],
    "description": "Left main tire worn to the cord",
    "severity": "major",
    "is_grounding": False,
    "reported_by": _RESERVATION["pilot_id"],
    "created_at": datetime(2026, 5, 4, 16, 20, tzinfo=UTC),
    "resolved_by": "0196a1f3-1b72-7e54-9b52-7f6d8091a2b3",
    "resolved_at": datetime(2026, 5, 5, 10, 5, tzinfo=UTC),
}
_MEL = {
    "id": "0196a1f3-2c83-7f65-8c63-8091a2b3c4d5",
    "aircraft_id": _AIRCRAFT["id"],
    "item_description": "Landing light inoperative",
    "mel_category": "c",
    "deferral_date": date(2026, 5, 4),
    "due_date": date(2026, 5, 14),
}


@dataclass(frozen=True)
class EventDoc:
    name: str
    fires_when: str
    data: c.EventData
    note: str = ""

    @property
    def example(self) -> str:
        envelope = {
            "event": self.name,
            "delivered_at": "2026-05-04T16:07:31.482113Z",
            "data": orjson.loads(dumps(self.data)),
        }
        return orjson.dumps(envelope, option=orjson.OPT_INDENT_2).decode()


EVENTS: tuple[EventDoc, ...] = (
    EventDoc(
        c.SQUAWK_CREATED,
        "a member or instructor reports a discrepancy against an aircraft",
        c.squawk_created(_SQUAWK),
    ),
    EventDoc(
        c.SQUAWK_RESOLVED,
        "a squawk moves into resolved from any other status",
        c.squawk_resolved(_SQUAWK),
    ),
    EventDoc(
        c.SQUAWK_ESCALATED,
        "an existing squawk is escalated to grounding severity",
        c.squawk_escalated(_SQUAWK),
    ),
    EventDoc(
        c.RESERVATION_CREATED,
        "any reservation is created, in whatever state",
        c.reservation_created(_RESERVATION),
    ),
    EventDoc(
        c.RESERVATION_CONFIRMED,
        "a new reservation lands in confirmed; fires alongside reservation.created",
        c.reservation_created(_RESERVATION),
        "The data is identical to reservation.created.",
    ),
    EventDoc(
        c.RESERVATION_CANCELLED,
        "a reservation is cancelled by a member or staff",
        c.reservation_cancelled(_RESERVATION),
        "There is no status field.",
    ),
    EventDoc(
        c.RESERVATION_CHECKED_IN,
        "a pilot completes pre-flight check-in",
        c.reservation_checked_in(_RESERVATION, forced=False),
        "forced is true when the check-in overrode a blocking issue.",
    ),
    EventDoc(
        c.RESERVATION_COMPLETED,
        "a pilot completes checkout at the end of the flight",
        c.reservation_completed(_RESERVATION),
    ),
    EventDoc(
        c.FLIGHT_SESSION_COMPLETED,
        "a pilot completes checkout, right after reservation.completed for the same flight",
        c.reservation_completed(_RESERVATION),
        "Byte-identical to reservation.completed.",
    ),
    EventDoc(
        c.AIRCRAFT_GROUNDED,
        "an admin deactivates an aircraft, or the MEL-expiry job grounds it",
        c.aircraft_grounded(_AIRCRAFT, reason="admin_deactivate"),
        "reason is admin_deactivate or mel_expired; with mel_expired only id, tail_number and "
        "reason are sent. Only id and reason are always present: branch on reason.",
    ),
    EventDoc(
        c.AIRCRAFT_REACTIVATED,
        "an aircraft is returned to service",
        c.aircraft_reactivated(_AIRCRAFT),
        "There is no reason field.",
    ),
    EventDoc(
        c.MEL_CREATED,
        "a maintenance item is deferred onto the Minimum Equipment List",
        c.mel_created(_MEL),
    ),
    EventDoc(
        c.MEL_EXPIRED,
        "a scheduled job finds a deferred MEL item past its due date",
        c.mel_expired(_MEL, auto_grounded=True),
        "When it grounds the aircraft, aircraft.grounded with reason mel_expired follows.",
    ),
)

assert tuple(e.name for e in EVENTS) == c.EVENT_NAMES, "one entry per event, in order"
