"""/api/invitations/{token}: the invited person's side of joining an organization.

- GET: what the link invites to (no session needed: the link is the credential).
- POST .../accept: the account with the invited email accepts, signed in as itself (with
  the CSRF header, as every session POST); 409 ALREADY_MEMBER if it is a member already.
- POST .../password: while no account with the invited email has a password, the link's
  holder chooses it; that accepts the invitation and signs the person in. No session is
  needed; a request that brings one anyway carries its CSRF header, as every unsafe session
  request does. 409 ACCOUNT_EXISTS if another organization's link made the account at the
  same moment: sign in and accept.

Every unusable link, and a link used by another account, answers the same 404.
"""

from __future__ import annotations

import asyncio
from typing import Annotated

from fastapi import APIRouter, Depends, Request
from pydantic import Field
from starlette.responses import Response

from hangar.auth import sessions
from hangar.auth.passwords import hash_password
from hangar.auth.session_routes import session_body, set_session_cookie
from hangar.kit.bodies import RequestBody
from hangar.kit.responses import json_response
from hangar.kit.routing import services_of
from hangar.orgs import invitations
from hangar.orgs.access import csrf_if_signed_in, current_session
from hangar.services import Services

router = APIRouter(prefix="/api/invitations/{token}", include_in_schema=False)


class NewPassword(RequestBody):
    password: str = Field(min_length=8, max_length=1024)


def _no_store(response: Response) -> Response:
    # The answers concern a live credential (the link): no cache may keep them.
    response.headers["Cache-Control"] = "no-store"
    return response


@router.get("")
async def show(request: Request, token: str) -> Response:
    services = services_of(request)
    async with services.engine.connect() as conn:
        found = await invitations.find(conn, token, services.clock.now())
    if found is None:
        raise invitations.not_valid()
    return _no_store(json_response(found.public()))


@router.post("/accept")
async def accept(
    request: Request,
    token: str,
    signed_in: Annotated[sessions.SignedIn, Depends(current_session)],
) -> Response:
    services = services_of(request)
    async with services.engine.begin() as conn:
        await invitations.accept(conn, token, signed_in.user_id, services.clock.now())
    return _no_store(await session_body(services, signed_in))


async def choose_password(
    services: Services, token: str, password: str
) -> tuple[str, sessions.SignedIn]:
    """Sets the invited email's password through its link, accepts, and starts a session (the
    cookie's value and the session). Shared by this API and the invitation page."""
    async with services.engine.connect() as conn:
        found = await invitations.find(conn, token, services.clock.now())
    if found is None or not found.needs_password:
        raise invitations.not_valid()
    # argon2 is deliberately slow: off the event loop, and outside the transaction.
    hashed = await asyncio.to_thread(hash_password, password)
    now = services.clock.now()
    async with services.engine.begin() as conn:
        # Checked again under lock: the link may have been used meanwhile.
        accepted = await invitations.set_password(conn, token, hashed, now)
        return await sessions.start(conn, accepted.user_id, accepted.email, now)


@router.post("/password", dependencies=[Depends(csrf_if_signed_in)])
async def set_password(request: Request, token: str, body: NewPassword) -> Response:
    services = services_of(request)
    cookie, signed_in = await choose_password(services, token, body.password)
    response = await session_body(services, signed_in)
    set_session_cookie(response, services, cookie)
    return _no_store(response)
