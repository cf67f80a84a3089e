"""The organizations' actions, one face for the routes, the screens and the CLI alike.

- An administrator (members.manage) invites an email: a pending membership, and its link
  mailed or handed over (`invite`); removes a member.
- The invited person opens the link, accepts it, or makes an account through it (shared by
  /api/invitations/{token} and the invitation page); every unusable link is the same 404
  (invitations.not_valid). Opening and accepting run in the caller's request transaction
  (`hangar.http.routing.Tx`).
- The operator (the CLI) creates an organization, adds a user, invites.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import TypedDict

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from hangar.audit import service as audit
from hangar.audit.service import Who
from hangar.auth import sessions, two_factor, users
from hangar.auth.passwords import hashed
from hangar.kit import ratelimit
from hangar.kit.container import Services
from hangar.kit.errors import Conflict
from hangar.orgs import actors, handover, invitations, members
from hangar.orgs.actors import Actor, Started, started

# What the CLI and the screens take as they are: the operator's actions and the names of what
# they present.
from hangar.orgs.bootstrap import Bootstrapped as Bootstrapped
from hangar.orgs.bootstrap import bootstrap_member as bootstrap_member
from hangar.orgs.capabilities import ORG_SETTINGS
from hangar.orgs.commands import create_org as create_org
from hangar.orgs.commands import require_org as require_org
from hangar.orgs.handover import hand_over as hand_over
from hangar.orgs.invitations import AccountExists as AccountExists
from hangar.orgs.invitations import Open as Open
from hangar.orgs.members import Contact as Contact
from hangar.orgs.members import Invited as Invited
from hangar.orgs.members import InvitedMember, invited_member
from hangar.orgs.members import NewMemberBody as NewMemberBody
from hangar.orgs.members import invite_member as invite_member
from hangar.orgs.members import remove_member as remove_member
from hangar.orgs.models import Organization


async def open_link(conn: AsyncConnection, token: str, now: datetime) -> invitations.Open:
    """What a usable link invites to; 404 for any other."""
    found = await invitations.find(conn, token, now)
    if found is None:
        raise invitations.not_valid()
    return found


# Accepting as the signed-in account: the domain's own action, nothing to add here.
accept = invitations.accept


async def choose_password(services: Services, token: str, password: str) -> Started:
    """Makes the invited email's account with this password through its link (only while no
    account has the email: 409 ACCOUNT_EXISTS otherwise), accepts, and starts a session.

    Its transactions are its own, not the request's: argon2 is deliberately slow and runs
    between them, outside any, and the request's body is validated before any database work.
    """
    async with services.engine.connect() as conn:
        found = await invitations.find(conn, token, services.clock.now())
    invitations.for_a_new_account(found)  # refused before the hash, which costs a core a while
    password_hash = await hashed(password)
    now = services.clock.now()
    async with services.engine.begin() as conn:
        # Checked again under lock: the link may have been used meanwhile.
        accepted = await invitations.set_password(conn, token, password_hash, now)
        return await started(
            conn, await sessions.start(conn, accepted.user_id, accepted.email, now)
        )


INVITATION_LIFETIME = invitations.LIFETIME


async def admins_of(conn: AsyncConnection, org_id: uuid.UUID) -> tuple[str, list[str]]:
    """The organization's name and the addresses its administrators (org.settings) sign in
    with, the address hangar mails a person at: whom the worker tells that one of the
    organization's webhooks was disabled (hangar.webhooks.delivery.alerts)."""
    name, admins = await actors.members_who_may(conn, org_id, ORG_SETTINGS)
    emails = await users.emails_of(conn, admins)
    return name or "", [email for user in admins if (email := emails.get(user))]


async def invite(
    services: Services, actor: Actor, body: NewMemberBody, now: datetime
) -> InvitedMember:
    """An invitation: a pending membership, and its link, mailed to the person (with
    HANGAR_SMTP_URL, within the mail budgets of hangar.orgs.handover) or shown this once;
    what the management API answers.

    Its transaction is its own, not the request's: it commits before the mail goes out, so a
    mail that fails loses no invitation, and no mailed link points at an invitation that a
    failed commit never made.
    """
    budgets = await handover.take_mail_budget(services, actor.org_id, body.email, now)
    try:
        async with services.engine.begin() as conn:
            invited = await members.create_member(conn, actor, body, now)
    except BaseException:
        await ratelimit.give_back(services.limiter, budgets, now)  # nothing was made to mail
        raise
    handed = await handover.hand_over(services.settings, invited, now)
    return invited_member(invited, body, handed.for_admin(invited.member.email))


class OrganizationView(TypedDict):
    id: str
    name: str
    require_two_factor: bool


async def organization(conn: AsyncConnection, org_id: uuid.UUID) -> OrganizationView:
    """GET /api/orgs/{org_id}: the organization's settings."""
    row = (
        await conn.execute(
            select(Organization.name, Organization.require_two_factor).where(
                Organization.id == org_id
            )
        )
    ).one()
    return {"id": str(org_id), "name": row.name, "require_two_factor": row.require_two_factor}


async def require_two_factor_of(
    conn: AsyncConnection, by: Who, org_id: uuid.UUID, required: bool, now: datetime
) -> OrganizationView:
    """Turns the organization's "require two-factor sign-in for admins" on or off, as the
    admin `by`. On only by an admin who has it (409 TWO_FACTOR_REQUIRED otherwise): no
    admin locks themselves out by turning it on. A change is recorded in the audit log."""
    assert by.user_id is not None  # an admin's own setting: never the operator's
    if required and not await two_factor.is_enabled(conn, by.user_id):
        raise Conflict(
            "Set up two-factor sign-in for yourself first: requiring it would keep you out of "
            "Org Settings",
            "TWO_FACTOR_REQUIRED",
        )
    changed = await conn.execute(
        update(Organization)
        .where(Organization.id == org_id, Organization.require_two_factor.is_not(required))
        .values(require_two_factor=required)
    )
    if changed.rowcount:
        details = {"require_two_factor": required}
        await audit.record(
            conn, org_id, by, "organization.updated", ("organization", org_id), now, details
        )
    return await organization(conn, org_id)


class AdminTwoFactor(TypedDict):
    email: str | None
    two_factor: bool


class SecurityView(TypedDict):
    require_two_factor: bool
    admins: list[AdminTwoFactor]


async def security(conn: AsyncConnection, org_id: uuid.UUID) -> SecurityView:
    """The organization's Security screen: whether it requires two-factor sign-in, and which
    of its admins have it (as GitHub lists an organization's members without it)."""
    _, admin_ids = await actors.members_who_may(conn, org_id, ORG_SETTINGS)
    emails = await users.emails_of(conn, admin_ids)
    enabled = await two_factor.enabled_among(conn, admin_ids)
    view = await organization(conn, org_id)
    return {
        "require_two_factor": view["require_two_factor"],
        "admins": [{"email": emails.get(a), "two_factor": a in enabled} for a in admin_ids],
    }
