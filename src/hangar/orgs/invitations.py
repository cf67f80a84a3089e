"""Invitations: a pending membership becomes active only on its person's own say-so.

An admin's "add this email" makes a pending membership and an invitation whose link the admin
hands to the person. The invitation names an email, not an account: its membership belongs to
a placeholder user made for it (no email, no password), whatever the email's history.
Accepting needs the link AND the person:

- an account with that email and a password accepts while signed in as itself, presenting the
  token (the link proves that this organization's admin handed it over): the membership moves
  from the placeholder to the account, and the placeholder is deleted;
- while no account with that email has a password, the link lets its holder choose one, which
  accepts at the same time: the placeholder itself becomes the account (its id stays the
  membership's), or, for an account made before invitations named emails that never got a
  password, that account takes the password and the membership.

A link never sets the password of an account that has one. Two organizations may invite one
new email at once: the unique email decides which placeholder becomes the account, and the
other link is then accepted by signing in.

The token is 256 random bits; only its SHA-256 is stored and looked up. Every way a link can
be unusable (unknown, expired, used, membership removed, someone else's) answers the same
404. Callers own the transaction; acceptance locks its rows and restates the state it expects
in each write, so a link is used once.
"""

from __future__ import annotations

import hashlib
import secrets
import uuid
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import TypedDict

from sqlalchemy import delete, func, insert, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection

from hangar.auth.models import User
from hangar.ids import new_id
from hangar.kit.errors import Conflict, NotFound
from hangar.orgs.commands import refuse_if_member
from hangar.orgs.models import Invitation, Membership, Organization, Role

LIFETIME = timedelta(days=7)
# token_urlsafe(32) is 43 characters; anything much longer is not one of ours.
MAX_TOKEN_LENGTH = 100


def not_valid() -> NotFound:
    return NotFound(detail="This invitation link is not valid or has expired")


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def link(public_url: str, token: str) -> str:
    return f"{public_url.rstrip('/')}/invitations/{token}"


@dataclass(frozen=True)
class Issued:
    token: str  # shown once, to the admin who invited
    expires_at: datetime


async def issue(
    conn: AsyncConnection, org_id: uuid.UUID, membership_id: uuid.UUID, email: str, now: datetime
) -> Issued:
    """The link for a pending membership, inviting `email` (lower-cased by the caller)."""
    token = secrets.token_urlsafe(32)
    await conn.execute(
        insert(Invitation).values(
            id=new_id(),
            membership_id=membership_id,
            org_id=org_id,
            token_hash=token_hash(token),
            email=email,
            created_at=now,
            expires_at=now + LIFETIME,
        )
    )
    return Issued(token, now + LIFETIME)


@dataclass(frozen=True)
class Account:
    id: uuid.UUID
    has_password: bool
    # A live membership in another organization: such an account is already someone's
    # there, so no link may hand it to its holder, even while it has no password.
    belongs_elsewhere: bool = False


async def account_with(conn: AsyncConnection, email: str, *, lock: bool = False) -> Account | None:
    """The account that has this email, if one does (a placeholder has none). `lock` holds its
    row (PostgreSQL) until the transaction ends."""
    stmt = select(User.id, User.password_hash).where(func.lower(User.email) == email)
    if lock:
        stmt = stmt.with_for_update()
    row = (await conn.execute(stmt)).first()
    return None if row is None else Account(row.id, row.password_hash is not None)


class Preview(TypedDict):
    """What GET /api/invitations/{token} and the page show the holder of the link."""

    org_name: str
    role_name: str | None
    email: str
    expires_at: datetime
    needs_password: bool


@dataclass(frozen=True)
class Open:
    """A usable invitation, as its holder may see it."""

    invitation_id: uuid.UUID
    membership_id: uuid.UUID
    org_id: uuid.UUID
    org_name: str
    role_name: str | None
    # The membership's user until acceptance: the invitation's placeholder (or, for an
    # invitation made before they named emails, the account itself).
    pending_user_id: uuid.UUID
    email: str  # whom it invites: only the account with this email accepts it
    expires_at: datetime
    account: Account | None  # the email's account, if it has one (never shown)

    @property
    def needs_password(self) -> bool:
        """The link's holder may choose the password: no account has the email, or one that
        has no password and belongs to no other organization (an account made before
        invitations named emails, never signed in to)."""
        account = self.account
        return account is None or not (account.has_password or account.belongs_elsewhere)

    def public(self) -> Preview:
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
    """The usable invitation behind a token, or None. `lock` holds its rows, and its email's
    account's (PostgreSQL), until the transaction ends, so two acceptances of one link (or
    two links setting one account's password) queue up."""
    if not token or len(token) > MAX_TOKEN_LENGTH:
        return None
    stmt = (
        select(
            Invitation.id.label("invitation_id"),
            Invitation.membership_id,
            Invitation.org_id,
            Organization.name.label("org_name"),
            Role.name.label("role_name"),
            Membership.user_id.label("pending_user_id"),
            Invitation.email,
            Invitation.expires_at,
        )
        .select_from(Invitation)
        .join(Membership, Membership.id == Invitation.membership_id)
        .join(Organization, Organization.id == Invitation.org_id)
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
    account = await account_with(conn, row.email, lock=lock)
    if account is not None and not account.has_password:
        elsewhere = await conn.scalar(
            select(Membership.id)
            .where(
                Membership.user_id == account.id,
                Membership.deleted_at.is_(None),
                Membership.id != row.membership_id,
            )
            .limit(1)
        )
        account = replace(account, belongs_elsewhere=elsewhere is not None)
    return Open(**row._asdict(), account=account)


@dataclass(frozen=True)
class Accepted:
    """An accepted invitation and the account that now holds its membership."""

    invitation: Open
    user_id: uuid.UUID
    email: str


async def accept(conn: AsyncConnection, token: str, user_id: uuid.UUID, now: datetime) -> Accepted:
    """The signed-in account `user_id` accepts the invitation `token` was issued for.

    404 if the link is not usable or invites another email; 409 ALREADY_MEMBER (nothing
    changes) if the account already has a live membership in the organization.
    """
    found = await find(conn, token, now, lock=True)
    # Only the account with the invited email (signed in, so it has a password).
    if found is None or found.account is None or found.account.id != user_id:
        raise not_valid()
    if not found.account.has_password:
        raise not_valid()
    await _join(conn, found, user_id, now)
    return Accepted(found, user_id, found.email)


class EmailTaken(Conflict):
    def __init__(self) -> None:
        super().__init__(
            "An account with this email was set up meanwhile: sign in with it and accept the "
            "invitation",
            "ACCOUNT_EXISTS",
        )


async def set_password(
    conn: AsyncConnection, token: str, password_hash: str, now: datetime
) -> Accepted:
    """The link's holder chooses the password of the invited email's account, and so accepts.

    Only while no account with the email has a password (404 otherwise: a link never
    replaces one). With no account for the email, the placeholder becomes it; an account
    without a password (made before invitations named emails) takes the password and the
    membership. 409 ACCOUNT_EXISTS if another organization's link made the account after
    the check (the unique email decides which placeholder becomes it).
    """
    found = await find(conn, token, now, lock=True)
    if found is None or not found.needs_password:
        raise not_valid()
    if found.account is None:
        user_id = found.pending_user_id
        try:
            # The WHERE restates "still a placeholder": of two uses of one link, one wins.
            changed = await conn.execute(
                update(User)
                .where(User.id == user_id, User.email.is_(None), User.password_hash.is_(None))
                .values(email=found.email, password_hash=password_hash)
                .returning(User.id)
            )
        except IntegrityError as clash:
            # On PostgreSQL the transaction can only roll back now; raising does that.
            raise EmailTaken() from clash
    else:
        user_id = found.account.id
        # The WHERE restates "no password yet": of two links used at once, one sets it.
        changed = await conn.execute(
            update(User)
            .where(User.id == user_id, User.password_hash.is_(None))
            .values(password_hash=password_hash)
            .returning(User.id)
        )
    if changed.first() is None:
        raise not_valid()
    await _join(conn, found, user_id, now)
    return Accepted(found, user_id, found.email)


async def _join(conn: AsyncConnection, found: Open, user_id: uuid.UUID, now: datetime) -> None:
    """The membership moves from its placeholder to `user_id` and becomes active; the
    invitation is used; the placeholder, if it was one and is no longer the account, goes."""
    await refuse_if_member(conn, found.org_id, user_id=user_id, other_than=found.membership_id)
    # Each write restates the state it expects: no row back means a concurrent acceptance
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
            Membership.user_id == found.pending_user_id,
            Membership.status == "pending",
            Membership.deleted_at.is_(None),
        )
        .values(user_id=user_id, status="active", joined_at=now)
        .returning(Membership.id)
    )
    if joined.first() is None:
        raise not_valid()
    if user_id != found.pending_user_id:
        await conn.execute(
            delete(User).where(
                User.id == found.pending_user_id,
                User.email.is_(None),
                User.password_hash.is_(None),
            )
        )
