"""`hangar org`, `hangar user` and `hangar member`: organizations and the people in them.

Links (an invitation's, a password reset's) are mailed to their person when HANGAR_SMTP_URL
and HANGAR_MAIL_FROM are set, after the command's transaction commits, and the output says
only that they were sent; otherwise they are printed, for the operator to hand over. When a
mail fails, the link is printed after all, with a note on stderr: the operator holds the
database anyway, and can hand it over themselves.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import Annotated, Any

import typer
from sqlalchemy.ext.asyncio import AsyncConnection

from hangar.accounts import second_factor
from hangar.accounts.service import password_reset
from hangar.auth.passwords import MAX_LENGTH, MIN_LENGTH
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
from hangar.foundation.clock import SystemClock
from hangar.foundation.config import Settings
from hangar.foundation.mail import NotSent, mailer_of
from hangar.orgs.capabilities import ROLE_NAMES
from hangar.orgs.service import (
    Bootstrapped,
    Contact,
    Invited,
    bootstrap_member,
    create_org,
    hand_over,
    invite_member,
    require_org,
)

org_app = command_group("Organizations.")
user_app = command_group(
    "Accounts: the operator's bootstrap, recovery links, and removing a lost second factor."
)
log = logging.getLogger("hangar.accounts")
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


def note(text: str) -> None:
    typer.echo(f"hangar: note: {text}", err=True)


def link_fields(current: Settings, invited: Invited) -> dict[str, Any]:
    """The invitation's link, mailed or printed (the transaction has committed), as output."""
    handed = asyncio.run(hand_over(current, invited, SystemClock().now()))
    email = invited.member.email
    fields: dict[str, Any] = {}
    if handed.sent is not None:
        fields["invitation_sent"] = handed.sent
    if handed.sent is not True:  # no mail configured, or the mail failed
        fields["invitation_url"] = handed.url
    if handed.sent is False:
        note(f"the mail to {email} was not sent ({handed.why}): hand them the link yourself")
    return {**fields, "invitation_expires_at": invited.invitation.expires_at}


@user_app.command("create")
def user_create(
    org: OrgOption,
    email: Email,
    role: Role,
    password: Annotated[
        str | None,
        typer.Option(
            metavar="PASSWORD",
            help=f"For a new account only ({MIN_LENGTH} characters at least): an existing "
            "account's password is its holder's",
        ),
    ] = None,
    first_name: FirstName = "",
    last_name: LastName = "",
    phone: Phone = None,
) -> None:
    """Make someone a member (the operator's bootstrap).

    A new email gets an account with --password, active at once. An email that already has
    an account is invited instead, never joined by this command: the membership is pending
    until the account's holder opens the invitation link (mailed with HANGAR_SMTP_URL,
    otherwise printed) signed in as themselves. --password is refused for it.
    """
    org_id = parse_org(org)
    check_role(role)
    if password is not None and not MIN_LENGTH <= len(password) <= MAX_LENGTH:
        fail(f"--password must be {MIN_LENGTH} to {MAX_LENGTH} characters")
    current = migrated_settings()
    person = Contact(email, first_name, last_name, phone)

    async def work(conn: AsyncConnection) -> Bootstrapped:
        await require_org(conn, org_id)
        now = SystemClock().now()
        return await bootstrap_member(conn, org_id, person, role=role, password=password, now=now)

    made = run_in_transaction(current, work)
    out: dict[str, Any] = {
        "user_id": str(made.user_id),
        "membership_id": str(made.membership_id),
        "role": made.role,
        "account": made.account,
        "status": made.status,
    }
    if made.invited is not None:
        who = made.invited.member.email
        note(
            f"{who} already has an account, which this command does not join to the "
            "organization: it invited them instead. The membership is pending until the "
            "account's holder opens the link signed in as themselves; someone who cannot "
            f"sign in to it gets a link from `hangar user reset-password --email {who}`"
        )
        out |= link_fields(current, made.invited)
    emit(out)


@user_app.command("reset-password")
def user_reset_password(email: Email) -> None:
    """Make a one-time link that sets this account's password (it never takes a password).

    The link works once, for 24 hours, and replaces any earlier one for the account; using
    it signs out every session of the account. With HANGAR_SMTP_URL it is mailed to the
    account's address and the output says only that it was sent (at most one every 20
    minutes to an account); otherwise it is printed, for you to hand to the account's holder
    (be sure whom you hand it to).
    """
    current = migrated_settings()
    now = SystemClock().now()

    mailer = mailer_of(current)

    async def work(conn: AsyncConnection) -> password_reset.IssuedReset:
        return await password_reset.issue_reset(conn, email, now, to_be_mailed=mailer is not None)

    issued = run_in_transaction(current, work)
    url = password_reset.reset_link(current.public_url, issued.token)
    out: dict[str, Any] = {"user_id": str(issued.user_id), "email": issued.email}
    if mailer is None:
        out["reset_url"] = url
    else:
        try:
            asyncio.run(mailer.send(password_reset.reset_mail(issued, url, now)))
            out["sent"] = True
        except NotSent as why:
            out |= {"sent": False, "reset_url": url}
            note(f"the mail to {issued.email} was not sent ({why}): hand them the link yourself")
    emit({**out, "expires_at": issued.expires_at})


@user_app.command("reset-2fa")
def user_reset_two_factor(email: Email) -> None:
    """Remove an account's second factor (its authenticator app and recovery codes), for a
    person who lost both: they sign in with their password alone until they set it up again
    (an organization that requires it keeps them out of Org Settings until then).

    Be sure who asks: this is how someone holding only the password would get in. Recorded
    at warning level in the log (the account's id and email, and that the operator did it).
    """
    current = migrated_settings()

    async def work(conn: AsyncConnection) -> uuid.UUID:
        return await second_factor.reset_two_factor(conn, email, SystemClock().now())

    user_id = run_in_transaction(current, work)
    log.warning(
        "two-factor sign-in removed by the operator (hangar user reset-2fa) for %s",
        email.strip().lower(),
        extra={"user_id": str(user_id), "action": "user.reset_two_factor", "actor": "operator"},
    )
    emit({"user_id": str(user_id), "email": email.strip().lower(), "two_factor": "removed"})


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
    and a one-time link that the person opens to join (mailed with HANGAR_SMTP_URL, otherwise
    printed this once)."""
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
            **link_fields(current, invited),
        }
    )
