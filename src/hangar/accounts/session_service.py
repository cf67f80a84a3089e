"""Signing in and out, and the session cookie: the same for POST /api/session, the /login
form and the invitation page, so every door counts the same per-email budget and sets the
same cookie."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import TypedDict

from sqlalchemy.ext.asyncio import AsyncConnection
from starlette.responses import Response

from hangar.auth import sessions
from hangar.kit.errors import RateLimited, Unauthorized
from hangar.kit.ratelimit import Limit
from hangar.kit.services import Services
from hangar.orgs import access

# Failed attempts per email, in a fixed window: slows guessing, and the lockout it allows
# anyone to cause ends with the window.
SIGN_IN_LIMITS = (Limit(10, 900, "10 failed sign-ins per 15 minutes"),)


class UserView(TypedDict):
    id: str
    email: str


class SessionView(TypedDict):
    """GET /api/session: who is signed in, their CSRF token, and where they are a member."""

    user: UserView
    csrf_token: str
    memberships: list[access.MembershipView]


@dataclass(frozen=True)
class Started:
    """A session just started: the cookie's value, and what GET /api/session says of it."""

    token: str
    view: SessionView


async def session_view(conn: AsyncConnection, signed_in: sessions.SignedIn) -> SessionView:
    orgs = await access.memberships(conn, signed_in.user_id)
    user = UserView(id=str(signed_in.user_id), email=signed_in.email)
    return SessionView(user=user, csrf_token=signed_in.csrf_token, memberships=orgs)


async def started(conn: AsyncConnection, new: tuple[str, sessions.SignedIn]) -> Started:
    token, signed_in = new
    return Started(token, await session_view(conn, signed_in))


async def sign_in_or_refuse(services: Services, email: str, password: str) -> Started:
    """A new session, or 401 INVALID_CREDENTIALS, or 429 once this email's failures are spent.

    The budget is checked before the password, so a spent budget gives a guesser nothing.
    Its transaction is its own, not the request's (`Tx`): the budget, like the body's
    validation, comes before any database work.
    """
    now = services.clock.now()
    subject = f"sign-in:{email.strip().lower()}"
    refused = await services.limiter.exceeded(subject, SIGN_IN_LIMITS, now)
    if refused is not None:
        raise RateLimited(f"Too many failed sign-ins: {refused.label}")
    async with services.engine.begin() as conn:
        result = await sessions.sign_in(conn, email, password, now)
        new = None if result is None else await started(conn, result)
    if new is None:
        await services.limiter.hit(subject, SIGN_IN_LIMITS, now)
        raise Unauthorized("Wrong email or password", "INVALID_CREDENTIALS")
    return new


async def sign_out(conn: AsyncConnection, session_id: uuid.UUID) -> None:
    await sessions.sign_out(conn, session_id)


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
