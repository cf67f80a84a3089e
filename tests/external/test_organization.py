"""GET /api/v1/external/organization: which organization a key belongs to, and the key."""

from __future__ import annotations

from datetime import timedelta

import httpx
from sqlalchemy import update

from hangar.foundation.crypto import token_digest
from hangar.keys.models import ApiKey
from hangar.kit.scopes import SCOPES
from tests.fixtures.factories import T0, Org
from tests.fixtures.fakes import FakeClock

URL = "/api/v1/external/organization"


def _bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


async def test_any_key_may_ask_for_its_organization(
    client: httpx.AsyncClient, org: Org, other: Org
) -> None:
    narrow = await org.key_with("read:squawks")
    for key, scopes in ((org.key, list(SCOPES)), (narrow, ["read:squawks"])):
        response = await client.get(URL, headers=_bearer(key))
        assert response.status_code == 200, response.text
        answer = response.json()
        assert answer == {
            "id": str(org.id),
            "name": answer["name"],
            "key": {"prefix": key[:12], "scopes": scopes, "expires_at": None},
        }
        assert answer["name"].startswith("Acme Flight School ")  # the fixture's, made unique
    # A key from before scopes were required has none, and may still ask.
    legacy = await org.legacy_key()
    answer = (await client.get(URL, headers=_bearer(legacy))).json()
    assert answer["id"] == str(org.id)
    assert answer["key"]["scopes"] == []
    # The other organization's key names the other organization, never this one.
    theirs = (await client.get(URL, headers=other.auth)).json()
    assert theirs["id"] == str(other.id)
    assert theirs["name"].startswith("Other Aero Club ")
    assert theirs["key"]["prefix"] == other.key[:12]


async def test_a_rotated_out_key_says_when_it_stops(
    client: httpx.AsyncClient, org: Org, clock: FakeClock
) -> None:
    ends = T0 + timedelta(days=1)
    async with org.engine.begin() as conn:
        await conn.execute(
            update(ApiKey).where(ApiKey.key_hash == token_digest(org.key)).values(expires_at=ends)
        )
    clock.set(T0)
    answer = (await client.get(URL, headers=org.auth)).json()
    assert answer["key"]["expires_at"] == "2026-05-02T09:00:00Z"
    clock.set(ends)
    gone = await client.get(URL, headers=org.auth)
    assert gone.status_code == 401
    assert gone.json()["code"] == "UNAUTHORIZED"


async def test_no_key_or_a_bad_one_is_refused(client: httpx.AsyncClient, org: Org) -> None:
    for headers in ({}, _bearer("svc_pk_nope"), _bearer(org.key + "x"), {"Authorization": "x"}):
        response = await client.get(URL, headers=headers)
        assert response.status_code == 401, headers
        assert response.json()["code"] == "UNAUTHORIZED"
        assert "www-authenticate" in response.headers
    # Parameters it does not take are ignored, as on every operation.
    assert (await client.get(URL, params={"x": "1"}, headers=org.auth)).status_code == 200


async def test_it_counts_against_the_keys_limits(
    client: httpx.AsyncClient, org: Org, clock: FakeClock
) -> None:
    clock.set(clock.now().replace(second=0, microsecond=0))
    await client.get("/api/v1/external/aircraft", headers=org.auth)
    sent = [(await client.get(URL, headers=org.auth)).status_code for _ in range(60)]
    assert sent == [200] * 59 + [429]
