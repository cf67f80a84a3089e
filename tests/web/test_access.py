"""Who may see the settings pages: sign-in redirects, refusals, org isolation, expiry."""

from __future__ import annotations

import httpx
import pytest

from hangar.auth import sessions
from tests.fixtures.environment import PASSWORD
from tests.fixtures.factories import Org
from tests.fixtures.fakes import FakeClock
from tests.fixtures.pages import csrf_in, login_form, sign_in_with_form

SETTINGS_PAGES = ["keys", "keys/new", "webhooks", "webhooks/new"]


@pytest.mark.parametrize("page", ["", *SETTINGS_PAGES])
async def test_without_a_session_every_settings_page_redirects_to_login(
    client: httpx.AsyncClient, org: Org, page: str
) -> None:
    path = f"/settings/{org.id}/{page}" if page else "/settings"
    response = await client.get(path)
    assert response.status_code == 303
    assert response.headers["location"] == f"/login?next={path.rstrip('/')}"


async def test_sign_in_through_the_form_then_land_on_the_requested_page(
    client: httpx.AsyncClient, org: Org
) -> None:
    await org.member("admin", email="pilot-admin@example.org", password=PASSWORD)
    form = await client.get(f"/login?next=/settings/{org.id}/webhooks")
    filled = login_form(
        form.text, "Pilot-Admin@example.org", PASSWORD, next=f"/settings/{org.id}/webhooks"
    )
    response = await client.post("/login", data=filled)
    assert response.status_code == 303
    assert response.headers["location"] == f"/settings/{org.id}/webhooks"
    assert sessions.COOKIE in response.cookies
    page = await client.get(response.headers["location"])
    assert page.status_code == 200
    assert "Webhooks" in page.text
    # The same session works on the JSON API: one mechanism, two presentations.
    assert (await client.get("/api/session")).status_code == 200


async def test_wrong_password_says_so_in_words(client: httpx.AsyncClient, org: Org) -> None:
    await org.member("admin", email="wrong-pw@example.org", password=PASSWORD)
    response = await sign_in_with_form(client, "wrong-pw@example.org", "not it")
    assert response.status_code == 401
    assert "Wrong email or password." in response.text
    assert sessions.COOKIE not in response.cookies


@pytest.mark.parametrize(
    "target",
    [
        "https://evil.example/x",
        "//evil.example/x",
        "/api/session",
        "/invitations//evil.example",
        "/invitations/abc/../../api/session",
        "/invitations/abc?next=//evil.example",
        "/invitations/abc\\evil.example",
        "/invitationsX",
    ],
)
async def test_next_never_leaves_the_settings_pages(
    client: httpx.AsyncClient, org: Org, target: str
) -> None:
    email = f"next-{abs(hash(target))}@example.org"
    await org.member("admin", email=email, password=PASSWORD)
    form = await client.get("/login")
    response = await client.post(
        "/login",
        data={
            "csrf_token": csrf_in(form.text),
            "email": email,
            "password": PASSWORD,
            "next": target,
        },
    )
    assert response.headers["location"] == "/settings"


async def test_an_admin_of_one_organization_goes_straight_to_its_keys(
    admin: httpx.AsyncClient, org: Org
) -> None:
    response = await admin.get("/settings")
    assert response.status_code == 303
    assert response.headers["location"] == f"/settings/{org.id}/keys"


@pytest.mark.parametrize("page", ["", *SETTINGS_PAGES])
async def test_a_member_without_org_settings_gets_a_refusal_page(
    member: httpx.AsyncClient, org: Org, page: str
) -> None:
    response = await member.get(f"/settings/{org.id}/{page}" if page else "/settings")
    assert response.status_code == 403
    assert response.headers["content-type"].startswith("text/html")
    assert "You cannot manage this organization" in response.text
    assert "org.settings" in response.text


async def test_a_member_cannot_post_either(member: httpx.AsyncClient, org: Org) -> None:
    token = member.headers["X-CSRF-Token"]
    response = await member.post(
        f"/settings/{org.id}/keys/new",
        data={"csrf_token": token, "name": "sneaky", "scopes": "read:aircraft"},
    )
    assert response.status_code == 403
    assert "svc_pk_" not in response.text


async def test_another_organizations_pages_do_not_exist_for_an_outsider(
    outsider: httpx.AsyncClient, admin: httpx.AsyncClient, org: Org, other: Org
) -> None:
    # The org's admin makes a key and a webhook; the other org's admin can reach neither.
    created = await admin.post(
        f"/api/orgs/{org.id}/api-keys", json={"name": "mine", "scopes": ["read:aircraft"]}
    )
    key_id, prefix = created.json()["id"], created.json()["prefix"]
    sub = await admin.post(
        f"/api/orgs/{org.id}/webhooks",
        json={"name": "mine", "url": "https://hooks.example.com/a", "events": ["*"]},
    )
    sub_id = sub.json()["id"]
    token = outsider.headers["X-CSRF-Token"]

    for path in [
        f"/settings/{org.id}/keys",
        f"/settings/{org.id}/webhooks",
        f"/settings/{org.id}/keys/{key_id}/revoke",
        f"/settings/{org.id}/webhooks/{sub_id}/deliveries",
    ]:
        response = await outsider.get(path)
        assert response.status_code == 404, path
        assert prefix not in response.text
    # Through their own organization's pages, the other org's rows are not found either.
    for path in [
        f"/settings/{other.id}/keys/{key_id}/revoke",
        f"/settings/{other.id}/webhooks/{sub_id}/delete",
    ]:
        response = await outsider.post(path, data={"csrf_token": token})
        assert response.status_code == 404, path
    own = await outsider.get(f"/settings/{other.id}/keys")
    assert prefix not in own.text
    still = await admin.get(f"/api/orgs/{org.id}/api-keys")
    assert next(k for k in still.json() if k["id"] == key_id)["status"] == "active"
    assert (await admin.get(f"/api/orgs/{org.id}/webhooks/{sub_id}")).status_code == 200


async def test_an_expired_session_goes_back_to_login(
    admin: httpx.AsyncClient, org: Org, clock: FakeClock
) -> None:
    assert (await admin.get(f"/settings/{org.id}/keys")).status_code == 200
    clock.advance(hours=sessions.IDLE_TIMEOUT.total_seconds() / 3600 + 1)
    response = await admin.get(f"/settings/{org.id}/keys")
    assert response.status_code == 303
    assert response.headers["location"].startswith("/login")


async def test_sign_out_ends_the_session(admin: httpx.AsyncClient, org: Org) -> None:
    page = await admin.get(f"/settings/{org.id}/keys")
    response = await admin.post("/logout", data={"csrf_token": csrf_in(page.text)})
    assert response.status_code == 303
    assert (await admin.get("/api/session")).status_code == 401


async def test_the_form_and_the_api_share_one_failure_budget(
    client: httpx.AsyncClient, org: Org
) -> None:
    await org.member("admin", email="guessed@example.org", password=PASSWORD)
    for _ in range(10):
        assert (await sign_in_with_form(client, "guessed@example.org", "nope")).status_code == 401
    refused = await sign_in_with_form(client, "guessed@example.org", PASSWORD)
    assert refused.status_code == 429
    assert "Too many failed sign-ins" in refused.text
    assert sessions.COOKIE not in refused.cookies
    api = await client.post(
        "/api/session", json={"email": "guessed@example.org", "password": PASSWORD}
    )
    assert api.status_code == 429


async def test_an_admin_of_two_organizations_chooses_and_sees_each_ones_keys_only(
    client: httpx.AsyncClient, org: Org, other: Org
) -> None:
    email = "two-orgs@example.org"
    await org.member("admin", email=email, password=PASSWORD)
    await other.member("admin", email=email, password=PASSWORD)
    await sign_in_with_form(client, email, PASSWORD)
    chooser = await client.get("/settings")
    assert chooser.status_code == 200
    assert f'href="/settings/{org.id}/keys"' in chooser.text
    assert f'href="/settings/{other.id}/keys"' in chooser.text
    # Each organization's full-scope test key shows only on its own page.
    mine = (await client.get(f"/settings/{org.id}/keys")).text
    theirs = (await client.get(f"/settings/{other.id}/keys")).text
    assert org.key[:12] in mine
    assert other.key[:12] not in mine
    assert other.key[:12] in theirs
    assert org.key[:12] not in theirs
    assert "Switch organization" in mine
