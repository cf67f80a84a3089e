"""Invitations: a pending membership becomes active only on its person's own say-so.

An admin's "add this email" makes a pending membership and an invitation whose link goes to
the person (mailed, with HANGAR_SMTP_URL; otherwise handed over by the admin). The invitation
names an email, not an account: its membership belongs to a placeholder user made for it (no
email, no password), whatever the email's history. A membership joins an account only through
its own organization's link, and the link never hands anyone an account that exists:

- an account with the invited email accepts while signed in as itself, presenting the token
  (GitHub's rule: the invitation is joined by the person it names, holding that
  organization's link): the membership moves from the placeholder to the account, and the
  placeholder is deleted;
- while no account has the email at all, the link's holder may choose a password, which
  accepts at the same time: the placeholder itself becomes the new account (its id stays the
  membership's). That is the only account a link ever makes, and never one that exists: not
  one with a password, not one without (made by the operator or the demo, never signed in
  to), not one whose memberships were all removed. Such an account's holder signs in, or, if
  they cannot, gets the operator's recovery link (`hangar user reset-password`,
  accounts.service); choosing a password for it answers 409 ACCOUNT_EXISTS.

What the link shows its holder (`Open.public`) is the same whatever the email's history: this
organization, the role, the email and the expiry, never whether an account exists, nor any
account's id or anything of another organization. Trying to choose a password for an email
that has an account does say so (409): that is the one answer that differs, and it changes
nothing. (With mail, only the mailbox's reader holds the link to try it.)

Two organizations may invite one new email at once: the unique email decides which
placeholder becomes the account, and the other link is then accepted by signing in.

The token is 256 random bits; only its SHA-256 is stored and looked up. Every way a link can
be unusable (unknown, expired, used, membership removed, someone else's) answers the same
404. Callers own the transaction; acceptance locks its rows and restates the state it expects
in each write, so a link is used once.
"""

from __future__ import annotations

import secrets
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TypedDict

from sqlalchemy import insert, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection

from hangar.auth import users
from hangar.foundation.crypto import token_digest
from hangar.foundation.ids import new_id
from hangar.kit.batches import Oldest
from hangar.kit.errors import Conflict, NotFound
from hangar.orgs.commands import refuse_if_member
from hangar.orgs.models import Invitation, Membership, Organization, Role

LIFETIME = timedelta(days=7)
# token_urlsafe(32) is 43 characters; anything much longer is not one of ours.
MAX_TOKEN_LENGTH = 100


def not_valid() -> NotFound:
    return NotFound(detail="This invitation link is not valid or has expired")


def link(public_url: str, token: str) -> str:
    return f"{public_url.rstrip('/')}/invitations/{token}"


@dataclass(frozen=True)
class Issued:
    token: str  # mailed to the person, or shown once to whoever invited (never stored)
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
            token_hash=token_digest(token),
            email=email,
            created_at=now,
            expires_at=now + LIFETIME,
        )
    )
    return Issued(token, now + LIFETIME)


class Preview(TypedDict):
    """What GET /api/invitations/{token} shows the holder of the link: the same fields,
    whatever the email's history."""

    org_name: str
    role_name: str | None
    email: str
    expires_at: datetime


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
    # The email's account, if it has one: decides what the link may do, never shown.
    account_id: uuid.UUID | None

    def public(self) -> Preview:
        return {
            "org_name": self.org_name,
            "role_name": self.role_name,
            "email": self.email,
            "expires_at": self.expires_at,
        }


async def find(
    conn: AsyncConnection, token: str, now: datetime, *, lock: bool = False
) -> Open | None:
    """The usable invitation behind a token, or None. `lock` holds its rows, and its email's
    account's (PostgreSQL), until the transaction ends, so two acceptances of one link (or
    two links making one email's account) queue up."""
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
            Invitation.token_hash == token_digest(token),
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
    account_id = await users.account_with(conn, row.email, lock=lock)
    return Open(**row._asdict(), account_id=account_id)


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
    # Only the account with the invited email, signed in as itself (so its holder knows its
    # password), and holding this organization's link.
    if found is None or found.account_id is None or found.account_id != user_id:
        raise not_valid()
    await _join(conn, found, user_id, now)
    return Accepted(found, user_id, found.email)


class AccountExists(Conflict):
    """Choosing a password through a link, for an email that has an account."""

    def __init__(self) -> None:
        super().__init__(
            "An account with this email already exists: sign in with it to accept the "
            "invitation. If you cannot sign in, ask this hangar's operator for a password "
            "reset link.",
            "ACCOUNT_EXISTS",
        )


def for_a_new_account(found: Open | None) -> Open:
    """`found`, a link whose email has no account yet; else 404 (not usable) or 409
    ACCOUNT_EXISTS."""
    if found is None or found.account_id == found.pending_user_id:
        # The account is this link's own placeholder: another use of the link made it since
        # the invitation was read (SQLite reads each statement afresh, without PostgreSQL's
        # row locks): the link is used, as a read a moment later would have said.
        raise not_valid()
    if found.account_id is not None:
        raise AccountExists()
    return found


async def set_password(
    conn: AsyncConnection, token: str, password_hash: str, now: datetime
) -> Accepted:
    """The link's holder makes the invited email's account, choosing its password, and so
    accepts: only while no account has the email (409 ACCOUNT_EXISTS otherwise, also when
    another organization's link made the account after the check: the unique email decides
    which placeholder becomes it). The placeholder becomes the account.
    """
    found = for_a_new_account(await find(conn, token, now, lock=True))
    user_id = found.pending_user_id
    try:
        # The WHERE restates "still a placeholder": of two uses of one link, one wins.
        claimed = await users.claim_placeholder(conn, user_id, found.email, password_hash)
    except IntegrityError as clash:
        # On PostgreSQL the transaction can only roll back now; raising does that.
        raise AccountExists() from clash
    if not claimed:
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
        await users.delete_placeholder(conn, found.pending_user_id)


TABLE = Invitation.__tablename__


def expired(before: datetime, size: int) -> Oldest:
    """Retention's batches of invitations that expired before `before`, used or not (every
    invitation expires, so a used one goes too): nothing refers to an invitation."""
    return Oldest(Invitation, Invitation.expires_at, before, size)
