"""/invitations/{token}: the invited person's page. A new account chooses its password there;
an existing one signs in as itself and accepts; an unusable link is one 404 page. The page
calls the same functions as /api/invitations (orgs.invitations)."""

from __future__ import annotations

import re
import uuid

import httpx
import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from hangar.auth import sessions, users
from hangar.kit.container import Services
from hangar.kit.errors import ApiError
from hangar.orgs.members import Contact, invite_member
from hangar.orgs.models import Membership
from tests.fixtures.environment import PASSWORD
from tests.fixtures.factories import T0, Org, make_org
from tests.fixtures.fakes import FakeClock
from tests.fixtures.invites import TwoLinks, browser, invite, invite_account, org_ids, token_of
from tests.fixtures.pages import csrf_in, login_form, password_form, sign_in_with_form

GONE = "This invitation link is not valid or has expired"


async def status_of(org: Org, user: str) -> str:
    async with org.engine.connect() as conn:
        found = await conn.scalar(
            select(Membership.status).where(
                Membership.org_id == org.id,
                Membership.user_id == uuid.UUID(user),
                Membership.deleted_at.is_(None),
            )
        )
    return str(found)


async def test_a_new_person_chooses_a_password_and_is_signed_in(
    admin: httpx.AsyncClient, services: Services, org: Org
) -> None:
    created = await invite(admin, org, "newcomer@example.org", role="instructor")
    path = f"/invitations/{token_of(created)}"
    async with browser(services) as person:
        page = await person.get(path)
        assert page.status_code == 200
        assert page.headers["cache-control"] == "no-store"
        assert "Join Acme Flight School" in page.text
        assert "instructor" in page.text
        assert "newcomer@example.org" in page.text
        assert 'type="password"' in page.text

        filled = password_form(page.text, "my own password")
        response = await person.post(f"{path}/password", data=filled)

        assert response.status_code == 303
        assert response.headers["location"] == "/settings"
        assert sessions.COOKIE in response.cookies
        session = (await person.get("/api/session")).json()
        assert session["user"]["email"] == "newcomer@example.org"
        assert org_ids(session) == {str(org.id)}
        # An instructor cannot manage settings: the landing page says where they belong.
        landing = await person.get("/settings")
        assert "Acme Flight School" in landing.text
        gone = await person.get(path)
        assert gone.status_code == 404
        assert GONE in gone.text
    assert await status_of(org, created["user_id"]) == "active"


@pytest.mark.parametrize(
    ("first", "second", "why"),
    [
        ("long enough 1", "long enough 2", "The two passwords differ"),
        ("short", "short", "8 to 1024 characters"),
    ],
)
async def test_the_password_form_explains_what_is_wrong(
    admin: httpx.AsyncClient, services: Services, org: Org, first: str, second: str, why: str
) -> None:
    created = await invite(admin, org, f"typo-{uuid.uuid4().hex[:6]}@example.org")
    path = f"/invitations/{token_of(created)}"
    async with browser(services) as person:
        page = await person.get(path)
        response = await person.post(
            f"{path}/password", data=password_form(page.text, first, again=second)
        )
        assert response.status_code == 422
        assert why in response.text
        assert sessions.COOKIE not in response.cookies
    assert await status_of(org, created["user_id"]) == "pending"


async def test_the_password_form_needs_its_own_csrf_cookie(
    admin: httpx.AsyncClient, services: Services, org: Org
) -> None:
    created = await invite(admin, org, "forged@example.org")
    path = f"/invitations/{token_of(created)}"
    async with browser(services) as visitor_of_another_site:
        # A cross-site post: the page's token could be copied, but not the cookie with it.
        async with browser(services) as attacker:
            stolen = csrf_in((await attacker.get(path)).text)
        response = await visitor_of_another_site.post(
            f"{path}/password",
            data={"csrf_token": stolen, "password": "attacker's", "password_again": "attacker's"},
        )
        assert response.status_code == 403
        assert sessions.COOKIE not in response.cookies
    assert await status_of(org, created["user_id"]) == "pending"


async def test_an_existing_account_signs_in_as_itself_then_accepts(
    admin: httpx.AsyncClient, client: httpx.AsyncClient, org: Org, other: Org
) -> None:
    existing, created = await invite_account(
        admin, org, other, "existing@example.org", role="mechanic"
    )
    path = f"/invitations/{token_of(created)}"

    page = await client.get(path)
    assert page.status_code == 200
    assert "Sign in as existing@example.org to accept" in page.text
    assert f'href="/login?next={path}"' in page.text
    # The page offers what it offers anyone (it does not say the email has an account), but
    # its password form makes no account for this email, and changes nothing of the one it has.
    refused = await client.post(f"{path}/password", data=password_form(page.text, "hijacked!"))
    assert refused.status_code == 409
    assert "already exists: sign in with it to accept the invitation" in refused.text
    assert "password reset link" in refused.text
    assert 'type="password"' not in refused.text
    assert sessions.COOKIE not in refused.cookies

    login = await client.get(f"/login?next={path}")
    assert "Sign in to accept your invitation" in login.text
    signed = await client.post(
        "/login", data=login_form(login.text, "existing@example.org", PASSWORD, next=path)
    )
    assert signed.status_code == 303
    assert signed.headers["location"] == path

    page = await client.get(path)
    assert "Accept and join Acme Flight School" in page.text
    forged = await client.post(f"{path}/accept", data={"csrf_token": "not the token"})
    assert forged.status_code == 403
    assert await status_of(org, created["user_id"]) == "pending"

    accepted = await client.post(f"{path}/accept", data={"csrf_token": csrf_in(page.text)})

    assert accepted.status_code == 303
    assert accepted.headers["location"] == "/settings"
    # The membership moved from the invitation's placeholder to the account.
    assert await status_of(org, str(existing)) == "active"
    assert await status_of(org, created["user_id"]) == "None"
    assert org_ids((await client.get("/api/session")).json()) == {str(org.id), str(other.id)}


async def test_the_page_is_the_same_whatever_the_emails_history(
    admin: httpx.AsyncClient, services: Services, org: Org, other: Org
) -> None:
    # An email with an account (and a password) in another organization, an account without
    # a password there, and an email nobody has: a visitor holding the link sees the same
    # page, the email aside, so the link's holder learns nothing of other organizations.
    await other.member("admin", email="taken@example.org", password=PASSWORD)
    await other.member("member", email="passwordless@example.org")
    emails = ["taken@example.org", "passwordless@example.org", "free@example.org"]
    pages = []
    async with browser(services) as visitor:
        for email in emails:
            created = await invite(admin, org, email, role="mechanic")
            page = await visitor.get(f"/invitations/{token_of(created)}")
            assert page.status_code == 200
            pages.append(
                re.sub(
                    r"[A-Za-z0-9_-]{43}",
                    "TOKEN",
                    page.text.replace(email, "EMAIL"),
                )
            )
    assert pages[0] == pages[1] == pages[2]
    for offered in ("Sign in as EMAIL to accept", 'type="password"', "New to hangar?"):
        assert offered in pages[0]
    assert "Other Aero Club" not in pages[0]


async def test_signed_in_as_someone_else_the_page_says_so_and_cannot_accept(
    admin: httpx.AsyncClient, member: httpx.AsyncClient, org: Org, other: Org
) -> None:
    _, created = await invite_account(admin, org, other, "rightful@example.org")
    path = f"/invitations/{token_of(created)}"

    page = await member.get(path)

    assert "but this invitation is for" in page.text
    assert "Accept and join" not in page.text
    accepted = await member.post(f"{path}/accept", data={"csrf_token": csrf_in(page.text)})
    assert accepted.status_code == 404
    assert await status_of(org, created["user_id"]) == "pending"
    # Signing out from here comes back to the invitation through the sign-in form.
    out = await member.post("/logout", data={"csrf_token": csrf_in(page.text), "next": path})
    assert out.status_code == 303
    assert out.headers["location"] == f"/login?next={path}"


async def test_accepting_without_a_session_goes_to_sign_in(
    admin: httpx.AsyncClient, client: httpx.AsyncClient, org: Org, other: Org
) -> None:
    await other.member("member", email="later@example.org", password=PASSWORD)
    path = f"/invitations/{token_of(await invite(admin, org, 'later@example.org'))}"
    response = await client.post(f"{path}/accept", data={"csrf_token": "x"})
    assert response.status_code == 303
    assert response.headers["location"] == f"/login?next={path}"


async def test_unknown_and_expired_links_are_one_404_page(
    admin: httpx.AsyncClient, services: Services, org: Org, clock: FakeClock
) -> None:
    expiring = token_of(await invite(admin, org, "expiring@example.org"))
    clock.advance(days=7)
    async with browser(services) as person:
        for token in ("A" * 43, expiring):
            for response in (
                await person.get(f"/invitations/{token}"),
                await person.post(f"/invitations/{token}/password", data={}),
            ):
                assert response.status_code == 404
                assert response.headers["content-type"].startswith("text/html")
                assert GONE in response.text
                assert 'type="password"' not in response.text


async def test_a_pending_member_has_no_settings_pages(
    services: Services, engine: AsyncEngine, other: Org
) -> None:
    target = await make_org(engine, "Pending Admins Club")
    person_id = await other.member("member", email="pending-admin@example.org", password=PASSWORD)
    # A pending membership on the account itself, as invitations made before they named
    # emails (an invitation's own is a placeholder's, and so no one's access).
    await target.membership_row(person_id, "pending-admin@example.org", "admin", status="pending")
    async with browser(services) as person:
        await sign_in_with_form(person, "pending-admin@example.org", PASSWORD)
        for path in (f"/settings/{target.id}/keys", f"/settings/{target.id}/webhooks"):
            assert (await person.get(path)).status_code == 404
        json = await person.get(f"/api/orgs/{target.id}/api-keys")
        assert json.status_code == 404
        assert json.json()["code"] == "NOT_FOUND"


async def test_names_in_the_page_are_escaped(services: Services, engine: AsyncEngine) -> None:
    hostile = await make_org(engine, "<script>alert(1)</script> & Co")
    async with engine.begin() as conn:
        invited = await invite_member(
            conn, hostile.id, Contact("x@example.org"), role="member", now=T0
        )
        # Markup cannot reach the page through the email: it is no email address.
        with pytest.raises(ApiError, match="must be an email address"):
            await invite_member(
                conn, hostile.id, Contact("x<img>@example.org"), role="member", now=T0
            )
    async with browser(services) as person:
        page = await person.get(f"/invitations/{invited.invitation.token}")
    assert page.status_code == 200
    assert "<script>alert(1)" not in page.text
    assert "&lt;script&gt;alert(1)&lt;/script&gt; &amp; Co" in page.text


async def test_once_one_orgs_link_made_the_account_anothers_page_asks_to_sign_in(
    services: Services, other: Org, two_links: TwoLinks
) -> None:
    in_a, in_b = two_links.a, two_links.b
    async with browser(services) as person:
        page = await person.get(f"/invitations/{token_of(in_a)}")
        await person.post(
            f"/invitations/{token_of(in_a)}/password", data=password_form(page.text, "pw via A!")
        )

        b_page = await person.get(f"/invitations/{token_of(in_b)}")

        # Signed in as the invited email: the account accepts; no password form any more.
        assert 'type="password"' not in b_page.text
        assert "Accept and join Other Aero Club" in b_page.text
        accepted = await person.post(
            f"/invitations/{token_of(in_b)}/accept", data={"csrf_token": csrf_in(b_page.text)}
        )
        assert accepted.status_code == 303
    assert await status_of(other, in_a["user_id"]) == "active"


async def test_a_password_form_that_loses_its_new_email_to_another_link_says_to_sign_in(
    services: Services, other: Org, two_links: TwoLinks, monkeypatch: pytest.MonkeyPatch
) -> None:
    in_a, in_b = two_links.a, two_links.b
    path = f"/invitations/{token_of(in_b)}"
    async with browser(services) as person, browser(services) as first:
        form = await person.get(path)  # opened while the email had no account yet
        assert 'type="password"' in form.text
        page = await first.get(f"/invitations/{token_of(in_a)}")
        made = await first.post(
            f"/invitations/{token_of(in_a)}/password", data=password_form(page.text, "A's first")
        )
        assert made.status_code == 303

        # As in a race: B's form looked for the email's account before A's link committed it.
        async def not_yet(conn: AsyncConnection, email: str, *, lock: bool = False) -> None:
            return None

        monkeypatch.setattr(users, "account_with", not_yet)
        response = await person.post(f"{path}/password", data=password_form(form.text, "B's late"))
        monkeypatch.undo()

    assert response.status_code == 409
    assert "sign in with it to accept the invitation" in response.text
    assert f'href="/login?next={path}"' in response.text
    assert 'type="password"' not in response.text
    assert sessions.COOKIE not in response.cookies
    assert await status_of(other, in_b["user_id"]) == "pending"


async def test_accepting_as_a_member_already_says_so_and_changes_nothing(
    admin: httpx.AsyncClient, client: httpx.AsyncClient, org: Org, other: Org
) -> None:
    gina, created = await invite_account(admin, org, other, "gina@example.org")
    await org.membership_row(gina, "gina@example.org")  # as only a race could make it
    path = f"/invitations/{token_of(created)}"
    await sign_in_with_form(client, "gina@example.org", PASSWORD)
    page = await client.get(path)

    response = await client.post(f"{path}/accept", data={"csrf_token": csrf_in(page.text)})

    assert response.status_code == 409
    assert "gina@example.org is already a member" in response.text
    assert await status_of(org, created["user_id"]) == "pending"
