"""/api/orgs/{org_id}/squawks: report (squawks.report); move, resolve, escalate (.manage)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Request
from starlette.responses import Response

from hangar.kit.responses import json_response
from hangar.kit.routing import ORG_PREFIX, path_id, transact
from hangar.orgs.access import Actor, acting
from hangar.orgs.capabilities import SQUAWKS_MANAGE, SQUAWKS_REPORT
from hangar.squawks import commands

router = APIRouter(prefix=f"{ORG_PREFIX}/squawks", include_in_schema=False)
Reporter = Annotated[Actor, acting(SQUAWKS_REPORT)]
Manager = Annotated[Actor, acting(SQUAWKS_MANAGE)]


@router.post("", status_code=201)
async def report(request: Request, actor: Reporter, body: commands.NewSquawkBody) -> Response:
    return json_response(await transact(request, commands.report, actor, body), 201)


@router.patch("/{squawk_id}")
async def set_status(
    request: Request, actor: Manager, squawk_id: str, body: commands.StatusBody
) -> Response:
    target = path_id(squawk_id, "squawk")
    return json_response(await transact(request, commands.set_status, actor, target, body))


@router.post("/{squawk_id}/resolve")
async def resolve(request: Request, actor: Manager, squawk_id: str) -> Response:
    target = path_id(squawk_id, "squawk")
    return json_response(await transact(request, commands.resolve, actor, target))


@router.post("/{squawk_id}/escalate")
async def escalate(request: Request, actor: Manager, squawk_id: str) -> Response:
    target = path_id(squawk_id, "squawk")
    return json_response(await transact(request, commands.escalate, actor, target))
