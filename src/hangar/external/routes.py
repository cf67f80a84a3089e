"""The public, key-authenticated API: seven GET operations under /api/v1/external."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import Enum
from typing import Annotated, Any, TypedDict

from fastapi import APIRouter, Query, Request
from fastapi.routing import APIRoute
from starlette.responses import Response

from hangar.db.engine import ReadConnection, read_connection
from hangar.external import calendar, tags
from hangar.external.paths import PREFIX
from hangar.fleet import queries as fleet_queries
from hangar.fleet.schemas import Aircraft
from hangar.foundation.ids import parse_id
from hangar.http.responses import json_response
from hangar.http.routing import bearer, services_of
from hangar.keys.authentication import MISSING, MISSING_TOKEN, KeyAuthenticator
from hangar.kit import cursor
from hangar.kit.params import AwareDateTime, Digits, StrictBool
from hangar.kit.schemas import REQUIRED_SCOPE, ErrorBody, ValidationErrorBody
from hangar.kit.scoping import KeyContext
from hangar.maintenance import queries as maintenance_queries
from hangar.maintenance.schemas import MaintenanceLog, WorkOrder, WorkOrderStatus
from hangar.orgs import queries as member_queries
from hangar.orgs.schemas import Member
from hangar.reservations import queries as reservation_queries
from hangar.reservations.schemas import ReservationPage, ReservationStatus
from hangar.squawks import queries as squawk_queries
from hangar.squawks.schemas import Squawk, SquawkStatus

# FastAPI's type for an operation's documented answers: status to OpenAPI fragments (JSON).
_Responses = dict[int | str, dict[str, Any]]

# The answers every operation may give besides its 200, as service-spec.md's Errors lists
# them: each a `{detail, code}` body whose `code` a client branches on.
_ERRORS: _Responses = {
    401: {
        "model": ErrorBody,
        "description": "`UNAUTHORIZED`: the key is missing, malformed, unknown, revoked, or "
        "rotated out after its grace window",
    },
    403: {
        "model": ErrorBody,
        "description": "`INSUFFICIENT_SCOPE`: the key is valid but lacks this operation's "
        "scope, which `detail` names",
    },
    422: {
        "model": ValidationErrorBody,
        "description": "`VALIDATION_ERROR`: a query parameter is invalid; `errors` lists each "
        "problem",
    },
    429: {
        "model": ErrorBody,
        "description": "`RATE_LIMITED`: the key has made 60 requests this calendar minute or "
        "1000 this calendar hour; no quota headers are sent",
    },
    503: {
        "model": ErrorBody,
        "description": "`SERVICE_UNAVAILABLE`: a datastore cannot be reached for now; retry later",
    },
}
_CURSOR_ERROR: _Responses = {
    400: {
        "model": ErrorBody,
        "description": "`INVALID_CURSOR`: `after` did not come from this organization's "
        "results with these filters",
    },
}
_LIMITS = (
    "Every call counts against the key's limits of 60 requests per calendar minute and 1000 "
    "per calendar hour; past either, the answer is 429 `RATE_LIMITED`."
)
_QUERY_KEY = "calendarToken"


@dataclass(frozen=True)
class Caller:
    """The authenticated caller of a request, and the request's one read connection (its key
    was looked up on it: one checkout per request, not one for the key and one for the data)."""

    key: KeyContext
    conn: ReadConnection


_CALLER = "hangar.caller"


def caller(request: Request) -> Caller:
    """The caller `KeyedRoute` authenticated for this request."""
    found: Caller = request.scope[_CALLER]
    return found


class KeyedRoute(APIRoute):
    """An operation of the public API. Before FastAPI reads its parameters (so a bad key is
    a 401, never a 422), the caller's key is authenticated for the scope the operation
    documents (`x-required-scope`, so the documented scope is the enforced one), then the
    request's read connection is lent to the operation until it returns.

    A route class rather than a dependency with yield: FastAPI's dependency machinery (an
    exit stack and a context manager per request, and the checks around them) cost about a
    quarter of the app's time on a small page (figures: bench/RESULTS.md, "Figures once kept
    in code comments").
    """

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handle = super().get_route_handler()
        extra = self.openapi_extra or {}
        scope: str = extra[REQUIRED_SCOPE]
        from_query = any(_QUERY_KEY in scheme for scheme in extra["security"])
        missing = MISSING_TOKEN if from_query else MISSING

        async def keyed(request: Request) -> Response:
            authenticator: KeyAuthenticator = request.app.state.keys
            raw = request.query_params.get("token") if from_query else bearer(request)
            authenticator.refuse_malformed(raw, missing)  # no connection for what cannot be a key
            services = services_of(request)
            async with read_connection(services.engine) as conn:
                key = await authenticator.authenticate(raw, scope, missing=missing, conn=conn)
                request.scope[_CALLER] = Caller(key, conn)
                try:
                    return await handle(request)
                finally:
                    del request.scope[_CALLER]  # the connection is going back to the pool

        return keyed


router = APIRouter(prefix=PREFIX, route_class=KeyedRoute)


class _Operation(TypedDict):
    """The keywords of `router.get` that document an operation: its name for generated
    clients, its tag, its texts, its scope and its answers. Built once, at import."""

    operation_id: str
    tags: list[str | Enum]  # FastAPI's type: one of hangar.external.tags
    summary: str
    description: str
    response_description: str
    responses: _Responses
    openapi_extra: dict[str, Any]  # merged into the operation's OpenAPI object as it stands
    response_class: type[Response]


def _doc(
    operation_id: str,
    tag: str,
    scope: str,
    model: Any,
    *,
    summary: str,
    description: str,
    ok: str,
    query_key: bool = False,
    errors: _Responses | None = None,
) -> _Operation:
    """`operation_id` is the name generated clients give the call: set here, never derived
    from the function's name, so renaming a function changes no client (tests pin the set)."""
    scheme = _QUERY_KEY if query_key else "bearerAuth"
    return {
        "operation_id": operation_id,
        "tags": [tag],
        "summary": summary,
        "description": f"{description}\n\nScope: `{scope}`. {_LIMITS}",
        "response_description": ok,
        "responses": {200: {"model": model}, **(errors or {}), **_ERRORS},
        "openapi_extra": {"security": [{scheme: [scope]}], REQUIRED_SCOPE: scope},
        "response_class": Response,
    }


def _canonical(moment: datetime | None) -> str:
    return "" if moment is None else moment.astimezone(UTC).isoformat()


@router.get(
    "/reservations",
    **_doc(
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
        errors=_CURSOR_ERROR,
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
    position = cursor.decode(services.cursor_key, key.org_id, context, after) if after else None
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
            services.cursor_key,
            key.org_id,
            context,
            cursor.Position(start_time=last["start_time"], id=last["id"]),
        )
    return json_response({"items": items, "next_cursor": next_cursor})


@router.get(
    "/aircraft",
    **_doc(
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
    **_doc(
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
    **_doc(
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
    **_doc(
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
    **_doc(
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


_FEED = _doc(
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
    # One row, not 500, decides whether the calendar's copy is still current.
    found = calendar.validators(
        await reservation_queries.changes(by.conn, by.key), by.key.org_id, domain
    )
    headers = found.headers(now) if found is not None else {}
    if found is not None and found.not_modified(request.headers, now):
        return Response(status_code=304, headers=headers)
    rows = await reservation_queries.calendar(by.conn, by.key)
    body = calendar.feed(rows, domain=domain, now=now)
    if request.method == "HEAD":  # the GET's headers, its length included, and no body
        headers["content-length"] = str(len(body))
        body = b""
    return Response(body, media_type="text/calendar; charset=utf-8", headers=headers)


# HEAD, for calendar clients that ask before they fetch: the same operation, left out of the
# OpenAPI description (whose operations are the seven GETs).
router.add_api_route(
    "/reservations.ics", reservations_feed, methods=["HEAD"], include_in_schema=False, **_FEED
)
