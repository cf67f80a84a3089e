"""Who is calling a session endpoint, and whether they may: the one place it is decided.

Order: a live session (401), the CSRF header on unsafe methods (403 CSRF_FAILED),
membership of the organization in the path (404, so existence is not revealed), then the
capability (403 FORBIDDEN naming it). API keys are never accepted here.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any, TypedDict

from fastapi import Depends, Request
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from hangar.auth import sessions
from hangar.kit.errors import Forbidden, NotFound, Unauthorized
from hangar.kit.routing import ServicesDep, before_body, path_id, services_of
from hangar.kit.services import Services
from hangar.orgs.capabilities import capabilities_of
from hangar.orgs.models import Membership, Organization, Role

_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_NO_SESSION = "Sign in first: no session, or it has expired"


@dataclass(frozen=True)
class Actor:
    """A signed-in user acting inside one organization."""

    user_id: uuid.UUID
    org_id: uuid.UUID
    role_name: str | None
    capabilities: frozenset[str]
    session: sessions.SignedIn

    def can(self, capability: str) -> bool:
        return capability in self.capabilities


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


async def actor_in(
    conn: AsyncConnection, signed_in: sessions.SignedIn, org_id: uuid.UUID
) -> Actor | None:
    """The signed-in user as an active member of `org_id`, or None: the one membership
    decision, for the JSON API (a 404) and the screens (their 404 page) alike."""
    role = (
        await conn.execute(
            select(Role.name)
            .select_from(Membership)
            .outerjoin(Role, Role.id == Membership.role_id)
            .where(
                Membership.org_id == org_id,
                Membership.user_id == signed_in.user_id,
                Membership.deleted_at.is_(None),
                Membership.status == "active",
            )
        )
    ).first()
    if role is None:
        return None
    return Actor(
        user_id=signed_in.user_id,
        org_id=org_id,
        role_name=role.name,
        capabilities=frozenset(capabilities_of(role.name)),
        session=signed_in,
    )


def may(actor: Actor, *required: str) -> bool:
    """The one capability decision: any one of `required` suffices; none required, any member."""
    return not required or any(actor.can(c) for c in required)


class MembershipView(TypedDict):
    org_id: str
    org_name: str
    role_name: str | None
    capabilities: list[str]


async def memberships(conn: AsyncConnection, user_id: uuid.UUID) -> list[MembershipView]:
    """The organizations the user may act in: active memberships only (an invitation not yet
    accepted gives no access)."""
    rows = await conn.execute(
        select(Organization.id, Organization.name, Role.name.label("role_name"))
        .select_from(Membership)
        .join(Organization, Organization.id == Membership.org_id)
        .outerjoin(Role, Role.id == Membership.role_id)
        .where(
            Membership.user_id == user_id,
            Membership.deleted_at.is_(None),
            Membership.status == "active",
        )
        .order_by(Organization.name)
    )
    return [
        MembershipView(
            org_id=str(r.id),
            org_name=r.name,
            role_name=r.role_name,
            capabilities=list(capabilities_of(r.role_name)),
        )
        for r in rows
    ]


async def _actor(request: Request, services: Services, signed_in: sessions.SignedIn) -> Actor:
    # Not found, never "No such organization": existence is not revealed.
    org_id = path_id(str(request.path_params.get("org_id", "")))
    async with services.engine.connect() as conn:
        actor = await actor_in(conn, signed_in, org_id)
    if actor is None:
        raise NotFound()
    return actor


def acting(*required: str) -> Any:
    """A dependency: the caller as a member of the path's organization holding `required`.

    With several capabilities, any one of them suffices (e.g. reservations.own or .manage);
    the route then decides what the weaker one allows.
    """

    async def dependency(
        request: Request,
        services: ServicesDep,
        signed_in: sessions.SignedIn = Depends(current_session),
    ) -> Actor:
        actor = await _actor(request, services, signed_in)
        if not may(actor, *required):
            raise Forbidden(f"This needs the capability {' or '.join(required)}")
        return actor

    return Depends(dependency)
