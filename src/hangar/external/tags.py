"""The public API's resource areas. Each operation carries one of these tags, and the OpenAPI
document lists them with their descriptions, so generated clients and /docs group operations
the same way (openapi-python-client makes one module per tag)."""

from __future__ import annotations

RESERVATIONS = "reservations"
FLEET = "fleet"
SQUAWKS = "squawks"
MEMBERS = "members"
MAINTENANCE = "maintenance"
EVENTS = "events"
ORGANIZATION = "organization"

# In the order the document lists them.
TAGS: list[dict[str, str]] = [
    {
        "name": RESERVATIONS,
        "description": "Bookings of aircraft and instructors, as JSON pages and as an "
        "iCalendar feed",
    },
    {"name": FLEET, "description": "The organization's aircraft and their current times"},
    {"name": SQUAWKS, "description": "Reported discrepancies on aircraft"},
    {"name": MEMBERS, "description": "Memberships of the organization"},
    {"name": MAINTENANCE, "description": "Maintenance log entries and work orders"},
    {
        "name": ORGANIZATION,
        "description": "The organization a key belongs to, and that key: for a partner "
        "serving many organizations",
    },
    {
        "name": EVENTS,
        "description": "What happened, as webhooks deliver it: the log to catch up from",
    },
]
