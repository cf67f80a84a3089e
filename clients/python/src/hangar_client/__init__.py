"""A typed Python client for hangar's public API, calendar feed and signed webhooks."""

from hangar_client._version import VERSION
from hangar_client._wire import InvalidPayload
from hangar_client.async_client import AsyncClient
from hangar_client.calendar import calendar_url
from hangar_client.client import Client
from hangar_client.errors import (
    HangarError,
    InsufficientScope,
    InvalidCursor,
    RateLimited,
    ServiceUnavailable,
    Unauthorized,
    ValidationFailed,
)
from hangar_client.events import WebhookEvent, parse_event
from hangar_client.models import (
    Aircraft,
    Contact,
    MaintenanceLog,
    Member,
    Reservation,
    ReservationPage,
    Squawk,
    WorkOrder,
)
from hangar_client.policy import RetryPolicy
from hangar_client.signature import verify_signature

__version__ = VERSION

__all__ = [
    "Aircraft",
    "AsyncClient",
    "Client",
    "Contact",
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
    "ValidationFailed",
    "WebhookEvent",
    "WorkOrder",
    "calendar_url",
    "parse_event",
    "verify_signature",
]
