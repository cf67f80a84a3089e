"""People in an organization: adding (by invitation), and removing. Callers own the transaction.

An account belongs to its person. Nothing here lets an organization set, learn or change
anything about an account: the email, names and phone an admin gives are stored on the
membership (this organization's record of the person), and an invitation names an email, not
an account. Its pending membership belongs to a placeholder user made for it alone (a fresh
id, no email, no password), whatever the email's history, so the answer to "add this email"
(the 201, and the organization's member list) is the same whether or not the email has an
account elsewhere, and no two organizations share an id for a person who has not accepted.
The person's account takes the placeholder's place when they accept (orgs.invitations).

Only an invitation joins an existing account to an organization: an `active` membership is
made for a new account alone (the operator's bootstrap, the demo), and for an email that has
an account it is refused (409 ACCOUNT_EXISTS); `hangar user create` invites such an email
instead (orgs.bootstrap).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Literal, Required, TypedDict

from email_validator import EmailNotValidError, validate_email
from pydantic import Field
from sqlalchemy import ColumnElement, Exists, select, update
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.orm import aliased

from hangar.audit import service as audit
from hangar.audit.service import Who
from hangar.auth import users
from hangar.foundation.ids import new_id_at
from hangar.kit.bodies import RequestBody
from hangar.kit.errors import Conflict, NotFound, invalid
from hangar.kit.rows import insert_new
from hangar.orgs import invitations
from hangar.orgs.actors import Actor
from hangar.orgs.capabilities import ROLE_NAMES
from hangar.orgs.commands import refuse_if_member
from hangar.orgs.models import Membership, Organization, Role
from hangar.orgs.schemas import FullMemberRow

MemberStatus = Literal["active", "pending"]


@dataclass(frozen=True)
class Contact:
    """A person as this organization records them on the membership (never an account's)."""

    email: str
    first_name: str = ""
    last_name: str = ""
    phone: str | None = None


@dataclass(frozen=True)
class NewMember:
    user_id: uuid.UUID  # the account's (active), or the placeholder's (pending)
    membership_id: uuid.UUID
    role_id: uuid.UUID
    role: str
    email: str
    status: MemberStatus
    joined_at: datetime | None
    # Whether this call made an account (never for a pending membership, whose user is a
    # placeholder). Only the operator's CLI may learn it: never put it in anything an
    # organization's admin sees.
    account_created: bool


def normalized_email(email: str) -> str:
    """The address as hangar stores and compares it (lower case), once a validator made for
    it (RFC 5322 and 6531 syntax, the domain's form; no DNS lookup) accepts it: a 422 saying
    what is wrong otherwise."""
    try:
        checked = validate_email(email.strip(), check_deliverability=False)
    except EmailNotValidError as exc:
        raise invalid("email", f"must be an email address ({exc})") from None
    return checked.normalized.lower()


async def account_of(conn: AsyncConnection, email: str) -> uuid.UUID | None:
    """The id of the account with this email, if there is one (for the operator's CLI)."""
    return await users.account_with(conn, normalized_email(email))


async def add_member(
    conn: AsyncConnection,
    org_id: uuid.UUID,
    person: Contact,
    *,
    role: str,
    now: datetime,
    status: MemberStatus = "active",
    is_discovery: bool = False,
    join_existing: bool = False,
) -> NewMember:
    """A membership of this organization for `person`'s email, 409 if it has one already.

    - `active` is for the operator (CLI, demo, seed, tests): a new account is made for the
      email (without a password). An email that has an account is refused with 409
      ACCOUNT_EXISTS: an account joins an organization only through that organization's
      invitation, accepted by its holder. `join_existing` lifts that for the operator's own
      hands in the database (tests that need one person in two organizations); no command
      or route passes it. An existing account is only referred to, never changed.
    - `pending` is an invitation (see invite_member): the membership is a new placeholder
      user's, whether or not the email has an account. Nothing about any account is read.
    """
    if role not in ROLE_NAMES:
        raise invalid("role", f"must be one of {', '.join(ROLE_NAMES)}")
    email = normalized_email(person.email)
    role_id = await conn.scalar(select(Role.id).where(Role.org_id == org_id, Role.name == role))
    if role_id is None:
        raise NotFound("organization")
    await refuse_if_member(conn, org_id, email=email)
    found = None if status == "pending" else await account_of(conn, email)
    if found is not None and not join_existing:
        raise AccountExists(email)
    if found is not None:
        await refuse_if_member(conn, org_id, user_id=found)
    user_id = found or await _new_user(conn, None if status == "pending" else email, now)
    joined_at = now if status == "active" else None
    membership_id = await insert_new(
        conn,
        Membership,
        org_id=org_id,
        user_id=user_id,
        role_id=role_id,
        status=status,
        is_discovery=is_discovery,
        joined_at=joined_at,
        email=email,
        first_name=person.first_name,
        last_name=person.last_name,
        phone=person.phone,
    )
    return NewMember(
        user_id=user_id,
        membership_id=membership_id,
        role_id=role_id,
        role=role,
        email=email,
        status=status,
        joined_at=joined_at,
        account_created=status == "active" and found is None,
    )


async def _new_user(conn: AsyncConnection, email: str | None, now: datetime) -> uuid.UUID:
    """A new user, its id made at the clock's now as an account's is: an account for `email`,
    or, without one, an invitation's placeholder."""
    user_id = new_id_at(now)
    await users.create(conn, user_id, email, now)
    return user_id


class AccountExists(Conflict):
    def __init__(self, email: str) -> None:
        super().__init__(
            f"{email} already has an account: it joins an organization only by accepting "
            "that organization's invitation, signed in as itself",
            "ACCOUNT_EXISTS",
        )


@dataclass(frozen=True)
class Invited:
    member: NewMember
    invitation: invitations.Issued
    org_name: str  # for the mail that carries the link


async def invite_member(
    conn: AsyncConnection,
    org_id: uuid.UUID,
    person: Contact,
    *,
    role: str,
    now: datetime,
    is_discovery: bool = False,
    by: Who = audit.OPERATOR,
) -> Invited:
    """A pending membership and its invitation: the admin's API (`by` the admin), `hangar
    member invite`, and `hangar user create` for an email that has an account (the
    operator's). Recorded in the audit log, never with the link's token."""
    member = await add_member(
        conn, org_id, person, role=role, now=now, status="pending", is_discovery=is_discovery
    )
    issued = await invitations.issue(conn, org_id, member.membership_id, member.email, now)
    org_name = await conn.scalar(select(Organization.name).where(Organization.id == org_id))
    if org_name is None:
        raise NotFound("organization")
    details = {"email": member.email, "role": role, "expires_at": issued.expires_at.isoformat()}
    await audit.record(conn, org_id, by, "member.invited", ("member", member.user_id), now, details)
    return Invited(member, issued, org_name)


class NewMemberBody(RequestBody):
    # No password: an admin never chooses a person's password.
    email: str = Field(min_length=3, max_length=320)
    first_name: str = Field(min_length=1, max_length=100)
    last_name: str = Field(min_length=1, max_length=100)
    phone: str | None = Field(None, max_length=40)
    role: Literal["admin", "instructor", "mechanic", "member"]
    is_discovery: bool = False


class HandedOver(TypedDict, total=False):
    """How the link reaches the person, in the answer to whoever invited (orgs.handover):
    `invitation_url` when they are to hand it over (no mail configured); otherwise
    `invitation_sent`, and when the mail failed, `invitation_error` saying what happened."""

    invitation_url: str
    invitation_sent: bool
    invitation_error: str


class InvitedMember(FullMemberRow, HandedOver, total=False):
    """The answer to an admin's invitation: the public Member, when the link expires, and how
    the link reaches the person."""

    invitation_expires_at: Required[datetime]


async def create_member(
    conn: AsyncConnection, actor: Actor, body: NewMemberBody, now: datetime
) -> Invited:
    """POST /api/orgs/{org_id}/members: an invitation (see invited_member for the answer)."""
    person = Contact(body.email, body.first_name, body.last_name, body.phone)
    return await invite_member(
        conn,
        actor.org_id,
        person,
        role=body.role,
        now=now,
        is_discovery=body.is_discovery,
        by=actor.who,
    )


def invited_member(invited: Invited, body: NewMemberBody, handed: HandedOver) -> InvitedMember:
    """The answer to POST /api/orgs/{org_id}/members: the public Member (every contact field)
    and how its link reaches the person.

    The Member is made from this request and this organization's rows only, never read
    back from an account: the same fields, whoever the email belongs to, and a `user_id`
    that is the invitation's own placeholder (made now), never an existing account's.
    """
    member = invited.member
    return {
        "user_id": member.user_id,
        "role_id": member.role_id,
        "role_name": member.role,
        "status": member.status,
        "is_discovery": body.is_discovery,
        "joined_at": member.joined_at,
        "email": member.email,
        "first_name": body.first_name,
        "last_name": body.last_name,
        "phone": body.phone,
        "invitation_expires_at": invited.invitation.expires_at,
        **handed,
    }


async def remove_member(
    conn: AsyncConnection, actor: Actor, user_id: uuid.UUID, now: datetime
) -> None:
    """Soft-deletes the membership, pending or not: the person loses access to this
    organization at once. A pending member's `user_id` is its invitation's placeholder:
    removing it cancels the invitation (the link answers 404 from then on).

    An organization always keeps an active admin, under any concurrency: two admins removing
    each other at the same moment must not both succeed. So the removals of one organization
    are serialized (PostgreSQL: its row is locked first; SQLite has one writer), and the
    UPDATE itself says what must still hold when it writes: the actor still an active admin,
    and an active admin other than the removed person left. The checks before it only choose
    the clearest refusal."""
    await conn.execute(
        select(Organization.id).where(Organization.id == actor.org_id).with_for_update()
    )
    membership = (
        await conn.execute(
            select(Membership.id, Membership.email, Membership.status)
            .where(
                Membership.org_id == actor.org_id,
                Membership.user_id == user_id,
                Membership.deleted_at.is_(None),
            )
            .with_for_update()
        )
    ).first()
    if membership is None:
        raise NotFound("member")
    membership_id = membership.id
    if user_id == actor.user_id:
        # Otherwise the last admin could remove themselves and lock the organization out.
        raise Conflict("You cannot remove your own membership")
    removed = await conn.scalar(
        update(Membership)
        .where(
            Membership.id == membership_id,
            Membership.deleted_at.is_(None),
            _an_active_admin(actor.org_id, lambda m: m.user_id == actor.user_id),
            _an_active_admin(actor.org_id, lambda m: m.user_id != user_id),
        )
        .values(deleted_at=now)
        .returning(Membership.id)
    )
    if removed is not None:
        # A pending member's removal cancels its invitation: the entry says which it was.
        details = {"email": membership.email, "status": membership.status}
        who, org_id = actor.who, actor.org_id
        await audit.record(conn, org_id, who, "member.removed", ("member", user_id), now, details)
        return
    if await conn.scalar(select(_an_active_admin(actor.org_id, lambda m: m.user_id != user_id))):
        # Removed meanwhile, or the actor was: either way this removal is moot.
        raise Conflict("The member was removed meanwhile, or you were")
    raise Conflict(
        "An organization must keep at least one admin: this member is its last one",
        "LAST_ADMIN",
    )


def _an_active_admin(
    org_id: uuid.UUID, who: Callable[[type[Membership]], ColumnElement[bool]]
) -> Exists:
    """Whether `org_id` has an active admin membership (not deleted, not pending) for which
    `who` holds (a condition on a membership row other than the one an UPDATE writes)."""
    other = aliased(Membership)
    admin = select(Role.id).where(Role.org_id == org_id, Role.name == "admin").scalar_subquery()
    return (
        select(other.id)
        .where(
            other.org_id == org_id,
            other.deleted_at.is_(None),
            other.status == "active",
            other.role_id == admin,
            who(other),
        )
        .exists()
    )
