"""The webhooks screen's Rotate secret (issue 28): a form with the grace window and CSRF, then
the new secret shown once with its `whsec_` form and copy buttons, saying until when the
previous secret also signs; refusals in words; and nobody else's subscription."""

from __future__ import annotations

import base64
import html
import re
from datetime import datetime, timedelta

import httpx
import pytest

from tests.fixtures.factories import Org
from tests.fixtures.fakes import FakeClock
from tests.fixtures.pages import csrf_in, page_csrf
from tests.fixtures.secret_rotation import hooks_url, subscribed
from tests.fixtures.shown_once import follow

SECRET = re.compile(r'id="secret" class="mono" readonly value="([0-9a-f]{64})"')
WHSEC = re.compile(r'id="secret-whsec" class="mono" readonly value="(whsec_[A-Za-z0-9+/=]+)"')
STILL_SIGNS = "The previous secret also signs"


def screen(org: Org, rest: str = "") -> str:
    return f"/settings/{org.id}/webhooks{rest}"


def words(page: str) -> str:
    """The page's text as a person reads it: no tags, one space between words."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", "", page)).split())


def shown_secret(page: str) -> str | None:
    match = SECRET.search(page)
    return None if match is None else match.group(1)


async def view(admin: httpx.AsyncClient, org: Org, sub_id: str) -> dict[str, object]:
    found: dict[str, object] = (await admin.get(hooks_url(org, sub_id))).json()
    return found


async def test_the_edit_form_points_at_rotate_secret(admin: httpx.AsyncClient, org: Org) -> None:
    """Changing a secret is Rotate secret's job: the edit form says so and links to it, where
    it once said to delete the webhook and add a new one."""
    created = await subscribed(admin, org)
    form = await admin.get(screen(org, f"/{created['id']}/edit"))
    assert form.status_code == 200
    rotate = screen(org, f"/{created['id']}/rotate-secret")
    assert f'To change it, use <a href="{rotate}">Rotate secret</a>' in form.text
    assert "delete this webhook" not in words(form.text)


async def test_rotate_from_the_list_then_copy_the_new_secret_once(
    admin: httpx.AsyncClient, org: Org, clock: FakeClock
) -> None:
    created = await subscribed(admin, org)
    rotate = screen(org, f"/{created['id']}/rotate-secret")
    listing = await admin.get(screen(org))
    assert f'href="{rotate}">Rotate secret' in listing.text
    assert STILL_SIGNS not in listing.text

    form = await admin.get(rotate)
    assert form.status_code == 200
    assert 'name="grace_hours"' in form.text
    assert 'max="72"' in form.text
    assert 'value="24"' in form.text  # the default, chosen for you
    assert created["secret_prefix"] in form.text
    page = await follow(
        admin, await admin.post(rotate, data={"csrf_token": csrf_in(form.text), "grace_hours": "2"})
    )

    secret = shown_secret(page.text)
    whsec = WHSEC.search(page.text)
    assert secret is not None
    assert whsec is not None
    assert secret != created["secret"]
    assert base64.b64decode(whsec.group(1).removeprefix("whsec_")) == secret.encode()
    assert 'data-copy="secret"' in page.text
    assert 'data-copy="secret-whsec"' in page.text
    assert "It will not be shown again" in page.text
    text = words(page.text)
    until = (clock.now() + timedelta(hours=2)).strftime("%Y-%m-%d %H:%M UTC")
    assert f"The previous secret also signs every delivery until {until}" in text
    assert "X-Service-Signature-Previous" in text
    fetched = await view(admin, org, created["id"])
    assert fetched["secret_prefix"] == secret[:8]
    assert fetched["previous_secret_expires_at"] is not None

    # Shown once: the list names only the prefix, and says the old secret still signs.
    listing = await admin.get(screen(org))
    assert secret not in listing.text
    assert secret[:8] in listing.text
    assert STILL_SIGNS in listing.text
    again = await admin.get(rotate)
    assert "still signs until" in words(again.text)
    # Once the grace is over, neither page speaks of it.
    clock.advance(hours=2)
    assert STILL_SIGNS not in (await admin.get(screen(org))).text
    assert "still signs until" not in words((await admin.get(rotate)).text)


async def test_a_grace_of_0_says_the_old_secret_stopped(admin: httpx.AsyncClient, org: Org) -> None:
    created = await subscribed(admin, org)
    rotate = screen(org, f"/{created['id']}/rotate-secret")
    token = await page_csrf(admin, rotate)
    page = await follow(
        admin, await admin.post(rotate, data={"csrf_token": token, "grace_hours": "0"})
    )
    assert shown_secret(page.text) is not None
    assert "The previous secret no longer signs" in page.text
    assert (await view(admin, org, created["id"]))["previous_secret_expires_at"] is None
    assert STILL_SIGNS not in (await admin.get(screen(org))).text


async def test_an_empty_grace_field_is_the_default(
    admin: httpx.AsyncClient, org: Org, clock: FakeClock
) -> None:
    created = await subscribed(admin, org)
    rotate = screen(org, f"/{created['id']}/rotate-secret")
    token = await page_csrf(admin, rotate)
    page = await admin.post(rotate, data={"csrf_token": token, "grace_hours": " "})
    assert page.status_code == 303
    expires = (await view(admin, org, created["id"]))["previous_secret_expires_at"]
    assert isinstance(expires, str)
    assert datetime.fromisoformat(expires) == clock.now() + timedelta(hours=24)


@pytest.mark.parametrize("grace", ["73", "-1", "soon", "1.5", "\uff12\uff14"])
async def test_a_grace_outside_0_to_72_is_refused_in_words(
    admin: httpx.AsyncClient, org: Org, grace: str
) -> None:
    created = await subscribed(admin, org)
    rotate = screen(org, f"/{created['id']}/rotate-secret")
    token = await page_csrf(admin, rotate)
    page = await admin.post(rotate, data={"csrf_token": token, "grace_hours": grace})
    assert page.status_code == 422
    assert "Choose a whole number of hours from 0 to 72." in page.text
    assert 'aria-invalid="true"' in page.text
    assert f'value="{html.escape(grace)}"' in page.text  # what was typed, to correct
    assert shown_secret(page.text) is None
    assert (await view(admin, org, created["id"]))["secret_prefix"] == created["secret_prefix"]


@pytest.mark.parametrize("token", [None, "", "forged-token"])
async def test_the_form_needs_its_csrf_token(
    admin: httpx.AsyncClient, org: Org, token: str | None
) -> None:
    created = await subscribed(admin, org)
    data = {"grace_hours": "1"} | ({} if token is None else {"csrf_token": token})
    page = await admin.post(screen(org, f"/{created['id']}/rotate-secret"), data=data)
    assert page.status_code == 403
    assert "This form has expired" in page.text
    assert shown_secret(page.text) is None
    assert (await view(admin, org, created["id"]))["secret_prefix"] == created["secret_prefix"]


async def test_nobody_else_rotates_it(
    admin: httpx.AsyncClient,
    member: httpx.AsyncClient,
    outsider: httpx.AsyncClient,
    org: Org,
    other: Org,
) -> None:
    mine = await subscribed(admin, org)
    theirs = await subscribed(outsider, other)
    token = outsider.headers["X-CSRF-Token"]
    for path in (
        screen(org, f"/{mine['id']}/rotate-secret"),
        f"/settings/{other.id}/webhooks/{mine['id']}/rotate-secret",
    ):
        assert (await outsider.get(path)).status_code == 404, path
        posted = await outsider.post(path, data={"csrf_token": token, "grace_hours": "1"})
        assert posted.status_code == 404, path
        assert shown_secret(posted.text) is None
    # My organization's page, their subscription: not found either.
    mine_token = admin.headers["X-CSRF-Token"]
    crossed = screen(org, f"/{theirs['id']}/rotate-secret")
    assert (await admin.post(crossed, data={"csrf_token": mine_token})).status_code == 404
    refused = await member.get(screen(org, f"/{mine['id']}/rotate-secret"))
    assert refused.status_code == 403
    member_token = member.headers["X-CSRF-Token"]
    posted = await member.post(
        screen(org, f"/{mine['id']}/rotate-secret"), data={"csrf_token": member_token}
    )
    assert posted.status_code == 403
    assert (await view(admin, org, mine["id"]))["secret_prefix"] == mine["secret_prefix"]
    assert (await view(outsider, other, theirs["id"]))["secret_prefix"] == theirs["secret_prefix"]
    # The other organization's list shows nothing of mine.
    listing = await outsider.get(f"/settings/{other.id}/webhooks")
    assert mine["secret_prefix"] not in listing.text
    assert mine["id"] not in listing.text
