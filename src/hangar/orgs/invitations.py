"""Invitations: a pending membership becomes active only on its person's own say-so.

An admin's "add this email" makes a pending membership and an invitation whose link the admin
hands to the person. Accepting needs the link AND the person: an account with a password
accepts while signed in as itself and presenting the token (the link proves that this
organization's admin handed it over; without it, whoever set up an account for the email
through another organization could accept); an account that has no password yet sets its
own through the link, which accepts at the same time. A link never sets the password of an
account that has one.

The token is 256 random bits; only its SHA-256 is stored and looked up. Every way a link can
be unusable (unknown, expired, used, membership removed, someone else's) answers the same
404. Callers own the transaction.
"""

from __future__ import annotations

import hashlib
import secrets
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import insert, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from hangar.errors import ApiError
from hangar.ids import new_id
from hangar.orgs.models import Invitation, Membership, Organization, Role, User

LIFETIME = timedelta(days=7)
# token_urlsafe(32) is 43 characters; anything much longer is not one of ours.
MAX_TOKEN_LENGTH = 100


def not_valid() -> ApiError:
    return ApiError(404, "NOT_FOUND", "This invitation link is not valid or has expired")


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def link(public_url: str, token: str) -> str:
    return f"{public_url.rstrip('/')}/invitations/{token}"


@dataclass(frozen=True)
class Issued:
    token: str  # shown once, to the admin who invited
    expires_at: datetime


async def issue(
    conn: AsyncConnection, org_id: uuid.UUID, membership_id: uuid.UUID, now: datetime
) -> Issued:
    token = secrets.token_urlsafe(32)
    await conn.execute(
        insert(Invitation).values(
            id=new_id(),
            membership_id=membership_id,
            org_id=org_id,
            token_hash=token_hash(token),
            created_at=now,
            expires_at=now + LIFETIME,
        )
    )
    return Issued(token, now + LIFETIME)


@dataclass(frozen=True)
class Open:
    """A usable invitation, as its holder may see it."""

    invitation_id: uuid.UUID
    membership_id: uuid.UUID
    org_id: uuid.UUID
    org_name: str
    role_name: str | None
    user_id: uuid.UUID
    email: str
    expires_at: datetime
    needs_password: bool

    def public(self) -> dict[str, Any]:
        """What GET /api/invitations/{token} and the page show the holder of the link."""
        return {
            "org_name": self.org_name,
            "role_name": self.role_name,
            "email": self.email,
            "expires_at": self.expires_at,
            "needs_password": self.needs_password,
        }


async def find(
    conn: AsyncConnection, token: str, now: datetime, *, lock: bool = False
) -> Open | None:
    """The usable invitation behind a token, or None. `lock` holds its rows (PostgreSQL)
    until the transaction ends, so two acceptances of one link queue up."""
    if not token or len(token) > MAX_TOKEN_LENGTH:
        return None
    stmt = (
        select(
            Invitation.id.label("invitation_id"),
            Invitation.membership_id,
            Invitation.org_id,
            Organization.name.label("org_name"),
            Role.name.label("role_name"),
            User.id.label("user_id"),
            User.email,
            Invitation.expires_at,
            User.password_hash.is_(None).label("needs_password"),
        )
        .select_from(Invitation)
        .join(Membership, Membership.id == Invitation.membership_id)
        .join(Organization, Organization.id == Invitation.org_id)
        .join(User, User.id == Membership.user_id)
        .outerjoin(Role, Role.id == Membership.role_id)
        .where(
            Invitation.token_hash == token_hash(token),
            Invitation.accepted_at.is_(None),
            Invitation.expires_at > now,
            Membership.org_id == Invitation.org_id,
            Membership.status == "pending",
            Membership.deleted_at.is_(None),
        )
    )
    if lock:
        # Only the inner-joined rows: PostgreSQL cannot lock the outer-joined role.
        stmt = stmt.with_for_update(of=[Invitation.__table__, Membership.__table__])
    row = (await conn.execute(stmt)).first()
    if row is None:
        return None
    return Open(**row._asdict())


async def accept(conn: AsyncConnection, token: str, user_id: uuid.UUID, now: datetime) -> Open:
    """The signed-in `user_id` accepts the invitation `token` was issued for; 404 if the link
    is not usable or was issued for someone else."""
    found = await find(conn, token, now, lock=True)
    if found is None or found.user_id != user_id or found.needs_password:
        raise not_valid()
    await _activate(conn, found, now)
    return found


async def set_password(
    conn: AsyncConnection, token: str, password_hash: str, now: datetime
) -> Open:
    """The person behind a new account chooses its password through the link, and so accepts.

    404 for an account that already has a password: a link never replaces one.
    """
    found = await find(conn, token, now, lock=True)
    if found is None or not found.needs_password:
        raise not_valid()
    # The WHERE restates "no password yet": of two links used at once, one sets it.
    changed = await conn.execute(
        update(User)
        .where(User.id == found.user_id, User.password_hash.is_(None))
        .values(password_hash=password_hash)
        .returning(User.id)
    )
    if changed.first() is None:
        raise not_valid()
    await _activate(conn, found, now)
    return found


async def _activate(conn: AsyncConnection, found: Open, now: datetime) -> None:
    # Each UPDATE restates the state it expects: no row back means a concurrent acceptance
    # (or a removal) got there first, and the whole transaction is refused.
    used = await conn.execute(
        update(Invitation)
        .where(
            Invitation.id == found.invitation_id,
            Invitation.accepted_at.is_(None),
            Invitation.expires_at > now,
        )
        .values(accepted_at=now)
        .returning(Invitation.id)
    )
    if used.first() is None:
        raise not_valid()
    joined = await conn.execute(
        update(Membership)
        .where(
            Membership.id == found.membership_id,
            Membership.status == "pending",
            Membership.deleted_at.is_(None),
        )
        .values(status="active", joined_at=now)
        .returning(Membership.id)
    )
    if joined.first() is None:
        raise not_valid()
