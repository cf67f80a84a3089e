"""A typed Python client for hangar's public API, events API, calendar feed and signed
webhooks, and the `hangar-client listen` command."""

from hangar_client._version import VERSION
from hangar_client._wire import InvalidPayload
from hangar_client.async_client import AsyncClient
from hangar_client.calendar import calendar_url
from hangar_client.client import Client
from hangar_client.errors import (
    CursorExpired,
    HangarError,
    InsufficientScope,
    InvalidCursor,
    RateLimited,
    ServiceUnavailable,
    Unauthorized,
    UnknownEvent,
    ValidationFailed,
)
from hangar_client.events import WebhookEvent, parse_event
from hangar_client.events_api import AsyncEventIterator, EventIterator
from hangar_client.models import (
    Aircraft,
    Contact,
    Event,
    EventPage,
    MaintenanceLog,
    Member,
    Reservation,
    ReservationPage,
    Squawk,
    WorkOrder,
)
from hangar_client.policy import RetryPolicy
from hangar_client.signature import verify_signature, whsec

__version__ = VERSION

__all__ = [
    "Aircraft",
    "AsyncClient",
    "AsyncEventIterator",
    "Client",
    "Contact",
    "CursorExpired",
    "Event",
    "EventIterator",
    "EventPage",
    "HangarError",
    "InsufficientScope",
    "InvalidCursor",
    "InvalidPayload",
    "MaintenanceLog",
    "Member",
    "RateLimited",
    "Reservation",
    "ReservationPage",
    "RetryPolicy",
    "ServiceUnavailable",
    "Squawk",
    "Unauthorized",
    "UnknownEvent",
    "ValidationFailed",
    "WebhookEvent",
    "WorkOrder",
    "calendar_url",
    "parse_event",
    "verify_signature",
    "whsec",
]
