"""A reservation, as the public API shows it: the schema and its row type (hangar.kit.schemas
says how the two go together)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import TypedDict

from pydantic import Field

from hangar.kit.schemas import Open
from hangar.reservations.models import ActivityType
from hangar.reservations.models import (
    ReservationStatus as ReservationStatus,  # the read API's filter
)


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


class ReservationRow(TypedDict):
    """What the public reads and the actions return: `Reservation`'s fields, in its order."""

    id: uuid.UUID
    aircraft_id: uuid.UUID | None
    pilot_id: uuid.UUID | None
    instructor_id: uuid.UUID | None
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
