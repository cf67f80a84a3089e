"""POST/GET/DELETE /api/session: signing in and out (interfaces.md §3)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request
from pydantic import Field
from starlette.responses import Response

from hangar.auth import sessions
from hangar.auth.ratelimit import Limit
from hangar.kit.bodies import RequestBody
from hangar.kit.errors import ApiError
from hangar.kit.responses import json_response
from hangar.kit.routing import services_of
from hangar.orgs.access import current_session
from hangar.services import Services

router = APIRouter(include_in_schema=False)

# Failed attempts per email, in a fixed window: slows guessing, and the lockout it allows
# anyone to cause ends with the window.
SIGN_IN_LIMITS = (Limit(10, 900, "10 failed sign-ins per 15 minutes"),)


class Credentials(RequestBody):
    email: str = Field(min_length=3, max_length=320)
    password: str = Field(min_length=1, max_length=1024)


async def session_body(services: Services, signed_in: sessions.SignedIn) -> Response:
    """The session's JSON: who is signed in, their CSRF token, and where they are a member."""
    async with services.engine.connect() as conn:
        orgs = await sessions.memberships(conn, signed_in.user_id)
    return json_response(
        {
            "user": {"id": str(signed_in.user_id), "email": signed_in.email},
            "csrf_token": signed_in.csrf_token,
            "memberships": orgs,
        }
    )


async def sign_in_or_refuse(
    services: Services, email: str, password: str
) -> tuple[str, sessions.SignedIn]:
    """A new session, or 401 INVALID_CREDENTIALS, or 429 once this email's failures are spent.

    Shared by POST /api/session and the /login form, so both doors count the same budget.
    The budget is checked before the password, so a spent budget gives a guesser nothing.
    """
    now = services.clock.now()
    subject = f"sign-in:{email.strip().lower()}"
    refused = await services.limiter.exceeded(subject, SIGN_IN_LIMITS, now)
    if refused is not None:
        raise ApiError(429, "RATE_LIMITED", f"Too many failed sign-ins: {refused.label}")
    async with services.engine.begin() as conn:
        result = await sessions.sign_in(conn, email, password, now)
    if result is None:
        await services.limiter.hit(subject, SIGN_IN_LIMITS, now)
        raise ApiError(401, "INVALID_CREDENTIALS", "Wrong email or password")
    return result


def set_session_cookie(response: Response, services: Services, token: str) -> None:
    """The session cookie, for the JSON sign-in and the /login form alike."""
    response.set_cookie(
        sessions.COOKIE,
        token,
        max_age=int(sessions.ABSOLUTE_TIMEOUT.total_seconds()),
        httponly=True,
        samesite="lax",
        secure=services.settings.public_url.startswith("https://"),
        path="/",
    )


@router.post("/api/session")
async def sign_in(request: Request, credentials: Credentials) -> Response:
    services = services_of(request)
    token, signed_in = await sign_in_or_refuse(services, credentials.email, credentials.password)
    response = await session_body(services, signed_in)
    set_session_cookie(response, services, token)
    return response


@router.get("/api/session")
async def who_am_i(
    request: Request, signed_in: Annotated[sessions.SignedIn, Depends(current_session)]
) -> Response:
    return await session_body(services_of(request), signed_in)


@router.delete("/api/session", status_code=204)
async def sign_out(
    request: Request, signed_in: Annotated[sessions.SignedIn, Depends(current_session)]
) -> Response:
    services = services_of(request)
    async with services.engine.begin() as conn:
        await sessions.sign_out(conn, signed_in.session_id)
    response = Response(status_code=204)
    response.delete_cookie(sessions.COOKIE, path="/")
    return response
