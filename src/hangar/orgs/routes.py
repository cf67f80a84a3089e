"""/api/orgs/{org_id}/members (members.manage), and the plumbing every product route shares.

Routes stay thin: the capability comes from `acting`, the path id from `path_id`, and
`transact` runs one command in one transaction, with the clock's time.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, TypeVar

from fastapi import APIRouter, Request
from starlette.responses import Response

from hangar.errors import ApiError
from hangar.external.responses import json_response
from hangar.ids import parse_id
from hangar.orgs import members
from hangar.orgs.access import Actor, acting
from hangar.orgs.capabilities import MEMBERS_MANAGE
from hangar.services import Services

T = TypeVar("T")
ORG_PREFIX = "/api/orgs/{org_id}"

router = APIRouter(prefix=f"{ORG_PREFIX}/members", include_in_schema=False)
Manager = Annotated[Actor, acting(MEMBERS_MANAGE)]


def path_id(text: str, what: str) -> uuid.UUID:
    """An id from the path; one that cannot be ours is as unknown as one of another org."""
    parsed = parse_id(text)
    if parsed is None:
        raise ApiError(404, "NOT_FOUND", f"No such {what}")
    return parsed


async def transact(request: Request, command: Callable[..., Awaitable[T]], *args: Any) -> T:
    """`command(conn, *args, now)` in one transaction: its change and its events commit together."""
    services: Services = request.app.state.services
    async with services.engine.begin() as conn:
        return await command(conn, *args, services.clock.now())


def no_content() -> Response:
    return Response(status_code=204)


@router.post("", status_code=201)
async def create_member(request: Request, actor: Manager, body: members.NewMemberBody) -> Response:
    """An invitation: a pending membership, and its link, shown this once."""
    public_url = request.app.state.services.settings.public_url
    created = await transact(request, members.create_member, actor, body, public_url)
    return json_response(created, 201)


@router.delete("/{user_id}", status_code=204)
async def remove_member(request: Request, actor: Manager, user_id: str) -> Response:
    await transact(request, members.remove_member, actor, path_id(user_id, "member"))
    return no_content()
