"""The public, key-authenticated API: nine GET operations under /api/v1/external (their
route class: keyed.py; their documentation: operations.py), a module for each kind of answer:

- lists: the organization's reservations (the one paginated list), aircraft, squawks,
  members, maintenance log entries and work orders;
- events: the events log, oldest first, as the webhook deliveries carry it;
- organization: who is calling, the key's organization and the key;
- calendar_feed: the reservations as an iCalendar feed, the key in the URL.
"""

from __future__ import annotations

from hangar.external.routes import calendar_feed, events, lists, organization

# The routers, in the order the app mounts their routes and the OpenAPI document lists them.
ROUTERS = (lists.router, events.router, organization.router, calendar_feed.router)
