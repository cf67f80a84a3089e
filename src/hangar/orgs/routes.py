"""/api/orgs/{org_id}/members (members.manage)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter
from starlette.responses import Response

from hangar.kit.responses import json_response
from hangar.kit.routing import ORG_PREFIX, JsonRoute, Now, ServicesDep, Tx, no_content, path_id
from hangar.orgs import handover, members
from hangar.orgs.access import acting
from hangar.orgs.actors import Actor
from hangar.orgs.capabilities import MEMBERS_MANAGE

router = APIRouter(prefix=f"{ORG_PREFIX}/members", include_in_schema=False, route_class=JsonRoute)
Manager = Annotated[Actor, acting(MEMBERS_MANAGE)]


@router.post("", status_code=201)
async def create_member(
    services: ServicesDep, actor: Manager, now: Now, body: members.NewMemberBody
) -> Response:
    """An invitation: a pending membership, and its link, mailed to the person (with
    HANGAR_SMTP_URL) or shown this once.

    Its transaction is its own, not the request's (`Tx`): it commits before the mail goes
    out, so a mail that fails loses no invitation, and no mailed link points at an
    invitation that a failed commit never made.
    """
    async with services.engine.begin() as conn:
        invited = await members.create_member(conn, actor, body, now)
    handed = await handover.hand_over(services.settings, invited, now)
    answer = members.invited_member(invited, body, handed.for_admin(invited.member.email))
    return json_response(answer, 201)


@router.delete("/{user_id}", status_code=204)
async def remove_member(actor: Manager, conn: Tx, now: Now, user_id: str) -> Response:
    await members.remove_member(conn, actor, path_id(user_id, "member"), now)
    return no_content()
