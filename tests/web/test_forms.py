"""Every settings form: CSRF, what it does (through the same commands as the JSON API), its
messages in plain words, and that no shown-once secret ever travels in a URL."""

from __future__ import annotations

import logging
import re

import httpx
import pytest

from hangar.keys.key_format import is_well_formed
from tests.fixtures.factories import Org
from tests.fixtures.fakes import FakeClock
from tests.fixtures.pages import csrf_in, page_csrf
from tests.fixtures.shown_once import follow

AIRCRAFT = "/api/v1/external/aircraft"
KEY = re.compile(r'value="(svc_pk_[A-Za-z0-9_-]{43})"')
SECRET = re.compile(r'id="secret" class="mono" readonly value="([0-9a-f]{64})"')


def keys(org: Org, rest: str = "") -> str:
    return f"/settings/{org.id}/keys{rest}"


def hooks(org: Org, rest: str = "") -> str:
    return f"/settings/{org.id}/webhooks{rest}"


@pytest.fixture
def locations(admin: httpx.AsyncClient) -> list[str]:
    """Every Location header the admin's client receives during the test."""
    seen: list[str] = []

    async def record(response: httpx.Response) -> None:
        if "location" in response.headers:
            seen.append(response.headers["location"])

    admin.event_hooks["response"].append(record)
    return seen


async def create_key(admin: httpx.AsyncClient, org: Org, *scopes: str) -> tuple[str, str]:
    """(key id, full key) made through the create form."""
    token = await page_csrf(admin, keys(org, "/new"))
    response = await follow(
        admin,
        await admin.post(
            keys(org, "/new"), data={"csrf_token": token, "name": "sync", "scopes": list(scopes)}
        ),
    )
    match = KEY.search(response.text)
    assert match is not None
    listed = (await admin.get(f"/api/orgs/{org.id}/api-keys")).json()
    key_id = next(k["id"] for k in listed if k["prefix"] == match.group(1)[:12])
    return key_id, match.group(1)


async def create_hook(admin: httpx.AsyncClient, org: Org, name: str = "ops") -> tuple[str, str]:
    token = await page_csrf(admin, hooks(org, "/new"))
    response = await follow(
        admin,
        await admin.post(
            hooks(org, "/new"),
            data={
                "csrf_token": token,
                "name": name,
                "url": "https://hooks.example.com/in",
                "events": ["squawk.created", "mel.expired"],
            },
        ),
    )
    match = SECRET.search(response.text)
    assert match is not None
    listed = (await admin.get(f"/api/orgs/{org.id}/webhooks")).json()
    return next(s["id"] for s in listed if s["name"] == name), match.group(1)


# --- CSRF on every form ------------------------------------------------------------------


async def forms(admin: httpx.AsyncClient, org: Org) -> list[tuple[str, dict[str, object]]]:
    key_id, _ = await create_key(admin, org, "read:aircraft")
    sub_id, _ = await create_hook(admin, org, name="csrf")
    return [
        (keys(org, "/new"), {"name": "x", "scopes": ["read:aircraft"]}),
        (keys(org, f"/{key_id}/rotate"), {"grace_hours": "1"}),
        (keys(org, f"/{key_id}/revoke"), {}),
        (
            hooks(org, "/new"),
            {"name": "x", "url": "https://hooks.example.com/x", "events": ["*"]},
        ),
        (
            hooks(org, f"/{sub_id}/edit"),
            {"name": "renamed", "url": "https://hooks.example.com/x", "events": ["*"]},
        ),
        (hooks(org, f"/{sub_id}/enable"), {}),
        (hooks(org, f"/{sub_id}/rotate-secret"), {"grace_hours": "1"}),
        (hooks(org, f"/{sub_id}/test"), {}),
        (hooks(org, f"/{sub_id}/recover"), {"since": "2026-05-04T09:00"}),
        (hooks(org, f"/{sub_id}/delete"), {}),
        ("/logout", {}),
    ]


@pytest.mark.parametrize("token", [None, "", "forged-token"])
async def test_every_form_refuses_a_missing_or_wrong_csrf_token(
    admin: httpx.AsyncClient, org: Org, token: str | None
) -> None:
    targets = await forms(admin, org)
    before_keys = (await admin.get(f"/api/orgs/{org.id}/api-keys")).json()
    for path, data in targets:
        body = dict(data) if token is None else {**data, "csrf_token": token}
        response = await admin.post(path, data=body)
        assert response.status_code == 403, path
        assert "This form has expired" in response.text, path
    # Nothing happened: same keys, same states, the webhook neither renamed nor deleted.
    after_keys = (await admin.get(f"/api/orgs/{org.id}/api-keys")).json()
    assert [(k["id"], k["status"]) for k in after_keys] == [
        (k["id"], k["status"]) for k in before_keys
    ]
    subs = (await admin.get(f"/api/orgs/{org.id}/webhooks")).json()
    assert [s["name"] for s in subs] == ["csrf"]
    assert (await admin.get("/api/session")).status_code == 200  # not signed out


async def test_the_csrf_token_of_another_session_does_not_pass(
    admin: httpx.AsyncClient, outsider: httpx.AsyncClient, org: Org
) -> None:
    stolen = outsider.headers["X-CSRF-Token"]
    response = await admin.post(
        keys(org, "/new"), data={"csrf_token": stolen, "name": "x", "scopes": "read:aircraft"}
    )
    assert response.status_code == 403


async def test_the_sign_in_form_needs_its_own_token(client: httpx.AsyncClient, org: Org) -> None:
    await org.member("admin", email="login-csrf@example.org", password="correct horse battery")
    response = await client.post(
        "/login",
        data={"email": "login-csrf@example.org", "password": "correct horse battery"},
    )
    assert response.status_code == 403
    assert "hangar_session" not in response.cookies
    assert "expired" in response.text


# --- keys --------------------------------------------------------------------------------


async def test_create_shows_the_key_once_and_it_works_as_shown(
    admin: httpx.AsyncClient,
    client: httpx.AsyncClient,
    org: Org,
    locations: list[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    _, key = await create_key(admin, org, "read:aircraft", "read:reservations")
    assert key not in caplog.text
    assert is_well_formed(key)
    assert (
        await client.get(AIRCRAFT, headers={"Authorization": f"Bearer {key}"})
    ).status_code == 200
    assert (
        await client.get("/api/v1/external/squawks", headers={"Authorization": f"Bearer {key}"})
    ).status_code == 403
    listing = await admin.get(keys(org))
    assert key[:12] in listing.text
    assert key not in listing.text
    assert "Active" in listing.text
    assert all(key not in url for url in locations)


async def test_the_shown_once_page_gives_a_feed_url_only_with_read_reservations(
    admin: httpx.AsyncClient, client: httpx.AsyncClient, org: Org
) -> None:
    token = await page_csrf(admin, keys(org, "/new"))
    page = await follow(
        admin,
        await admin.post(
            keys(org, "/new"),
            data={"csrf_token": token, "name": "calendar", "scopes": "read:reservations"},
        ),
    )
    feed = re.search(r'id="feed-url" class="mono" readonly value="([^"]+)"', page.text)
    assert feed is not None
    assert feed.group(1).startswith(
        "https://hangar.example/api/v1/external/reservations.ics?token="
    )
    assert "live credential" in page.text
    answer = await client.get(feed.group(1).removeprefix("https://hangar.example"))
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/calendar")

    token = await page_csrf(admin, keys(org, "/new"))
    page = await follow(
        admin,
        await admin.post(
            keys(org, "/new"),
            data={"csrf_token": token, "name": "fleet", "scopes": "read:aircraft"},
        ),
    )
    assert KEY.search(page.text) is not None
    assert 'id="feed-url"' not in page.text


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"name": "x"}, "at least one scope"),
        ({"name": "", "scopes": "read:aircraft"}, "This cannot be empty."),
        ({"name": "x", "scopes": "write:everything"}, "write:everything"),
    ],
)
async def test_create_errors_are_words_beside_the_field(
    admin: httpx.AsyncClient, org: Org, data: dict[str, str], message: str
) -> None:
    token = await page_csrf(admin, keys(org, "/new"))
    response = await admin.post(keys(org, "/new"), data={"csrf_token": token, **data})
    assert response.status_code == 422
    assert 'class="field-error"' in response.text
    assert message.lower() in response.text.lower()
    assert "API_KEY_SCOPES_REQUIRED" not in response.text
    assert "UNKNOWN_SCOPE" not in response.text
    assert "svc_pk_" not in response.text


async def test_rotate_with_a_grace_window_then_revoke(
    admin: httpx.AsyncClient,
    client: httpx.AsyncClient,
    org: Org,
    clock: FakeClock,
    locations: list[str],
) -> None:
    key_id, old = await create_key(admin, org, "read:aircraft")
    token = await page_csrf(admin, keys(org, f"/{key_id}/rotate"))
    page = await follow(
        admin,
        await admin.post(
            keys(org, f"/{key_id}/rotate"), data={"csrf_token": token, "grace_hours": "1"}
        ),
    )
    match = KEY.search(page.text)
    assert match is not None
    new = match.group(1)
    assert "Expiring" in page.text
    for key in (old, new):
        assert (
            await client.get(AIRCRAFT, headers={"Authorization": f"Bearer {key}"})
        ).status_code == 200
    clock.advance(hours=1)
    assert (
        await client.get(AIRCRAFT, headers={"Authorization": f"Bearer {old}"})
    ).status_code == 401
    listing = await admin.get(keys(org))
    assert "Expired (rotated; no longer accepted)" in listing.text

    new_id = next(
        k["id"]
        for k in (await admin.get(f"/api/orgs/{org.id}/api-keys")).json()
        if k["prefix"] == new[:12]
    )
    confirm = await admin.get(keys(org, f"/{new_id}/revoke"))
    assert "cannot be undone" in confirm.text
    done = await admin.post(
        keys(org, f"/{new_id}/revoke"), data={"csrf_token": csrf_in(confirm.text)}
    )
    assert done.status_code == 303
    assert done.headers["location"] == keys(org, "?done=revoked")
    assert (
        await client.get(AIRCRAFT, headers={"Authorization": f"Bearer {new}"})
    ).status_code == 401
    assert all(old not in url and new not in url for url in locations)


@pytest.mark.parametrize("grace", ["169", "-1", "soon"])
async def test_a_grace_window_outside_0_to_168_is_refused_in_words(
    admin: httpx.AsyncClient, org: Org, grace: str
) -> None:
    key_id, _ = await create_key(admin, org, "read:aircraft")
    token = await page_csrf(admin, keys(org, f"/{key_id}/rotate"))
    response = await admin.post(
        keys(org, f"/{key_id}/rotate"), data={"csrf_token": token, "grace_hours": grace}
    )
    assert response.status_code == 422
    assert "from 0 to 168" in response.text
    assert KEY.search(response.text) is None


async def test_rotating_a_rotated_key_is_explained(admin: httpx.AsyncClient, org: Org) -> None:
    key_id, _ = await create_key(admin, org, "read:aircraft")
    token = await page_csrf(admin, keys(org, f"/{key_id}/rotate"))
    await admin.post(keys(org, f"/{key_id}/rotate"), data={"csrf_token": token})
    again = await admin.post(keys(org, f"/{key_id}/rotate"), data={"csrf_token": token})
    assert again.status_code == 409
    assert "Only an active key can be rotated" in again.text


# --- webhooks ----------------------------------------------------------------------------


async def test_create_edit_enable_test_and_delete_a_webhook(
    admin: httpx.AsyncClient, org: Org, locations: list[str]
) -> None:
    sub_id, secret = await create_hook(admin, org, name="ops")
    listing = await admin.get(hooks(org))
    assert secret[:8] in listing.text
    assert secret not in listing.text
    assert "Enabled" in listing.text

    form = await admin.get(hooks(org, f"/{sub_id}/edit"))
    assert 'value="squawk.created" checked' in form.text
    saved = await admin.post(
        hooks(org, f"/{sub_id}/edit"),
        data={
            "csrf_token": csrf_in(form.text),
            "name": "ops renamed",
            "url": "https://receiver.example.org/in",
            "events": "*",
        },
    )
    assert saved.status_code == 303
    view = (await admin.get(f"/api/orgs/{org.id}/webhooks/{sub_id}")).json()
    assert (view["name"], view["url"], view["events"]) == (
        "ops renamed",
        "https://receiver.example.org/in",
        ["*"],
    )

    token = csrf_in(form.text)
    tested = await admin.post(hooks(org, f"/{sub_id}/test"), data={"csrf_token": token})
    assert tested.status_code == 303
    log = await admin.get(tested.headers["location"])
    assert "test.ping" in log.text
    assert "Pending" in log.text
    assert 'id="auto-refresh"' in log.text

    enabled = await admin.post(hooks(org, f"/{sub_id}/enable"), data={"csrf_token": token})
    assert enabled.headers["location"] == hooks(org, "?done=enabled")

    confirm = await admin.get(hooks(org, f"/{sub_id}/delete"))
    assert "cannot be undone" in confirm.text
    gone = await admin.post(hooks(org, f"/{sub_id}/delete"), data={"csrf_token": token})
    assert gone.status_code == 303
    assert (await admin.get(f"/api/orgs/{org.id}/webhooks/{sub_id}")).status_code == 404
    assert all(secret not in url for url in locations)


@pytest.mark.parametrize(
    ("url", "events", "field", "words", "code"),
    [
        ("http://hooks.example.com/x", ["*"], "url", "https", "WEBHOOK_URL_HTTPS_REQUIRED"),
        ("https://127.0.0.1/x", ["*"], "url", "", "WEBHOOK_URL_PRIVATE_IP"),
        ("not a url", ["*"], "url", "", "WEBHOOK_URL_PARSE_FAILED"),
        ("https://nowhere.example.net/x", ["*"], "url", "", "WEBHOOK_URL_DNS_FAILED"),
        ("https://hooks.example.com/x", ["squawk.*"], "events", "squawk.*", "UNKNOWN_EVENT"),
        ("https://hooks.example.com/x", [], "events", "at least one event", "VALIDATION_ERROR"),
        (
            "https://hooks.example.com/x",
            ["*", "squawk.created"],
            "events",
            "* already means every event",
            "VALIDATION_ERROR",
        ),
    ],
)
async def test_webhook_errors_are_words_beside_the_field(
    admin: httpx.AsyncClient,
    org: Org,
    url: str,
    events: list[str],
    field: str,
    words: str,
    code: str,
) -> None:
    token = await page_csrf(admin, hooks(org, "/new"))
    response = await admin.post(
        hooks(org, "/new"),
        data={"csrf_token": token, "name": "bad", "url": url, "events": events},
    )
    assert response.status_code == 422
    assert f'id="{field}-error"' in response.text
    assert words.lower() in response.text.lower()
    assert code not in response.text
    # What the admin typed is kept, so they can fix it.
    assert f'value="{url}"' in response.text
    assert (await admin.get(f"/api/orgs/{org.id}/webhooks")).json() == []


async def test_the_test_limit_is_a_page_not_json(admin: httpx.AsyncClient, org: Org) -> None:
    sub_id, _ = await create_hook(admin, org)
    token = await page_csrf(admin, hooks(org))
    for _ in range(10):
        ok = await admin.post(hooks(org, f"/{sub_id}/test"), data={"csrf_token": token})
        assert ok.status_code == 303
    refused = await admin.post(hooks(org, f"/{sub_id}/test"), data={"csrf_token": token})
    assert refused.status_code == 429
    assert refused.headers["content-type"].startswith("text/html")
    assert "10 test fires per hour" in refused.text
