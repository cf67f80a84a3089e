"""Signing in and out, and the session cookie: the same for POST /api/session, the /login
form and the invitation page, so every door counts the same per-email budget and sets the
same cookie."""

from __future__ import annotations

import uuid
from typing import Any

from starlette.responses import Response

from hangar.auth import sessions
from hangar.kit.errors import ApiError
from hangar.kit.ratelimit import Limit
from hangar.kit.services import Services
from hangar.orgs import access

# Failed attempts per email, in a fixed window: slows guessing, and the lockout it allows
# anyone to cause ends with the window.
SIGN_IN_LIMITS = (Limit(10, 900, "10 failed sign-ins per 15 minutes"),)


async def sign_in_or_refuse(
    services: Services, email: str, password: str
) -> tuple[str, sessions.SignedIn]:
    """A new session, or 401 INVALID_CREDENTIALS, or 429 once this email's failures are spent.

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


async def sign_out(services: Services, session_id: uuid.UUID) -> None:
    async with services.engine.begin() as conn:
        await sessions.sign_out(conn, session_id)


async def session_view(services: Services, signed_in: sessions.SignedIn) -> dict[str, Any]:
    """Who is signed in, their CSRF token, and where they are a member."""
    async with services.engine.connect() as conn:
        orgs = await access.memberships(conn, signed_in.user_id)
    return {
        "user": {"id": str(signed_in.user_id), "email": signed_in.email},
        "csrf_token": signed_in.csrf_token,
        "memberships": orgs,
    }


def set_session_cookie(response: Response, services: Services, token: str) -> None:
    """The session cookie, for the JSON sign-in, the /login form and the invitation page."""
    response.set_cookie(
        sessions.COOKIE,
        token,
        max_age=int(sessions.ABSOLUTE_TIMEOUT.total_seconds()),
        httponly=True,
        samesite="lax",
        secure=services.settings.public_url.startswith("https://"),
        path="/",
    )
