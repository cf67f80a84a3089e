"""/api/orgs/{org_id}/members (members.manage)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter
from starlette.responses import Response

from hangar.http.access import acting
from hangar.http.responses import json_response
from hangar.http.routing import ORG_PREFIX, JsonRoute, Now, ServicesDep, Tx, no_content, path_id
from hangar.orgs import service
from hangar.orgs.actors import Actor
from hangar.orgs.capabilities import MEMBERS_MANAGE

router = APIRouter(prefix=f"{ORG_PREFIX}/members", include_in_schema=False, route_class=JsonRoute)
Manager = Annotated[Actor, acting(MEMBERS_MANAGE)]


@router.post("", status_code=201)
async def create_member(
    services: ServicesDep, actor: Manager, now: Now, body: service.NewMemberBody
) -> Response:
    """An invitation, in a transaction of its own, not the request's `Tx` (see
    orgs.service.invite)."""
    return json_response(await service.invite(services, actor, body, now), 201)


@router.delete("/{user_id}", status_code=204)
async def remove_member(actor: Manager, conn: Tx, now: Now, user_id: str) -> Response:
    await service.remove_member(conn, actor, path_id(user_id, "member"), now)
    return no_content()
