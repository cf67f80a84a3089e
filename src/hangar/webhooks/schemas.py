"""The events API's resources (GET /api/v1/external/events): an event as the log keeps it,
and a page of them. Open, like every resource of the public API."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import Field

from hangar.kit.schemas import Open

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


class LoggedEvent(Open):
    id: str = Field(
        description="The event's id: the `X-Service-Event-Id` header of its webhook deliveries"
    )
    event: EventName = Field(description="The event's name, from the event catalogue")
    created_at: datetime = Field(description="When the change that fired it was made")
    data: dict[str, Any] = Field(
        description="The event's `data` object, byte for byte as its webhook deliveries "
        "carry it (the event catalogue lists its fields)"
    )


class EventPage(Open):
    items: list[LoggedEvent] = Field(description="Oldest first")
    next_cursor: str = Field(
        description="Where this page ended: pass it back as `after`, with the same filters, "
        "for the events after it. Returned on every page, the last one too: keep it and ask "
        "again later for the newer events"
    )
