"""Who acts inside an organization, and what they may do: the one membership decision and
the one capability decision, for the JSON API, the screens and the commands alike. Free of
the web framework (hangar.http.access turns a request into an `Actor`)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import TypedDict

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from hangar.audit.service import Who
from hangar.auth import sessions, two_factor
from hangar.orgs.capabilities import ORG_SETTINGS_CAPABILITIES, ROLE_NAMES, capabilities_of
from hangar.orgs.models import Membership, Organization, Role


@dataclass(frozen=True)
class Actor:
    """A signed-in user acting inside one organization."""

    user_id: uuid.UUID
    org_id: uuid.UUID
    role_name: str | None
    capabilities: frozenset[str]
    session: sessions.SignedIn
    # What the role grants but the organization withholds until the person sets up
    # two-factor sign-in (its `require_two_factor`): Org Settings' capabilities, or none.
    withheld: frozenset[str] = frozenset()
    # Where the request came from (hangar.http.client_address): what the audit log records.
    client_address: str | None = None

    def can(self, capability: str) -> bool:
        return capability in self.capabilities

    @property
    def who(self) -> Who:
        """The actor as the audit log records them: account, email, client address."""
        return Who.person(self.user_id, self.session.email, self.client_address)


async def actor_in(
    conn: AsyncConnection,
    signed_in: sessions.SignedIn,
    org_id: uuid.UUID,
    client_address: str | None = None,
) -> Actor | None:
    """The signed-in user as an active member of `org_id`, or None: the one membership
    decision, for the JSON API (a 404) and the screens (their 404 page) alike."""
    role = (
        await conn.execute(
            select(Role.name, Organization.require_two_factor)
            .select_from(Membership)
            .join(Organization, Organization.id == Membership.org_id)
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
    granted = frozenset(capabilities_of(role.name))
    withheld: frozenset[str] = frozenset()
    at_stake = granted & ORG_SETTINGS_CAPABILITIES if role.require_two_factor else frozenset()
    if at_stake and not await two_factor.is_enabled(conn, signed_in.user_id):
        withheld = at_stake
    return Actor(
        user_id=signed_in.user_id,
        org_id=org_id,
        role_name=role.name,
        capabilities=granted - withheld,
        session=signed_in,
        withheld=withheld,
        client_address=client_address,
    )


async def members_who_may(
    conn: AsyncConnection, org_id: uuid.UUID, capability: str
) -> tuple[str | None, list[uuid.UUID]]:
    """The organization's name (None: no such organization) and the accounts of its active
    members whose role grants `capability`, by the same decision as `actor_in` and `may`:
    whom hangar tells about what those members manage (a disabled webhook:
    hangar.webhooks.delivery.alerts)."""
    roles = [name for name in ROLE_NAMES if capability in capabilities_of(name)]
    name = await conn.scalar(select(Organization.name).where(Organization.id == org_id))
    found = await conn.scalars(
        select(Membership.user_id)
        .join(Role, Role.id == Membership.role_id)
        .where(
            Membership.org_id == org_id,
            Membership.deleted_at.is_(None),
            Membership.status == "active",
            Role.name.in_(roles),
        )
        .order_by(Membership.joined_at, Membership.id)
    )
    return name, list(found)


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


# The signed-in person, as GET /api/session (and each way of starting a session) shows them.


class UserView(TypedDict):
    id: str
    email: str


class SessionView(TypedDict):
    """GET /api/session: who is signed in, their CSRF token, and where they are a member."""

    user: UserView
    csrf_token: str
    memberships: list[MembershipView]


@dataclass(frozen=True)
class Started:
    """A session just started: the cookie's value, and what GET /api/session says of it."""

    token: str
    view: SessionView


async def session_view(conn: AsyncConnection, signed_in: sessions.SignedIn) -> SessionView:
    orgs = await memberships(conn, signed_in.user_id)
    user = UserView(id=str(signed_in.user_id), email=signed_in.email)
    return SessionView(user=user, csrf_token=signed_in.csrf_token, memberships=orgs)


async def started(conn: AsyncConnection, new: tuple[str, sessions.SignedIn]) -> Started:
    token, signed_in = new
    return Started(token, await session_view(conn, signed_in))
