"""Who is calling a session endpoint, and whether they may: the one place it is decided.

Order: a live session (401), the CSRF header on unsafe methods (403 CSRF_FAILED),
membership of the organization in the path (404, so existence is not revealed), then the
capability (403 FORBIDDEN naming it). API keys are never accepted here.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from fastapi import Depends, Request
from starlette.responses import Response

from hangar.auth import challenges, sessions
from hangar.http import idempotency
from hangar.http.routing import ServicesDep, before_body, client_of, path_id, services_of
from hangar.kit.container import Services
from hangar.kit.errors import Forbidden, NotFound, Unauthorized
from hangar.orgs.actors import Actor, actor_in, may

_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_NO_SESSION = "Sign in first: no session, or it has expired"


@before_body
async def current_session(request: Request) -> sessions.SignedIn:
    """The live session the request's cookie names, its CSRF token checked on unsafe methods;
    401 or 403 otherwise. The JSON routes settle it before reading the body (`before_body`);
    what it found is kept on the request, so FastAPI's own call of it reads no row again."""
    known: sessions.SignedIn | None = getattr(request.state, "session", None)
    if known is not None:
        return known
    token = request.cookies.get(sessions.COOKIE)
    if not token:
        raise Unauthorized(_NO_SESSION)  # before any database work: anonymous floods are cheap
    services = services_of(request)
    # The session's own short transaction, committed before the action's (`Tx`) begins: a
    # refused action still slides the idle window, an expired row is deleted even though the
    # request is answered 401, and on SQLite the touch's write lock is not held for the rest
    # of the request.
    async with services.engine.begin() as conn:
        signed_in = await sessions.resume(conn, token, services.clock.now())
    if signed_in is None:
        raise Unauthorized(_NO_SESSION)
    _check_csrf(request, signed_in)
    request.state.session = signed_in
    return signed_in


def _check_csrf(request: Request, signed_in: sessions.SignedIn) -> None:
    if request.method not in _SAFE_METHODS and not sessions.csrf_ok(
        signed_in.csrf_token, request.headers.get("x-csrf-token")
    ):
        raise Forbidden("The X-CSRF-Token header is missing or wrong", "CSRF_FAILED")


async def csrf_if_signed_in(request: Request, services: ServicesDep) -> None:
    """For a route that needs no session: a request that comes with a live session cookie
    still carries that session's CSRF token, as every unsafe session request does."""
    token = request.cookies.get(sessions.COOKIE)
    if not token:
        return
    async with services.engine.begin() as conn:
        signed_in = await sessions.resume(conn, token, services.clock.now())
    if signed_in is not None:
        _check_csrf(request, signed_in)


async def _actor(request: Request, services: Services, signed_in: sessions.SignedIn) -> Actor:
    # Not found, never "No such organization": existence is not revealed.
    org_id = path_id(str(request.path_params.get("org_id", "")))
    async with services.engine.connect() as conn:
        actor = await actor_in(conn, signed_in, org_id, client_of(request))
    if actor is None:
        raise NotFound()
    return actor


def acting(*required: str) -> Any:
    """A dependency: the caller as a member of the path's organization holding `required`.

    With several capabilities, any one of them suffices (e.g. reservations.own or .manage);
    the route then decides what the weaker one allows.

    Once the caller may act, a POST's Idempotency-Key is claimed (hangar.http.idempotency):
    every route of the management API acts through here, so none of them can forget it.
    """

    async def dependency(
        request: Request,
        services: ServicesDep,
        signed_in: sessions.SignedIn = Depends(current_session),
    ) -> Actor:
        actor = await _actor(request, services, signed_in)
        if not may(actor, *required):
            if actor.withheld & set(required):
                raise two_factor_first()
            raise Forbidden(f"This needs the capability {' or '.join(required)}")
        await idempotency.claim(request, services, actor)
        return actor

    return Depends(dependency)


def two_factor_first() -> Forbidden:
    return Forbidden(
        "This organization requires two-factor sign-in for Org Settings: set it up first "
        "(POST /api/session/two-factor, or Two-factor sign-in in Org Settings)",
        "TWO_FACTOR_REQUIRED",
    )


def set_session_cookie(response: Response, services: Services, token: str) -> None:
    """The session cookie, for the JSON sign-in, the /login form and the invitation page."""
    _set_cookie(response, services, sessions.COOKIE, token, sessions.ABSOLUTE_TIMEOUT)


def set_challenge_cookie(response: Response, services: Services, token: str) -> None:
    """The cookie of a sign-in waiting for its second factor (hangar.auth.challenges), for
    its few minutes, as the session cookie is otherwise."""
    cookie, lifetime = challenges.CHALLENGE_COOKIE, challenges.CHALLENGE_LIFETIME
    _set_cookie(response, services, cookie, token, lifetime)


def _set_cookie(
    response: Response, services: Services, name: str, token: str, lifetime: timedelta
) -> None:
    """A credential's cookie: script cannot read it, other sites' posts do not carry it, and
    behind https it goes over https only."""
    response.set_cookie(
        name,
        token,
        max_age=int(lifetime.total_seconds()),
        httponly=True,
        samesite="lax",
        secure=services.settings.public_url.startswith("https://"),
        path="/",
    )
