"""The public, key-authenticated API: nine GET operations under /api/v1/external (their
route class: keyed.py; their documentation: operations.py)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

from fastapi import APIRouter, Query, Request
from orjson import Fragment
from pydantic import WithJsonSchema
from starlette.responses import Response

from hangar.external import calendar, tags
from hangar.external.keyed import KeyedRoute, caller
from hangar.external.operations import ANY_KEY, CURSOR_ERROR, EVENTS_ERRORS, operation
from hangar.external.paths import PREFIX
from hangar.fleet import queries as fleet_queries
from hangar.fleet.schemas import Aircraft
from hangar.foundation.ids import parse_id
from hangar.http.compression import accepts_gzip, gzipped
from hangar.http.responses import json_response
from hangar.http.routing import services_of
from hangar.keys.authentication import KeyLookup
from hangar.kit import cursor
from hangar.kit.errors import Forbidden
from hangar.kit.params import AwareDateTime, Digits, StrictBool
from hangar.maintenance import queries as maintenance_queries
from hangar.maintenance.schemas import MaintenanceLog, WorkOrder, WorkOrderStatus
from hangar.orgs import queries as member_queries
from hangar.orgs.schemas import KeyOrganization, Member
from hangar.reservations import queries as reservation_queries
from hangar.reservations.schemas import ReservationPage, ReservationStatus
from hangar.squawks import queries as squawk_queries
from hangar.squawks.schemas import Squawk, SquawkStatus
from hangar.webhooks.events import event_log
from hangar.webhooks.events.catalogue import EVENT_NAMES, READ_SCOPE, unknown_event
from hangar.webhooks.schemas import EventPage

router = APIRouter(prefix=PREFIX, route_class=KeyedRoute)

# A name of the catalogue, as the document shows it; checked by the operation itself, so an
# unknown one is 422 UNKNOWN_EVENT rather than a validation error.
CatalogueName = Annotated[str, WithJsonSchema({"type": "string", "enum": list(EVENT_NAMES)})]


def _canonical(moment: datetime | None) -> str:
    return "" if moment is None else moment.astimezone(UTC).isoformat()


@router.get(
    "/reservations",
    **operation(
        "list_reservations",
        tags.RESERVATIONS,
        "read:reservations",
        ReservationPage,
        summary="List reservations",
        description="The organization's reservations, newest start time first; soft-deleted "
        "ones are never returned. The only paginated operation: a page holds at most `limit` "
        "reservations, and `next_cursor` is set whenever a full page came back. Pass it back "
        "as `after` with the same filters for the next page; walked to the end, the pages "
        "return every matching reservation once.",
        ok="One page of reservations and the cursor of the next (null on the last page)",
        errors=CURSOR_ERROR,
    ),
)
async def list_reservations(
    request: Request,
    limit: Annotated[int, Query(ge=1, le=500, description="Page size"), Digits] = 100,
    after: Annotated[str | None, Query(description="The previous page's next_cursor")] = None,
    aircraft_id: str | None = None,
    pilot_id: str | None = None,
    status: ReservationStatus | None = None,
    start_after: Annotated[
        AwareDateTime | None, Query(description="Only reservations starting at or after")
    ] = None,
    start_before: Annotated[
        AwareDateTime | None, Query(description="Only reservations starting before")
    ] = None,
) -> Response:
    services, key = services_of(request), caller(request).key
    # The cursor is bound to the filters as sent, so a changed filter invalidates it.
    context = "|".join(
        (
            aircraft_id or "",
            pilot_id or "",
            status or "",
            _canonical(start_after),
            _canonical(start_before),
        )
    )
    position = cursor.decode(services.cursor_keys, key.org_id, context, after) if after else None
    filters = reservation_queries.Filters(
        aircraft_id=parse_id(aircraft_id) if aircraft_id is not None else None,
        pilot_id=parse_id(pilot_id) if pilot_id is not None else None,
        status=status,
        start_after=start_after,
        start_before=start_before,
    )
    if (aircraft_id is not None and filters.aircraft_id is None) or (
        pilot_id is not None and filters.pilot_id is None
    ):
        return json_response({"items": [], "next_cursor": None})  # no id of ours looks so
    items = await reservation_queries.page(caller(request).conn, key, filters, position, limit)
    next_cursor = None
    if len(items) == limit:
        last = items[-1]
        next_cursor = cursor.encode(
            services.cursor_keys,
            key.org_id,
            context,
            cursor.Position(start_time=last["start_time"], id=last["id"]),
        )
    return json_response({"items": items, "next_cursor": next_cursor})


@router.get(
    "/aircraft",
    **operation(
        "list_aircraft",
        tags.FLEET,
        "read:aircraft",
        list[Aircraft],
        summary="List the fleet",
        description="Every aircraft of the organization that is not deleted, with its current "
        "Hobbs and tach times and annual due date; `is_active` is false while an aircraft is "
        "grounded. Not paginated: all of them in one array.",
        ok="The organization's aircraft, as a bare array",
    ),
)
async def list_aircraft(request: Request) -> Response:
    by = caller(request)
    return json_response(await fleet_queries.fleet(by.conn, by.key))


@router.get(
    "/squawks",
    **operation(
        "list_squawks",
        tags.SQUAWKS,
        "read:squawks",
        list[Squawk],
        summary="List the 500 most recent squawks",
        description="The organization's squawks (reported discrepancies), newest first. Not "
        "paginated: at most the 500 most recent that match the filters, with no cursor; "
        "filter to reach older ones.",
        ok="Up to 500 squawks, newest first, as a bare array",
    ),
)
async def list_squawks(
    request: Request,
    status: SquawkStatus | None = None,
    aircraft_id: str | None = None,
    is_grounding: StrictBool | None = None,
) -> Response:
    aircraft = parse_id(aircraft_id) if aircraft_id is not None else None
    if aircraft_id is not None and aircraft is None:
        return json_response([])
    by = caller(request)
    rows = await squawk_queries.recent(
        by.conn, by.key, status=status, aircraft_id=aircraft, is_grounding=is_grounding
    )
    return json_response(rows)


@router.get(
    "/members",
    **operation(
        "list_members",
        tags.MEMBERS,
        "read:members",
        list[Member],
        summary="List memberships",
        description="One record per membership of the organization that is not deleted: user "
        "id, role, status and join date. `email`, `first_name`, `last_name` and `phone` are "
        "present only when the key also carries `read:members.full`. Not paginated: all of "
        "them in one array.",
        ok="The organization's memberships, as a bare array",
    ),
)
async def list_members(request: Request) -> Response:
    by = caller(request)
    return json_response(await member_queries.members(by.conn, by.key))


@router.get(
    "/maintenance-logs",
    **operation(
        "list_maintenance_logs",
        tags.MAINTENANCE,
        "read:maintenance",
        list[MaintenanceLog],
        summary="List the 500 most recent log entries",
        description="The organization's maintenance log entries, most recent event date first. "
        "Not paginated: at most the 500 most recent, with no cursor; filter by `aircraft_id` "
        "for an aircraft's complete history.",
        ok="Up to 500 maintenance log entries, most recent first, as a bare array",
    ),
)
async def list_maintenance_logs(request: Request, aircraft_id: str | None = None) -> Response:
    aircraft = parse_id(aircraft_id) if aircraft_id is not None else None
    if aircraft_id is not None and aircraft is None:
        return json_response([])
    by = caller(request)
    rows = await maintenance_queries.logs(by.conn, by.key, aircraft_id=aircraft)
    return json_response(rows)


@router.get(
    "/work-orders",
    **operation(
        "list_work_orders",
        tags.MAINTENANCE,
        "read:maintenance",
        list[WorkOrder],
        summary="List the 500 most recent work orders",
        description="The organization's work orders, open and historical, newest first. Not "
        "paginated: at most the 500 most recent that match the filter, with no cursor.",
        ok="Up to 500 work orders, newest first, as a bare array",
    ),
)
async def list_work_orders(request: Request, status: WorkOrderStatus | None = None) -> Response:
    by = caller(request)
    rows = await maintenance_queries.work_orders(by.conn, by.key, status=status)
    return json_response(rows)


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


# Who is calling, answered from the key's own statement: it also reads the organization's name.
class _OrganizationRoute(KeyedRoute):
    key_lookup = KeyLookup(member_queries.org_name)


_ORGANIZATION = operation(
    "get_organization",
    tags.ORGANIZATION,
    ANY_KEY,
    KeyOrganization,
    summary="The organization of this key",
    description="Which organization the key belongs to, and the key itself: its prefix, "
    "scopes and, once rotated out, when it stops working. For a partner serving many "
    "organizations: `id` is the `X-Service-Organization` header of the organization's "
    "webhook deliveries, so one receiver can tell them apart. Not paginated: one object.",
    ok="The key's organization and the key",
)


async def get_organization(request: Request) -> Response:
    by = caller(request)
    row = by.key_row
    return json_response(
        {
            "id": by.key.org_id,
            "name": row[member_queries.ORG_NAME],
            "key": {
                "prefix": row["prefix"],
                "scopes": row["scopes"] or [],
                "expires_at": row["expires_at"],
            },
        }
    )


router.add_api_route(
    "/organization",
    get_organization,
    methods=["GET"],
    route_class_override=_OrganizationRoute,
    **_ORGANIZATION,
)


_FEED = operation(
    "get_reservations_calendar",
    tags.RESERVATIONS,
    "read:reservations",
    str,
    summary="Calendar feed of reservations",
    description="An iCalendar (RFC 5545) document for calendar clients: one event per "
    "reservation, the 500 most recent by start time, skipping those without a start or "
    "end time. Not paginated. The key travels in the `token` query parameter, as calendar "
    "clients cannot send headers, so the feed URL is a live credential: give it a key "
    "holding only `read:reservations`, and revoke that key if the URL leaks.\n\n"
    "Polling: the answer carries a weak `ETag` (and `Last-Modified` once the second of the "
    "last change has passed); sent back as `If-None-Match` (or `If-Modified-Since`), it is "
    "answered 304 with no body while none of the organization's reservations has changed. "
    "`Cache-Control: private, max-age=300`: a copy may be reused for 5 minutes, then "
    "revalidated. The document is gzip-compressed when `Accept-Encoding` allows it "
    "(`Vary: Accept-Encoding`; the compressed one has an `ETag` of its own). "
    "`HEAD` answers the same headers without the document.",
    ok="An iCalendar (RFC 5545) document",
    query_key=True,
    errors={
        304: {
            "description": "Not Modified: the calendar's copy (its `If-None-Match` or "
            "`If-Modified-Since`) is current; no body"
        }
    },
)


@router.get("/reservations.ics", **_FEED)
async def reservations_feed(
    request: Request,
    token: Annotated[
        str | None,
        Query(description="The full API key (calendar clients cannot send headers)"),
    ] = None,
) -> Response:
    services = services_of(request)
    by = caller(request)
    now, domain = services.clock.now(), services.settings.service_domain
    gzip = accepts_gzip(request.headers.get("accept-encoding"))
    # One row, not 500, decides whether the calendar's copy is still current.
    found = calendar.validators(
        await reservation_queries.changes(by.conn, by.key), by.key.org_id, domain, gzip=gzip
    )
    # A 304 carries them too (RFC 9110 §15.4.5): they update the calendar's stored copy.
    headers = {"cache-control": calendar.CACHE_CONTROL, "vary": "Accept-Encoding"}
    if found is not None:
        headers.update(found.headers(now))
        if found.not_modified(request.headers, now):
            return Response(status_code=304, headers=headers)
    rows = await reservation_queries.calendar(by.conn, by.key)
    body = calendar.feed(rows, domain=domain, now=now)
    if gzip:
        body = gzipped(body)
        headers["content-encoding"] = "gzip"
    # HEAD is this GET, its body dropped on the way out (hangar.http.head).
    return Response(body, media_type="text/calendar; charset=utf-8", headers=headers)
