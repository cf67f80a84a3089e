"""`hangar org`, `hangar user` and `hangar member`: organizations and the people in them."""

from __future__ import annotations

import uuid
from typing import Annotated

import typer
from sqlalchemy.ext.asyncio import AsyncConnection

from hangar.cli.common import (
    OrgOption,
    check_role,
    command_group,
    emit,
    fail,
    migrated_settings,
    parse_org,
    run_in_transaction,
)
from hangar.clock import SystemClock
from hangar.orgs import invitations
from hangar.orgs.bootstrap import Bootstrapped, bootstrap_member
from hangar.orgs.commands import create_org, require_org
from hangar.orgs.members import Contact, Invited, invite_member
from hangar.orgs.models import ROLE_NAMES

org_app = command_group("Organizations.")
user_app = command_group("Accounts, for the operator's bootstrap.")
member_app = command_group("Memberships: inviting people.")

# A person, as `user create` and `member invite` both take them (see orgs.members.Contact).
Email = Annotated[str, typer.Option(metavar="EMAIL", help="The person's email address")]
Role = Annotated[str, typer.Option(metavar="ROLE", help=f"One of {', '.join(ROLE_NAMES)}")]
FirstName = Annotated[str, typer.Option("--first-name", metavar="TEXT")]
LastName = Annotated[str, typer.Option("--last-name", metavar="TEXT")]
Phone = Annotated[str | None, typer.Option("--phone", metavar="TEXT")]


@org_app.command("create")
def org_create(
    name: Annotated[str, typer.Option(metavar="NAME", help="The organization's name")],
) -> None:
    """Create an organization with its four built-in roles."""
    current = migrated_settings()

    async def work(conn: AsyncConnection) -> uuid.UUID:
        return await create_org(conn, name, SystemClock().now())

    emit({"id": str(run_in_transaction(current, work)), "name": name.strip()})


@user_app.command("create")
def user_create(
    org: OrgOption,
    email: Email,
    role: Role,
    password: Annotated[
        str | None,
        typer.Option(
            metavar="PASSWORD",
            help="For a new account only (8 characters at least): an existing account's "
            "password is its owner's",
        ),
    ] = None,
    first_name: FirstName = "",
    last_name: LastName = "",
    phone: Phone = None,
) -> None:
    """Make someone an active member at once (the operator's bootstrap).

    A new email gets an account with --password. An email that already has an account gets
    the membership only, and never a new password: --password is refused for it.
    """
    org_id = parse_org(org)
    check_role(role)
    if password is not None and len(password) < 8:
        fail("--password must be at least 8 characters")
    current = migrated_settings()
    person = Contact(email, first_name, last_name, phone)

    async def work(conn: AsyncConnection) -> Bootstrapped:
        await require_org(conn, org_id)
        now = SystemClock().now()
        return await bootstrap_member(conn, org_id, person, role=role, password=password, now=now)

    made = run_in_transaction(current, work)
    emit(
        {
            "user_id": str(made.user_id),
            "membership_id": str(made.membership_id),
            "role": made.role,
            "account": made.account,
        }
    )


@member_app.command("invite")
def member_invite(
    org: OrgOption,
    email: Email,
    role: Role,
    first_name: FirstName = "",
    last_name: LastName = "",
    phone: Phone = None,
) -> None:
    """Invite someone, as an admin's POST /api/orgs/{org}/members does: a pending membership
    and a one-time link (printed this once) that the person opens to join."""
    org_id = parse_org(org)
    check_role(role)
    current = migrated_settings()
    person = Contact(email, first_name, last_name, phone)

    async def work(conn: AsyncConnection) -> Invited:
        await require_org(conn, org_id)
        return await invite_member(conn, org_id, person, role=role, now=SystemClock().now())

    invited = run_in_transaction(current, work)
    emit(
        {
            "user_id": str(invited.member.user_id),
            "membership_id": str(invited.member.membership_id),
            "role": invited.member.role,
            "status": invited.member.status,
            "invitation_url": invitations.link(current.public_url, invited.invitation.token),
            "invitation_expires_at": invited.invitation.expires_at,
        }
    )
