"""/api/orgs/{org_id}/squawks: report (squawks.report); move, resolve, escalate (.manage)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter
from starlette.responses import Response

from hangar.http.access import acting
from hangar.http.responses import json_response
from hangar.http.routing import ORG_PREFIX, JsonRoute, Now, Tx, path_id
from hangar.orgs.actors import Actor
from hangar.orgs.capabilities import SQUAWKS_MANAGE, SQUAWKS_REPORT
from hangar.squawks import service

router = APIRouter(prefix=f"{ORG_PREFIX}/squawks", include_in_schema=False, route_class=JsonRoute)
Reporter = Annotated[Actor, acting(SQUAWKS_REPORT)]
Manager = Annotated[Actor, acting(SQUAWKS_MANAGE)]


@router.post("", status_code=201)
async def report(actor: Reporter, conn: Tx, now: Now, body: service.NewSquawkBody) -> Response:
    return json_response(await service.report(conn, actor, body, now), 201)


@router.patch("/{squawk_id}")
async def set_status(
    actor: Manager, conn: Tx, now: Now, squawk_id: str, body: service.StatusBody
) -> Response:
    target = path_id(squawk_id, "squawk")
    return json_response(await service.set_status(conn, actor, target, body, now))


@router.post("/{squawk_id}/resolve")
async def resolve(actor: Manager, conn: Tx, now: Now, squawk_id: str) -> Response:
    target = path_id(squawk_id, "squawk")
    return json_response(await service.resolve(conn, actor, target, now))


@router.post("/{squawk_id}/escalate")
async def escalate(actor: Manager, conn: Tx, now: Now, squawk_id: str) -> Response:
    target = path_id(squawk_id, "squawk")
    return json_response(await service.escalate(conn, actor, target, now))
