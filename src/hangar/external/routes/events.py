"""The public API's events: what happened in the organization, oldest first, as its webhook
deliveries carry it, for as long as the delivery log keeps them; paginated by a cursor that
comes back on every page."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from orjson import Fragment
from pydantic import WithJsonSchema
from starlette.responses import Response

from hangar.external import tags
from hangar.external.keyed import KeyedRoute, caller
from hangar.external.operations import EVENTS_ERRORS, operation
from hangar.external.paths import PREFIX
from hangar.http.responses import json_response
from hangar.http.routing import services_of
from hangar.keys.authentication import KeyLookup
from hangar.kit.errors import Forbidden
from hangar.kit.params import AwareDateTime, Digits
from hangar.webhooks.events import event_log
from hangar.webhooks.events.catalogue import EVENT_NAMES, READ_SCOPE, unknown_event
from hangar.webhooks.schemas import EventPage

router = APIRouter(prefix=PREFIX, route_class=KeyedRoute)

# A name of the catalogue, as the document shows it; checked by the operation itself, so an
# unknown one is 422 UNKNOWN_EVENT rather than a validation error.
CatalogueName = Annotated[str, WithJsonSchema({"type": "string", "enum": list(EVENT_NAMES)})]


# A poll that finds nothing new is answered from the key's statement alone: it also reads
# where the organization's log ends (hangar.webhooks.events.event_log.page).
class _EventsRoute(KeyedRoute):
    key_lookup = KeyLookup(event_log.log_end)


_EVENTS = operation(
    "list_events",
    tags.EVENTS,
    "read:events",
    EventPage,
    summary="List events, oldest first",
    description="What happened in the organization, as its webhook deliveries carry it: "
    "each event once, oldest first, for as long as the delivery log keeps them (30 days "
    "unless the operator set otherwise). For catching up after a receiver was down, or "
    "instead of webhooks. It is paginated: pass the previous page's `next_cursor` as "
    "`after`, with the same filters, for the events after it. `next_cursor` comes back "
    "on every page, the last one too: a page with fewer than `limit` events means there "
    "is nothing newer yet, so keep the cursor and ask again later (every 5 seconds or "
    "slower fits the limits). Walked this way the pages return every event once, in "
    "order, also those whose changes committed late. A cursor keeps while the oldest "
    "event it has not returned is inside the window (less an hour); past that it is "
    "410 `CURSOR_EXPIRED`. The Test action's `test.ping` is not an event here. `id` is "
    "the `X-Service-Event-Id` header of the event's deliveries. An event is listed only "
    "to a key that may also read what it concerns: reservation and flight session "
    "events need `read:reservations`, squawk events `read:squawks`, aircraft events "
    "`read:aircraft` and MEL events `read:maintenance`; naming an event in `event` "
    "without its scope is 403 `INSUFFICIENT_SCOPE`.",
    ok="One page of events, oldest first, and the cursor to continue from",
    errors=EVENTS_ERRORS,
)


async def list_events(
    request: Request,
    limit: Annotated[int, Query(ge=1, le=500, description="Page size"), Digits] = 100,
    after: Annotated[str | None, Query(description="The previous page's next_cursor")] = None,
    event: Annotated[
        list[CatalogueName] | None,
        Query(
            description="Only events of these names (repeat the parameter for several); "
            "an unknown name is 422 `UNKNOWN_EVENT`"
        ),
    ] = None,
    created_after: Annotated[
        AwareDateTime | None, Query(description="Only events created at or after")
    ] = None,
) -> Response:
    services, by = services_of(request), caller(request)
    names = sorted(set(event or ()))
    unknown = [name for name in names if name not in EVENT_NAMES]
    if unknown:
        raise unknown_event(unknown[0], ["query", "event"])
    scopes = by.key.scopes
    readable = tuple(name for name in EVENT_NAMES if READ_SCOPE[name] in scopes)
    refused = [name for name in names if name not in readable]
    if refused:
        raise Forbidden(
            f"This API key lacks the scope {READ_SCOPE[refused[0]]}, which {refused[0]} "
            "events need besides read:events",
            "INSUFFICIENT_SCOPE",
        )
    every = len(readable) == len(EVENT_NAMES)
    filters = event_log.Filters(tuple(names), created_after, None if every else readable)
    keys = services.cursor_keys
    start = event_log.read_cursor(keys, by.key, filters, after) if after else None
    found = await event_log.page(
        services.engine,
        by.conn,
        by.key,
        filters,
        start,
        limit,
        now=services.clock.now(),
        retention_days=services.settings.delivery_retention_days,
        end=event_log.LogEnd.of(by.key_row),
    )
    items = [
        {
            "id": row["id"],
            "event": row["event"],
            "created_at": row["created_at"],
            "data": Fragment(row["data"]),  # the bytes every delivery of it carries
        }
        for row in found.items
    ]
    next_cursor = event_log.write_cursor(keys, by.key, filters, found.next_cursor)
    return json_response({"items": items, "next_cursor": next_cursor})


router.add_api_route(
    "/events", list_events, methods=["GET"], route_class_override=_EventsRoute, **_EVENTS
)
