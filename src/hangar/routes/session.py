"""POST/GET/DELETE /api/session: signing in and out (interfaces.md §3).

The actions are accounts/service/sign_in.py's, shared with the /login form. Signing in runs
in a transaction of its own (its body is validated and the failure budgets checked before
any database work); who-am-I and signing out in the request's (`Tx`)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request
from pydantic import Field
from starlette.responses import Response

from hangar.accounts.service import sign_in as accounts
from hangar.auth import passwords, sessions
from hangar.http.access import current_session, set_challenge_cookie, set_session_cookie
from hangar.http.error_handlers import error_response
from hangar.http.responses import json_response
from hangar.http.routing import JsonRoute, ServicesDep, Tx, before_body, client_of, services_of
from hangar.kit.bodies import RequestBody
from hangar.orgs import actors

router = APIRouter(include_in_schema=False, route_class=JsonRoute)


class Credentials(RequestBody):
    email: str = Field(min_length=3, max_length=320)
    password: str = Field(min_length=1, max_length=passwords.MAX_LENGTH)


@before_body
async def address_budget_left(request: Request) -> None:
    """429 for a client address whose failed sign-ins are spent, before its body is read or
    parsed: the flood it refuses costs a limiter lookup per request (bench G12c). Looked up
    once: FastAPI's own call of it, after the body, finds it done."""
    if getattr(request.state, "sign_in_address_checked", False):
        return
    services = services_of(request)
    await accounts.refuse_spent_address(services, client_of(request), services.clock.now())
    request.state.sign_in_address_checked = True


@router.post("/api/session", dependencies=[Depends(address_budget_left)])
async def sign_in(request: Request, services: ServicesDep, credentials: Credentials) -> Response:
    new = await accounts.sign_in_or_refuse(
        services, credentials.email, credentials.password, client_of(request)
    )
    if isinstance(new, accounts.Challenged):
        # The password was right; the account's code comes next, with this cookie
        # (POST /api/session/two-factor/verify).
        needed = accounts.two_factor_required()
        response = error_response(needed.status, needed.code, needed.detail, None, needed.headers)
        set_challenge_cookie(response, services, new.token)
        return response
    response = json_response(new.view)
    set_session_cookie(response, services, new.token)
    return response


@router.get("/api/session")
async def who_am_i(
    signed_in: Annotated[sessions.SignedIn, Depends(current_session)], conn: Tx
) -> Response:
    return json_response(await actors.session_view(conn, signed_in))


@router.delete("/api/session", status_code=204)
async def sign_out(
    signed_in: Annotated[sessions.SignedIn, Depends(current_session)], conn: Tx
) -> Response:
    await accounts.sign_out(conn, signed_in.session_id)
    response = Response(status_code=204)
    response.delete_cookie(sessions.COOKIE, path="/")
    return response
