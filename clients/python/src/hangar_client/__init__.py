"""A typed Python client for hangar's public API, events API, calendar feed and signed
webhooks, and the `hangar-client listen` command."""

from hangar_client._core import Retrying
from hangar_client._version import VERSION
from hangar_client.async_client import AsyncClient
from hangar_client.calendar import calendar_url
from hangar_client.client import Client
from hangar_client.errors import (
    APIConnectionError,
    APITimeoutError,
    BadGateway,
    Bucket,
    ConfigurationError,
    CursorExpired,
    GatewayTimeout,
    HangarClientError,
    HangarError,
    InsufficientScope,
    InvalidAPIKey,
    InvalidCursor,
    InvalidPayload,
    RateLimited,
    ServerError,
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
    KeyOrganization,
    MaintenanceLog,
    Member,
    Reservation,
    ReservationPage,
    Squawk,
    WorkOrder,
)
from hangar_client.policy import RetryPolicy
from hangar_client.signature import (
    SeenDeliveries,
    organization_of,
    verify_delivery,
    verify_signature,
    whsec,
)

__version__ = VERSION

__all__ = [
    "APIConnectionError",
    "APITimeoutError",
    "Aircraft",
    "AsyncClient",
    "AsyncEventIterator",
    "BadGateway",
    "Bucket",
    "Client",
    "ConfigurationError",
    "Contact",
    "CursorExpired",
    "Event",
    "EventIterator",
    "EventPage",
    "GatewayTimeout",
    "HangarClientError",
    "HangarError",
    "InsufficientScope",
    "InvalidAPIKey",
    "InvalidCursor",
    "InvalidPayload",
    "KeyOrganization",
    "MaintenanceLog",
    "Member",
    "RateLimited",
    "Reservation",
    "ReservationPage",
    "RetryPolicy",
    "Retrying",
    "SeenDeliveries",
    "ServerError",
    "ServiceUnavailable",
    "Squawk",
    "Unauthorized",
    "UnknownEvent",
    "ValidationFailed",
    "WebhookEvent",
    "WorkOrder",
    "calendar_url",
    "organization_of",
    "parse_event",
    "verify_delivery",
    "verify_signature",
    "whsec",
]
