"""`hangar user create` for an email that has an account, and `hangar user reset-password`:
the operator never joins an existing account to an organization, nor types a password for
anyone; links are printed, or mailed when HANGAR_SMTP_URL is set (issue 24, point 4)."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pyotp
from sqlalchemy import func, select

from hangar.accounts.models import PasswordReset
from hangar.accounts.service import password_reset
from hangar.foundation.crypto import token_digest
from hangar.orgs.members import Contact, invite_member
from hangar.orgs.models import Membership
from tests.fixtures.cli import Cli, api, services_of
from tests.fixtures.factories import T0, make_org
from tests.fixtures.invites import UserRow, org_ids, sign_in, user_row
from tests.fixtures.pages import password_form
from tests.fixtures.smtp import mail_server

DEFAULT_URL = "http://127.0.0.1:8000"  # no HANGAR_PUBLIC_URL in the commands' environment
MAIL_FROM = "Hangar <hangar@example.org>"


def token_in(url: str, path: str) -> str:
    assert url.startswith(f"{DEFAULT_URL}{path}"), url
    return url.removeprefix(f"{DEFAULT_URL}{path}")


async def status_in(cli: Cli, membership_id: str) -> str:
    async with cli.engine.connect() as conn:
        found = await conn.scalar(
            select(Membership.status).where(Membership.id == uuid.UUID(membership_id))
        )
    return str(found)


async def reset_through_page(
    client: httpx.AsyncClient, token: str, password: str
) -> httpx.Response:
    page = await client.get(f"/password-reset/{token}")
    assert page.status_code == 200, page.text
    return await client.post(f"/password-reset/{token}", data=password_form(page.text, password))


async def test_user_create_for_an_account_another_org_set_up_invites_instead_of_joining_it(
    cli: Cli,
) -> None:
    """The issue: A's admin invites an email nobody has yet and opens the link themselves,
    choosing the password. The operator then adds that email to B with `user create`: before,
    B's membership became active on the account whose password A's admin knows."""
    org_a = await make_org(cli.engine, "Club A")
    email = f"captured-{uuid.uuid4().hex[:8]}@example.org"
    async with cli.engine.begin() as conn:
        a_invite = await invite_member(conn, org_a.id, Contact(email), role="member", now=T0)
    async with api(cli) as a_admin:
        opened = await a_admin.post(
            f"/api/invitations/{a_invite.invitation.token}/password",
            json={"password": "A's admin chose this"},
        )
        assert opened.status_code == 200, opened.text
        account = opened.json()["user"]["id"]

        ran = await cli.run(
            "user", "create", "--org", cli.org_id, "--email", email, "--role", "admin"
        )  # fmt: skip

        out = ran.json()
        assert set(out) == {
            "user_id",
            "membership_id",
            "role",
            "account",
            "status",
            "invitation_url",
            "invitation_expires_at",
        }
        assert (out["account"], out["status"], out["role"]) == ("existing", "pending", "admin")
        # The membership is the invitation's placeholder's, not the account's.
        assert out["user_id"] != account
        assert await user_row(cli.engine, out["user_id"]) == UserRow(None, False)
        assert await status_in(cli, out["membership_id"]) == "pending"
        assert "already has an account" in ran.stderr
        assert f"hangar user reset-password --email {email}" in ran.stderr
        # A's admin, signed in with the password they chose, is not in B.
        session = await a_admin.get("/api/session")
        assert org_ids(session.json()) == {str(org_a.id)}
        assert (await a_admin.get(f"/api/orgs/{cli.org_id}/api-keys")).status_code == 404
        a_session = a_admin.cookies["hangar_session"]

    # The email's real holder cannot sign in (A's admin chose the password): the operator
    # gives them a recovery link, which signs A's admin out everywhere.
    reset = (await cli.run("user", "reset-password", "--email", email.upper())).json()
    assert set(reset) == {"user_id", "email", "reset_url", "expires_at"}
    assert (reset["user_id"], reset["email"]) == (account, email)
    async with api(cli) as holder:
        done = await reset_through_page(
            holder, token_in(reset["reset_url"], "/password-reset/"), "the holder's own"
        )
        assert done.status_code == 303
        session = await holder.get("/api/session")
        assert session.status_code == 200
        holder.headers["X-CSRF-Token"] = session.json()["csrf_token"]
        accepted = await holder.post(
            f"/api/invitations/{token_in(out['invitation_url'], '/invitations/')}/accept"
        )
        assert accepted.status_code == 200, accepted.text
        assert org_ids(accepted.json()) == {str(org_a.id), cli.org_id}
    async with api(cli) as a_admin_again:
        # The session A's admin had is over, and their password no longer opens the account.
        a_admin_again.cookies.set("hangar_session", a_session, domain="hangar.example")
        assert (await a_admin_again.get("/api/session")).status_code == 401
        assert (await sign_in(a_admin_again, email, "A's admin chose this")).status_code == 401
    assert await status_in(cli, out["membership_id"]) == "active"


async def test_reset_password_prints_a_one_time_link_and_takes_no_password(cli: Cli) -> None:
    owner = await make_org(cli.engine, "Reset Club")
    email = f"locked-out-{uuid.uuid4().hex[:8]}@example.org"
    account = await owner.member("member", email=email)  # never chose a password

    first, unknown, with_password = (
        await cli.run("user", "reset-password", "--email", email),
        await cli.run("user", "reset-password", "--email", "nobody@example.org"),
        await cli.run("user", "reset-password", "--email", email, "--password", "mine!!!!"),
    )

    printed = first.json()
    assert (printed["user_id"], printed["email"]) == (str(account), email)
    assert printed["expires_at"].endswith("Z")
    assert unknown.refused() == "hangar: No account has the email 'nobody@example.org'"
    assert with_password.code == 2
    assert "--password" in with_password.stderr
    # Only the token's hash is stored; a second link replaces the first.
    token = token_in(printed["reset_url"], "/password-reset/")
    async with cli.engine.connect() as conn:
        stored = (await conn.execute(select(PasswordReset))).all()
    assert token not in str(stored)
    assert token_digest(token) in str(stored)
    second = token_in(
        (await cli.run("user", "reset-password", "--email", email)).json()["reset_url"],
        "/password-reset/",
    )
    async with cli.engine.connect() as conn:
        live = await conn.scalar(
            select(func.count()).where(PasswordReset.user_id == account).select_from(PasswordReset)
        )
    assert live == 1
    async with api(cli) as person:
        assert (await person.get(f"/password-reset/{token}")).status_code == 404
        assert (await reset_through_page(person, second, "finally mine")).status_code == 303
    assert await user_row(cli.engine, account) == UserRow(email, True)


async def test_with_mail_configured_links_go_to_the_mailbox_and_the_output_says_sent(
    cli: Cli,
) -> None:
    elsewhere = await make_org(cli.engine, "Mail Club")
    email = f"mailed-{uuid.uuid4().hex[:8]}@example.org"
    new_email = f"new-{email}"
    await elsewhere.member("member", email=email, password="their own password")
    async with mail_server() as server:
        env = {"HANGAR_SMTP_URL": server.url(), "HANGAR_MAIL_FROM": MAIL_FROM}
        created = await cli.run(
            "user", "create", "--org", cli.org_id, "--email", email, "--role", "member", env=env
        )  # fmt: skip
        invited = await cli.run(
            "member", "invite", "--org", cli.org_id, "--email", new_email, "--role", "member",
            env=env,
        )  # fmt: skip
        reset = await cli.run("user", "reset-password", "--email", email, env=env)

    outs: list[dict[str, Any]] = [created.json(), invited.json(), reset.json()]
    assert outs[0]["invitation_sent"] is outs[1]["invitation_sent"] is outs[2]["sent"] is True
    for out in outs:
        assert not {"invitation_url", "reset_url"} & set(out)
    invitation, invitation_2, recovery = server.received
    assert invitation.recipients == recovery.recipients == [email]
    assert invitation_2.recipients == [new_email]
    assert invitation.message["From"] == MAIL_FROM
    assert invitation.message["Subject"] == "Invitation to join Blue Sky Aviation"
    [link] = [w for w in invitation.text.split() if w.startswith(f"{DEFAULT_URL}/invitations/")]
    [reset_link] = [w for w in recovery.text.split() if "/password-reset/" in w]
    async with api(cli) as person:
        assert (await sign_in(person, email, "their own password")).status_code == 200
        accepted = await person.post(f"/api/invitations/{token_in(link, '/invitations/')}/accept")
        assert accepted.status_code == 200, accepted.text
        reset_page = f"/password-reset/{token_in(reset_link, '/password-reset/')}"
        assert (await person.get(reset_page)).status_code == 200


async def test_a_mail_that_fails_loses_nothing_and_the_operator_gets_the_link(cli: Cli) -> None:
    email = f"bounced-{uuid.uuid4().hex[:8]}@example.org"
    async with mail_server() as server:
        server.refuse_recipients = True
        env = {"HANGAR_SMTP_URL": server.url(), "HANGAR_MAIL_FROM": MAIL_FROM}
        ran = await cli.run(
            "member", "invite", "--org", cli.org_id, "--email", email, "--role", "member", env=env
        )  # fmt: skip

    out = ran.json()
    assert out["invitation_sent"] is False
    assert out["invitation_url"].startswith(f"{DEFAULT_URL}/invitations/")
    assert f"the mail to {email} was not sent" in ran.stderr
    assert "refused the recipient's address" in ran.stderr
    assert out["invitation_url"] not in ran.stderr
    assert await status_in(cli, out["membership_id"]) == "pending"
    assert server.received == []


async def test_reset_2fa_lets_a_person_who_lost_their_app_sign_in_with_the_password(
    cli: Cli,
) -> None:
    """`hangar user reset-2fa` (issue 41): the account's second factor and recovery codes go,
    the password alone signs in again, and the log records that the operator did it. An
    email no account has is an error naming it."""
    club = await make_org(cli.engine, "Lost Phone Club")
    email = f"lost-{uuid.uuid4().hex[:8]}@example.org"
    await club.member("admin", email=email, password="their own password")
    services = services_of(cli)
    async with api(cli) as person:
        signed = await sign_in(person, email, "their own password")
        person.headers["X-CSRF-Token"] = signed.json()["csrf_token"]
        secret = (await person.post("/api/session/two-factor")).json()["secret"]
        code = pyotp.TOTP(secret).at(services.clock.now())
        assert (
            await person.post("/api/session/two-factor/confirm", json={"code": code})
        ).status_code == 200
    async with api(cli) as person:
        assert (await sign_in(person, email, "their own password")).status_code == 401

    ran = await cli.run("user", "reset-2fa", "--email", email.upper())
    assert ran.json() == {"user_id": ran.json()["user_id"], "email": email, "two_factor": "removed"}
    assert "two-factor sign-in removed by the operator" in ran.stderr
    async with api(cli) as person:
        assert (await sign_in(person, email, "their own password")).status_code == 200
    unknown = await cli.run("user", "reset-2fa", "--email", "nobody@example.org")
    assert unknown.code != 0
    assert "nobody@example.org" in unknown.stderr


async def test_reset_links_are_mailed_to_one_account_at_most_every_20_minutes(cli: Cli) -> None:
    """Issue 41: a loop of `hangar user reset-password` cannot flood someone's mailbox through
    the operator's mail server. Mailed, the next link waits 20 minutes (3 an hour); printed,
    it does not (the operator hands it over)."""
    club = await make_org(cli.engine, "Reset Club")
    email = f"reset-{uuid.uuid4().hex[:8]}@example.org"
    await club.member("member", email=email, password="their own password")
    async with mail_server() as server:
        env = {"HANGAR_SMTP_URL": server.url(), "HANGAR_MAIL_FROM": MAIL_FROM}
        first = await cli.run("user", "reset-password", "--email", email, env=env)
        again = await cli.run("user", "reset-password", "--email", email, env=env)
    assert first.json()["sent"] is True
    assert again.code != 0
    assert "3 an hour at most" in again.stderr
    assert len(server.received) == 1
    printed = (await cli.run("user", "reset-password", "--email", email)).json()
    assert "reset_url" in printed
    # At the service: from 20 minutes after the last link, the next may be mailed.
    async with cli.engine.begin() as conn:
        last = await conn.scalar(
            select(PasswordReset.created_at).where(
                PasswordReset.user_id == uuid.UUID(printed["user_id"])
            )
        )
    assert last is not None
    async with cli.engine.begin() as conn:
        later = last + password_reset.RESET_MAIL_SPACING
        issued = await password_reset.issue_reset(conn, email, later, to_be_mailed=True)
    assert issued.email == email
