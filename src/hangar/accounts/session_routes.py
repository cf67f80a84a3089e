"""POST/GET/DELETE /api/session: signing in and out (interfaces.md §3).

The actions are accounts/session_service.py's, shared with the /login form."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request
from pydantic import Field
from starlette.responses import Response

from hangar.accounts import session_service
from hangar.auth import sessions
from hangar.kit.bodies import RequestBody
from hangar.kit.responses import json_response
from hangar.kit.routing import services_of
from hangar.orgs.access import current_session

router = APIRouter(include_in_schema=False)


class Credentials(RequestBody):
    email: str = Field(min_length=3, max_length=320)
    password: str = Field(min_length=1, max_length=1024)


@router.post("/api/session")
async def sign_in(request: Request, credentials: Credentials) -> Response:
    services = services_of(request)
    token, signed_in = await session_service.sign_in_or_refuse(
        services, credentials.email, credentials.password
    )
    response = json_response(await session_service.session_view(services, signed_in))
    session_service.set_session_cookie(response, services, token)
    return response


@router.get("/api/session")
async def who_am_i(
    request: Request, signed_in: Annotated[sessions.SignedIn, Depends(current_session)]
) -> Response:
    return json_response(await session_service.session_view(services_of(request), signed_in))


@router.delete("/api/session", status_code=204)
async def sign_out(
    request: Request, signed_in: Annotated[sessions.SignedIn, Depends(current_session)]
) -> Response:
    await session_service.sign_out(services_of(request), signed_in.session_id)
    response = Response(status_code=204)
    response.delete_cookie(sessions.COOKIE, path="/")
    return response
