"""The public API's lists: the organization's reservations (the one paginated list, by
cursor), aircraft, squawks, members, maintenance log entries and work orders, each as the key
may read them."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

from fastapi import APIRouter, Query, Request
from starlette.responses import Response

from hangar.external import tags
from hangar.external.keyed import KeyedRoute, caller
from hangar.external.operations import CURSOR_ERROR, operation
from hangar.external.paths import PREFIX
from hangar.fleet import queries as fleet_queries
from hangar.fleet.schemas import Aircraft
from hangar.foundation.ids import parse_id
from hangar.http.responses import json_response
from hangar.http.routing import services_of
from hangar.kit import cursor
from hangar.kit.params import AwareDateTime, Digits, StrictBool
from hangar.maintenance import queries as maintenance_queries
from hangar.maintenance.schemas import MaintenanceLog, WorkOrder, WorkOrderStatus
from hangar.orgs import queries as member_queries
from hangar.orgs.schemas import Member
from hangar.reservations import queries as reservation_queries
from hangar.reservations.schemas import ReservationPage, ReservationStatus
from hangar.squawks import queries as squawk_queries
from hangar.squawks.schemas import Squawk, SquawkStatus

router = APIRouter(prefix=PREFIX, route_class=KeyedRoute)


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
