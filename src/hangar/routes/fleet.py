"""/api/orgs/{org_id}/aircraft and /mel-items (fleet.manage)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter
from starlette.responses import Response

from hangar.fleet import service
from hangar.http.access import acting
from hangar.http.responses import json_response
from hangar.http.routing import ORG_PREFIX, JsonRoute, Now, Tx, no_content, path_id
from hangar.orgs.actors import Actor
from hangar.orgs.capabilities import FLEET_MANAGE

router = APIRouter(prefix=ORG_PREFIX, include_in_schema=False, route_class=JsonRoute)
FleetManager = Annotated[Actor, acting(FLEET_MANAGE)]


@router.post("/aircraft", status_code=201)
async def create_aircraft(
    actor: FleetManager, conn: Tx, now: Now, body: service.NewAircraftBody
) -> Response:
    return json_response(await service.create_aircraft(conn, actor, body, now), 201)


@router.delete("/aircraft/{aircraft_id}", status_code=204)
async def delete_aircraft(actor: FleetManager, conn: Tx, now: Now, aircraft_id: str) -> Response:
    await service.delete_aircraft(conn, actor, path_id(aircraft_id, "aircraft"), now)
    return no_content()


@router.post("/aircraft/{aircraft_id}/deactivate")
async def deactivate(actor: FleetManager, conn: Tx, now: Now, aircraft_id: str) -> Response:
    target = path_id(aircraft_id, "aircraft")
    return json_response(await service.deactivate(conn, actor, target, now))


@router.post("/aircraft/{aircraft_id}/reactivate")
async def reactivate(actor: FleetManager, conn: Tx, now: Now, aircraft_id: str) -> Response:
    target = path_id(aircraft_id, "aircraft")
    return json_response(await service.reactivate(conn, actor, target, now))


@router.post("/mel-items", status_code=201)
async def create_mel_item(
    actor: FleetManager, conn: Tx, now: Now, body: service.NewMelItemBody
) -> Response:
    return json_response(await service.create_mel_item(conn, actor, body, now), 201)
