"""A reservation, as the public API and its OpenAPI description show it.

The single list of the resource's public fields: the queries select exactly these names.
Open (extra keys allowed: `hangar.kit.schemas.Open`), as the spec's versioning asks.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import Field

from hangar.kit.schemas import Open
from hangar.reservations.models import ActivityType, ReservationStatus


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
