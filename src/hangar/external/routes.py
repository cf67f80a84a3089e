"""The public, key-authenticated API: seven GET operations under /api/v1/external."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from sqlalchemy.ext.asyncio import AsyncConnection
from starlette.responses import Response

from hangar.auth.apikey import MISSING, MISSING_TOKEN, KeyAuthenticator, KeyContext
from hangar.db.engine import reader
from hangar.external import calendar, cursor
from hangar.external.params import AwareDateTime, StrictBool
from hangar.external.responses import json_response
from hangar.external.schemas import (
    Aircraft,
    ErrorBody,
    MaintenanceLog,
    Member,
    ReservationPage,
    ReservationStatus,
    Squawk,
    SquawkStatus,
    ValidationErrorBody,
    WorkOrder,
    WorkOrderStatus,
)
from hangar.fleet import queries as fleet_queries
from hangar.ids import parse_id
from hangar.maintenance import queries as maintenance_queries
from hangar.orgs import queries as member_queries
from hangar.reservations import queries as reservation_queries
from hangar.services import Services
from hangar.squawks import queries as squawk_queries

PREFIX = "/api/v1/external"
router = APIRouter(prefix=PREFIX, tags=["external"])

_ERRORS: dict[int | str, dict[str, Any]] = {
    401: {"model": ErrorBody, "description": "Missing, malformed, unknown, revoked or expired key"},
    403: {"model": ErrorBody, "description": "The key lacks this operation's scope"},
    422: {"model": ValidationErrorBody, "description": "Invalid query parameters"},
    429: {"model": ErrorBody, "description": "Per-key limit of 60/min or 1000/hour reached"},
    503: {"model": ErrorBody, "description": "A datastore is unreachable for now; retry later"},
}
_CURSOR_ERROR: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorBody, "description": "INVALID_CURSOR: `after` is not from these results"},
}


def _bearer(request: Request) -> str | None:
    header = request.headers.get("authorization")
    if not header:
        return None
    scheme, _, value = header.partition(" ")
    return value.strip() or None if scheme.lower() == "bearer" else None


@dataclass(frozen=True)
class Caller:
    """The authenticated caller of a request, and the request's one read connection (its key
    was looked up on it: one checkout per request, not one for the key and one for the data)."""

    key: KeyContext
    conn: AsyncConnection


def key_for(scope: str, *, from_query: bool = False) -> Any:
    """A dependency that authenticates the caller, demands `scope`, and lends the request a
    read connection until its operation returns."""
    missing = MISSING_TOKEN if from_query else MISSING

    async def dependency(request: Request) -> AsyncIterator[Caller]:
        authenticator: KeyAuthenticator = request.app.state.keys
        raw = request.query_params.get("token") if from_query else _bearer(request)
        authenticator.refuse_malformed(raw, missing)  # no connection for a key that cannot be
        services: Services = request.app.state.services
        async with reader(services.engine).connect() as conn:
            key = await authenticator.authenticate(raw, scope, missing=missing, conn=conn)
            yield Caller(key, conn)

    # "function": the connection goes back to the pool when the operation returns, before
    # the response is sent.
    return Depends(dependency, scope="function")


def _doc(
    scope: str,
    model: Any,
    summary: str,
    *,
    query_key: bool = False,
    errors: dict[int | str, dict[str, Any]] | None = None,
) -> dict[str, Any]:
    scheme = "calendarToken" if query_key else "bearerAuth"
    return {
        "summary": summary,
        "responses": {200: {"model": model}, **(errors or {}), **_ERRORS},
        "openapi_extra": {"security": [{scheme: [scope]}], "x-required-scope": scope},
        "response_class": Response,
    }


def _services(request: Request) -> Services:
    services: Services = request.app.state.services
    return services


Reader = Callable[..., Awaitable[list[dict[str, Any]]]]


def _canonical(moment: datetime | None) -> str:
    return "" if moment is None else moment.astimezone(UTC).isoformat()


@router.get(
    "/reservations",
    **_doc("read:reservations", ReservationPage, "List reservations", errors=_CURSOR_ERROR),
)
async def list_reservations(
    request: Request,
    caller: Annotated[Caller, key_for("read:reservations")],
    limit: Annotated[int, Query(ge=1, le=500, description="Page size")] = 100,
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
    services, key = _services(request), caller.key
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
    items = await reservation_queries.page(caller.conn, key, filters, position, limit)
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


@router.get("/aircraft", **_doc("read:aircraft", list[Aircraft], "List the fleet"))
async def list_aircraft(caller: Annotated[Caller, key_for("read:aircraft")]) -> Response:
    return json_response(await fleet_queries.fleet(caller.conn, caller.key))


@router.get("/squawks", **_doc("read:squawks", list[Squawk], "List the 500 most recent squawks"))
async def list_squawks(
    caller: Annotated[Caller, key_for("read:squawks")],
    status: SquawkStatus | None = None,
    aircraft_id: str | None = None,
    is_grounding: StrictBool | None = None,
) -> Response:
    aircraft = parse_id(aircraft_id) if aircraft_id is not None else None
    if aircraft_id is not None and aircraft is None:
        return json_response([])
    rows = await squawk_queries.recent(
        caller.conn, caller.key, status=status, aircraft_id=aircraft, is_grounding=is_grounding
    )
    return json_response(rows)


@router.get("/members", **_doc("read:members", list[Member], "List memberships"))
async def list_members(caller: Annotated[Caller, key_for("read:members")]) -> Response:
    return json_response(await member_queries.members(caller.conn, caller.key))


@router.get(
    "/maintenance-logs",
    **_doc("read:maintenance", list[MaintenanceLog], "List the 500 most recent log entries"),
)
async def list_maintenance_logs(
    caller: Annotated[Caller, key_for("read:maintenance")],
    aircraft_id: str | None = None,
) -> Response:
    aircraft = parse_id(aircraft_id) if aircraft_id is not None else None
    if aircraft_id is not None and aircraft is None:
        return json_response([])
    rows = await maintenance_queries.logs(caller.conn, caller.key, aircraft_id=aircraft)
    return json_response(rows)


@router.get(
    "/work-orders",
    **_doc("read:maintenance", list[WorkOrder], "List the 500 most recent work orders"),
)
async def list_work_orders(
    caller: Annotated[Caller, key_for("read:maintenance")],
    status: WorkOrderStatus | None = None,
) -> Response:
    rows = await maintenance_queries.work_orders(caller.conn, caller.key, status=status)
    return json_response(rows)


@router.get(
    "/reservations.ics",
    **_doc("read:reservations", str, "Calendar feed of reservations", query_key=True),
)
async def reservations_feed(
    request: Request,
    caller: Annotated[Caller, key_for("read:reservations", from_query=True)],
    token: Annotated[
        str | None,
        Query(description="The full API key (calendar clients cannot send headers)"),
    ] = None,
) -> Response:
    services = _services(request)
    rows = await reservation_queries.calendar(caller.conn, caller.key)
    body = calendar.feed(rows, domain=services.settings.service_domain, now=services.clock.now())
    return Response(body, media_type="text/calendar; charset=utf-8")
