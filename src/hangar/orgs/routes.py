"""/api/orgs/{org_id}/members (members.manage)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Request
from starlette.responses import Response

from hangar.kit.responses import json_response
from hangar.kit.routing import ORG_PREFIX, no_content, path_id, services_of, transact
from hangar.orgs import members
from hangar.orgs.access import Actor, acting
from hangar.orgs.capabilities import MEMBERS_MANAGE

router = APIRouter(prefix=f"{ORG_PREFIX}/members", include_in_schema=False)
Manager = Annotated[Actor, acting(MEMBERS_MANAGE)]


@router.post("", status_code=201)
async def create_member(request: Request, actor: Manager, body: members.NewMemberBody) -> Response:
    """An invitation: a pending membership, and its link, shown this once."""
    public_url = services_of(request).settings.public_url
    created = await transact(request, members.create_member, actor, body, public_url)
    return json_response(created, 201)


@router.delete("/{user_id}", status_code=204)
async def remove_member(request: Request, actor: Manager, user_id: str) -> Response:
    await transact(request, members.remove_member, actor, path_id(user_id, "member"))
    return no_content()
