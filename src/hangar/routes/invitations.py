"""/api/invitations/{token}: the invited person's side of joining an organization.

- GET: what the link invites to (no session needed: the link is the credential): the
  organization, the role, the email and the expiry, the same fields whatever the email's
  history (nothing says whether it has an account).
- POST .../accept: the account with the invited email accepts, signed in as itself (with
  the CSRF header, as every session POST); 409 ALREADY_MEMBER if it is a member already.
- POST .../password: while no account has the invited email, the link's holder makes it,
  choosing its password; that accepts the invitation and signs the person in. No session is
  needed; a request that brings one anyway carries its CSRF header, as every unsafe session
  request does. 409 ACCOUNT_EXISTS when the email has an account (also one made by another
  organization's link at the same moment): sign in and accept, or ask the operator for a
  password reset link.

Every unusable link, and a link used by another account, answers the same 404.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends
from pydantic import Field
from starlette.responses import Response

from hangar.auth import passwords, sessions
from hangar.http.access import csrf_if_signed_in, current_session, set_session_cookie
from hangar.http.responses import json_response
from hangar.http.routing import JsonRoute, Now, ServicesDep, Tx
from hangar.kit.bodies import RequestBody
from hangar.orgs import actors, service

router = APIRouter(
    prefix="/api/invitations/{token}", include_in_schema=False, route_class=JsonRoute
)


class NewPassword(RequestBody):
    password: str = Field(min_length=passwords.MIN_LENGTH, max_length=passwords.MAX_LENGTH)


@router.get("")
async def show(conn: Tx, now: Now, token: str) -> Response:
    found = await service.open_link(conn, token, now)
    return json_response(found.public())


@router.post("/accept")
async def accept(
    token: str,
    signed_in: Annotated[sessions.SignedIn, Depends(current_session)],
    conn: Tx,
    now: Now,
) -> Response:
    await service.accept(conn, token, signed_in.user_id, now)
    return json_response(await actors.session_view(conn, signed_in))


@router.post("/password", dependencies=[Depends(csrf_if_signed_in)])
async def set_password(services: ServicesDep, token: str, body: NewPassword) -> Response:
    new = await service.choose_password(services, token, body.password)
    response = json_response(new.view)
    set_session_cookie(response, services, new.token)
    return response
