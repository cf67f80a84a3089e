"""/password-reset/{token}: the operator's recovery link (`hangar user reset-password`). It
sets the account's password once, within 24 hours, only while it is the account's newest
link; it signs the holder in and every other session of the account out. Time moves only
when a test moves the clock."""

from __future__ import annotations

import asyncio
import uuid

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from hangar.accounts.service import password_reset
from hangar.auth import passwords, sessions
from hangar.kit.container import Services
from hangar.kit.errors import NotFound
from hangar.web.pages import templates
from tests.fixtures.environment import PASSWORD
from tests.fixtures.factories import Org
from tests.fixtures.fakes import FakeClock
from tests.fixtures.invites import UserRow, browser, invite, org_ids, sign_in, user_row
from tests.fixtures.pages import csrf_in, password_form

GONE = "This password reset link is not valid or has expired"


async def issued(engine: AsyncEngine, email: str, clock: FakeClock) -> str:
    """A recovery link's token for `email`'s account, as the operator's command makes it."""
    async with engine.begin() as conn:
        return (await password_reset.issue_reset(conn, email, clock.now())).token


async def reset(person: httpx.AsyncClient, token: str, password: str) -> httpx.Response:
    page = await person.get(f"/password-reset/{token}")
    if page.status_code != 200:
        return page
    return await person.post(f"/password-reset/{token}", data=password_form(page.text, password))


def gone(response: httpx.Response) -> bool:
    return response.status_code == 404 and GONE in response.text


async def test_the_link_sets_the_password_signs_in_and_signs_every_other_session_out(
    services: Services, org: Org, clock: FakeClock
) -> None:
    email = f"held-{uuid.uuid4().hex[:8]}@example.org"
    account = await org.member("instructor", email=email, password=PASSWORD)
    async with browser(services) as elsewhere:
        assert (await sign_in(elsewhere, email, PASSWORD)).status_code == 200
        token = await issued(org.engine, email.upper(), clock)

        async with browser(services) as holder:
            page = await holder.get(f"/password-reset/{token}")
            assert page.status_code == 200
            assert page.headers["cache-control"] == "no-store"
            assert email in page.text
            done = await holder.post(
                f"/password-reset/{token}", data=password_form(page.text, "a brand new one")
            )
            assert done.status_code == 303
            assert done.headers["location"] == "/settings"
            assert sessions.COOKIE in done.cookies
            session = (await holder.get("/api/session")).json()
            assert session["user"] == {"id": str(account), "email": email}
            assert org_ids(session) == {str(org.id)}  # the account's memberships, no more
            # Used once: the link is gone.
            assert gone(await holder.get(f"/password-reset/{token}"))

        assert (await elsewhere.get("/api/session")).status_code == 401
    async with browser(services) as later:
        assert (await sign_in(later, email, PASSWORD)).status_code == 401
        assert (await sign_in(later, email, "a brand new one")).status_code == 200


async def test_a_link_works_for_24_hours(services: Services, org: Org, clock: FakeClock) -> None:
    assert password_reset.RESET_LIFETIME.total_seconds() == 24 * 3600
    early = f"early-{uuid.uuid4().hex[:8]}@example.org"
    late = f"late-{uuid.uuid4().hex[:8]}@example.org"
    for email in (early, late):
        await org.member("member", email=email)
    early_token = await issued(org.engine, early, clock)
    late_token = await issued(org.engine, late, clock)
    clock.advance(hours=24, seconds=-1)
    async with browser(services) as person:
        assert (await reset(person, early_token, "just in time")).status_code == 303

    clock.advance(seconds=1)

    async with browser(services) as person:
        assert gone(await person.get(f"/password-reset/{late_token}"))
        assert gone(await person.post(f"/password-reset/{late_token}", data={}))
    assert await user_row(org.engine, (await org.member("member")))  # the org still works


async def test_a_link_is_used_once_even_by_two_at_once(
    services: Services, org: Org, clock: FakeClock
) -> None:
    email = f"race-{uuid.uuid4().hex[:8]}@example.org"
    account = await org.member("member", email=email)
    token = await issued(org.engine, email, clock)
    async with browser(services) as one, browser(services) as two:
        pages = [await c.get(f"/password-reset/{token}") for c in (one, two)]
        first, second = await asyncio.gather(
            one.post(f"/password-reset/{token}", data=password_form(pages[0].text, "first one!")),
            two.post(f"/password-reset/{token}", data=password_form(pages[1].text, "second one")),
        )
    assert sorted([first.status_code, second.status_code]) == [303, 404]
    winner = "first one!" if first.status_code == 303 else "second one"
    loser = "second one" if winner == "first one!" else "first one!"
    async with browser(services) as later:
        assert (await sign_in(later, email, loser)).status_code == 401
        assert (await sign_in(later, email, winner)).status_code == 200
    assert await user_row(org.engine, account) == UserRow(email, True)


async def test_a_new_link_replaces_the_last(services: Services, org: Org, clock: FakeClock) -> None:
    email = f"twice-{uuid.uuid4().hex[:8]}@example.org"
    await org.member("member", email=email)
    old = await issued(org.engine, email, clock)
    new = await issued(org.engine, email, clock)
    async with browser(services) as person:
        assert gone(await reset(person, old, "the old link's"))
        assert (await reset(person, new, "the new link's")).status_code == 303


async def test_the_form_needs_its_own_csrf_cookie_and_a_sound_password(
    services: Services, org: Org, clock: FakeClock
) -> None:
    email = f"forms-{uuid.uuid4().hex[:8]}@example.org"
    account = await org.member("member", email=email)
    token = await issued(org.engine, email, clock)
    path = f"/password-reset/{token}"
    async with browser(services) as attacker:
        stolen = csrf_in((await attacker.get(path)).text)
    async with browser(services) as victim:
        forged = await victim.post(
            path,
            data={"csrf_token": stolen, "password": "attacker's", "password_again": "attacker's"},
        )
        assert forged.status_code == 403
        page = await victim.get(path)
        for first, second, why in (
            ("long enough 1", "long enough 2", "The two passwords differ"),
            ("short", "short", "8 to 1024 characters"),
        ):
            refused = await victim.post(path, data=password_form(page.text, first, again=second))
            assert refused.status_code == 422
            assert why in refused.text
            assert sessions.COOKIE not in refused.cookies
            page = refused  # each answer's form carries a fresh token
    assert await user_row(org.engine, account) == UserRow(email, False)
    async with browser(services) as person:  # the link still works
        assert (await reset(person, token, "finally right")).status_code == 303


@pytest.mark.parametrize("token", ["A" * 43, "", "x" * 500])
async def test_an_unknown_link_is_one_404_page(services: Services, token: str) -> None:
    async with browser(services) as person:
        response = await person.get(f"/password-reset/{token}")
    assert response.status_code == 404


async def test_only_an_account_gets_a_link_never_an_invitations_placeholder(
    admin: httpx.AsyncClient, org: Org, clock: FakeClock
) -> None:
    await invite(admin, org, "invited-only@example.org")  # a placeholder, no account
    for email in ("invited-only@example.org", "nobody@example.org", ""):
        with pytest.raises(NotFound):
            await issued(org.engine, email, clock)


async def test_the_form_states_the_one_password_rule(
    services: Services, org: Org, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The form's bounds and hint are hangar.auth.passwords's, not numbers of its own: a rule
    changed there changes the page (the invitation page shares the template globals)."""
    email = f"rule-{uuid.uuid4().hex[:8]}@example.org"
    await org.member("member", email=email)
    token = await issued(org.engine, email, clock)
    assert templates.globals["password_min"] == passwords.MIN_LENGTH
    assert templates.globals["password_max"] == passwords.MAX_LENGTH
    monkeypatch.setitem(templates.globals, "password_min", 12)
    monkeypatch.setitem(templates.globals, "password_max", 64)
    async with browser(services) as person:
        page = (await person.get(f"/password-reset/{token}")).text
    assert page.count('minlength="12" maxlength="64"') == 2
    assert "At least 12 characters." in page


def test_the_mail_and_the_refusal_say_link_in_plain_words(clock: FakeClock) -> None:
    issued = password_reset.IssuedReset(uuid.uuid4(), "pat@example.org", "t0ken", clock.now())
    mail = password_reset.reset_mail(
        issued, "https://hangar.example/password-reset/t0ken", clock.now()
    )
    assert mail.subject == "Your hangar password reset link"
    assert "A password reset link was made for your hangar account, pat@example.org." in mail.body
    assert "Open this link to choose a new password:" in mail.body
    refused = password_reset.reset_not_valid()
    assert refused.detail == "This password reset link is not valid or has expired"
