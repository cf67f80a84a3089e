"""/api/orgs/{org_id}: the organization's own settings (org.settings)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter
from starlette.responses import Response

from hangar.http.access import acting
from hangar.http.responses import json_response
from hangar.http.routing import ORG_PREFIX, JsonRoute, Now, Tx
from hangar.kit.bodies import RequestBody
from hangar.orgs import service
from hangar.orgs.actors import Actor
from hangar.orgs.capabilities import ORG_SETTINGS

router = APIRouter(prefix=ORG_PREFIX, include_in_schema=False, route_class=JsonRoute)
Admin = Annotated[Actor, acting(ORG_SETTINGS)]


class OrganizationPatch(RequestBody):
    require_two_factor: bool


@router.get("")
async def get_organization(actor: Admin, conn: Tx) -> Response:
    return json_response(await service.organization(conn, actor.org_id))


@router.patch("")
async def patch_organization(actor: Admin, conn: Tx, now: Now, body: OrganizationPatch) -> Response:
    required = body.require_two_factor
    return json_response(
        await service.require_two_factor_of(conn, actor.who, actor.org_id, required, now)
    )
