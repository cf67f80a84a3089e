"""read:events, the events API's scope: additive (keys made before it keep what they had),
and a key can be made and rotated with it on the screens, through the session API and with
the CLI."""

from __future__ import annotations

import re

import httpx

from hangar.kit.scopes import SCOPES
from tests.fixtures.event_log import page, record
from tests.fixtures.factories import Org
from tests.fixtures.fakes import FakeClock
from tests.fixtures.pages import page_csrf
from tests.fixtures.shown_once import follow

KEY = re.compile(r'value="(svc_pk_[A-Za-z0-9_-]{43})"')
EVENTS = "/api/v1/external/events"


def keys_url(org: Org, rest: str = "") -> str:
    return f"/api/orgs/{org.id}/api-keys{rest}"


def screen(org: Org, rest: str = "") -> str:
    return f"/settings/{org.id}/keys{rest}"


async def test_keys_made_before_it_keep_their_scopes_and_are_refused_the_events(
    client: httpx.AsyncClient, org: Org
) -> None:
    older = await org.key_with(*(s for s in SCOPES if s != "read:events"))
    assert (
        await client.get("/api/v1/external/aircraft", headers=_bearer(older))
    ).status_code == 200
    refused = await client.get(EVENTS, headers=_bearer(older))
    assert refused.status_code == 403
    assert refused.json()["code"] == "INSUFFICIENT_SCOPE"


async def test_the_session_api_makes_and_rotates_a_key_with_it(
    admin: httpx.AsyncClient, client: httpx.AsyncClient, org: Org, clock: FakeClock
) -> None:
    [fired] = await record(org, clock.now())
    # The event recorded is a squawk's: read:events needs read:squawks beside it to list it.
    scopes = ["read:events", "read:squawks"]
    made = await admin.post(keys_url(org), json={"name": "catch-up", "scopes": scopes})
    assert made.status_code == 201, made.text
    assert sorted(made.json()["scopes"]) == scopes
    rotated = await admin.post(keys_url(org, f"/{made.json()['id']}/rotate"), json={})
    assert rotated.status_code == 201
    new = rotated.json()["new"]
    assert sorted(new["scopes"]) == scopes
    for key in (made.json()["key"], new["key"]):
        assert [i["id"] for i in (await page(client, key))["items"]] == [fired]


async def test_the_screens_offer_it_and_make_and_rotate_a_key_with_it(
    admin: httpx.AsyncClient, client: httpx.AsyncClient, org: Org, clock: FakeClock
) -> None:
    [fired] = await record(org, clock.now())
    form = await admin.get(screen(org, "/new"))
    assert 'value="read:events"' in form.text
    # The screen says what read:events reads: only what the key's other scopes read.
    assert "each only with the scope that reads what it concerns" in form.text
    token = await page_csrf(admin, screen(org, "/new"))
    scopes = ["read:events", "read:squawks"]
    shown = await follow(
        admin,
        await admin.post(
            screen(org, "/new"), data={"csrf_token": token, "name": "sync", "scopes": scopes}
        ),
    )
    match = KEY.search(shown.text)
    assert match is not None, shown.text
    key = match.group(1)
    assert [i["id"] for i in (await page(client, key))["items"]] == [fired]

    key_id = next(
        k["id"] for k in (await admin.get(keys_url(org))).json() if k["prefix"] == key[:12]
    )
    token = await page_csrf(admin, screen(org, f"/{key_id}/rotate"))
    rotated = await follow(
        admin,
        await admin.post(
            screen(org, f"/{key_id}/rotate"), data={"csrf_token": token, "grace_hours": "1"}
        ),
    )
    match = KEY.search(rotated.text)
    assert match is not None
    assert [i["id"] for i in (await page(client, match.group(1)))["items"]] == [fired]


def _bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}
