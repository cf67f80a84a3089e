"""A sample of each event, for the Test action (issue 42, point 3): what a receiver's handler
for that event can be tried on before the real thing happens.

Made by the catalogue's own builders from rows shaped like the product's, so a sample has
exactly the fields, order and types of a real delivery (the event schemas' test validates
both). Its ids are fixed and match no record: a handler looking one up finds nothing, and the
delivery says it is a test (X-Service-Test: true)."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from typing import Any

from hangar.webhooks.events import catalogue as c

# One id per kind of record, recognisably not a real one (every real id is a UUIDv7).
SQUAWK_ID = uuid.UUID(int=1)
RESERVATION_ID = uuid.UUID(int=2)
AIRCRAFT_ID = uuid.UUID(int=3)
MEL_ID = uuid.UUID(int=4)
PILOT_ID = uuid.UUID(int=5)
INSTRUCTOR_ID = uuid.UUID(int=6)


def _squawk(now: datetime) -> dict[str, Any]:
    return {
        "id": SQUAWK_ID,
        "aircraft_id": AIRCRAFT_ID,
        "description": "Sample: left brake feels soft on taxi",
        "severity": "major",
        "is_grounding": False,
        "reported_by": PILOT_ID,
        "created_at": now,
        "resolved_by": INSTRUCTOR_ID,
        "resolved_at": now,
    }


def _reservation(now: datetime) -> dict[str, Any]:
    start = now.replace(minute=0, second=0, microsecond=0) + timedelta(days=1)
    return {
        "id": RESERVATION_ID,
        "aircraft_id": AIRCRAFT_ID,
        "pilot_id": PILOT_ID,
        "instructor_id": INSTRUCTOR_ID,
        "start_time": start,
        "end_time": start + timedelta(hours=2),
        "activity_type": "dual_training",
        "status": "confirmed",
        "is_backup": False,
        "cancellation_reason": "Sample: weather below minimums",
        "checked_in_at": now,
        "completed_at": now,
        "hobbs_out": 1234.5,
        "hobbs_in": 1236.1,
    }


def _aircraft() -> dict[str, Any]:
    return {"id": AIRCRAFT_ID, "tail_number": "N12345", "aircraft_type": "Cessna 172S"}


def _mel(now: datetime) -> dict[str, Any]:
    return {
        "id": MEL_ID,
        "aircraft_id": AIRCRAFT_ID,
        "item_description": "Sample: right landing light inoperative",
        "mel_category": "c",
        "deferral_date": now.date(),
        "due_date": now.date() + timedelta(days=10),
    }


_SAMPLES: dict[str, Callable[[datetime], Mapping[str, Any]]] = {
    c.SQUAWK_CREATED: lambda now: c.squawk_created(_squawk(now)),
    c.SQUAWK_RESOLVED: lambda now: c.squawk_resolved(_squawk(now)),
    c.SQUAWK_ESCALATED: lambda now: c.squawk_escalated(_squawk(now)),
    c.RESERVATION_CREATED: lambda now: c.reservation_created(_reservation(now)),
    c.RESERVATION_CONFIRMED: lambda now: c.reservation_created(_reservation(now)),
    c.RESERVATION_CANCELLED: lambda now: c.reservation_cancelled(_reservation(now)),
    c.RESERVATION_CHECKED_IN: lambda now: c.reservation_checked_in(_reservation(now), forced=False),
    c.RESERVATION_COMPLETED: lambda now: c.reservation_completed(_reservation(now)),
    c.FLIGHT_SESSION_COMPLETED: lambda now: c.reservation_completed(_reservation(now)),
    c.AIRCRAFT_GROUNDED: lambda now: c.aircraft_grounded(_aircraft(), reason="admin_deactivate"),
    c.AIRCRAFT_REACTIVATED: lambda now: c.aircraft_reactivated(_aircraft()),
    c.MEL_CREATED: lambda now: c.mel_created(_mel(now)),
    c.MEL_EXPIRED: lambda now: c.mel_expired(_mel(now), auto_grounded=True),
}
# What the Test action can send: test.ping (its default) or a sample of one of the 13.
TESTABLE: tuple[str, ...] = (c.TEST_PING, *c.EVENT_NAMES)


def sample(event: str, now: datetime, *, ping: str) -> Mapping[str, Any]:
    """The `data` of a Test delivery of `event` (one of TESTABLE), its times around `now`;
    `ping` is test.ping's message."""
    if event == c.TEST_PING:
        return c.ping(ping)
    return _SAMPLES[event](now)
