"""/api/orgs/{org_id}/aircraft and /mel-items (fleet.manage)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Request
from starlette.responses import Response

from hangar.fleet import commands
from hangar.kit.responses import json_response
from hangar.kit.routing import ORG_PREFIX, no_content, path_id, transact
from hangar.orgs.access import Actor, acting
from hangar.orgs.capabilities import FLEET_MANAGE

router = APIRouter(prefix=ORG_PREFIX, include_in_schema=False)
FleetManager = Annotated[Actor, acting(FLEET_MANAGE)]


@router.post("/aircraft", status_code=201)
async def create_aircraft(
    request: Request, actor: FleetManager, body: commands.NewAircraftBody
) -> Response:
    return json_response(await transact(request, commands.create_aircraft, actor, body), 201)


@router.delete("/aircraft/{aircraft_id}", status_code=204)
async def delete_aircraft(request: Request, actor: FleetManager, aircraft_id: str) -> Response:
    await transact(request, commands.delete_aircraft, actor, path_id(aircraft_id, "aircraft"))
    return no_content()


@router.post("/aircraft/{aircraft_id}/deactivate")
async def deactivate(request: Request, actor: FleetManager, aircraft_id: str) -> Response:
    target = path_id(aircraft_id, "aircraft")
    return json_response(await transact(request, commands.deactivate, actor, target))


@router.post("/aircraft/{aircraft_id}/reactivate")
async def reactivate(request: Request, actor: FleetManager, aircraft_id: str) -> Response:
    target = path_id(aircraft_id, "aircraft")
    return json_response(await transact(request, commands.reactivate, actor, target))


@router.post("/mel-items", status_code=201)
async def create_mel_item(
    request: Request, actor: FleetManager, body: commands.NewMelItemBody
) -> Response:
    return json_response(await transact(request, commands.create_mel_item, actor, body), 201)
