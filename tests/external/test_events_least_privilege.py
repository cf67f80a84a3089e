"""The events API lists an event only to a key that may read what it concerns (issue 41,
point 6): before, a `read:events` key read squawks, reservations, MEL items and aircraft
through /events while /squawks answered it 403. Asking for an event by name without its
scope is 403; a cursor stays valid whatever scopes its key has."""

from __future__ import annotations

import httpx
import pytest

from hangar.webhooks.events.catalogue import EVENT_NAMES, READ_SCOPE
from tests.fixtures.all_events import fire_everything
from tests.fixtures.event_log import URL, page, record
from tests.fixtures.factories import Org
from tests.fixtures.fakes import FakeClock

SCOPES = sorted(set(READ_SCOPE.values()))


@pytest.fixture
async def every_event(admin: httpx.AsyncClient, org: Org, other: Org, clock: FakeClock) -> None:
    await fire_everything(admin, org, clock)
    await record(other, clock.now(), EVENT_NAMES)  # never shown to org's keys


async def names(client: httpx.AsyncClient, key: str) -> set[str]:
    return {item["event"] for item in (await page(client, key, limit=500))["items"]}


@pytest.mark.usefixtures("every_event")
async def test_each_scope_reads_exactly_its_events(client: httpx.AsyncClient, org: Org) -> None:
    assert set(READ_SCOPE) == set(EVENT_NAMES)
    assert await names(client, await org.key_with("read:events", *SCOPES)) == set(EVENT_NAMES)
    assert await names(client, await org.key_with("read:events")) == set()
    for scope in SCOPES:
        key = await org.key_with("read:events", scope)
        assert await names(client, key) == {n for n, s in READ_SCOPE.items() if s == scope}
    # And the operations they concern agree: /squawks refuses what /events hides from it.
    key = await org.key_with("read:events", "read:aircraft")
    bearer = {"Authorization": f"Bearer {key}"}
    assert (await client.get("/api/v1/external/squawks", headers=bearer)).status_code == 403


@pytest.mark.usefixtures("every_event")
async def test_naming_an_event_without_its_scope_is_refused(
    client: httpx.AsyncClient, org: Org
) -> None:
    key = await org.key_with("read:events", "read:reservations")
    refused = await client.get(
        URL,
        params={"event": ["reservation.created", "squawk.created"]},
        headers={"Authorization": f"Bearer {key}"},
    )
    assert refused.status_code == 403
    assert refused.json()["code"] == "INSUFFICIENT_SCOPE"
    assert "read:squawks" in refused.json()["detail"]
    allowed = await page(client, key, event="reservation.created")
    assert {item["event"] for item in allowed["items"]} == {"reservation.created"}


async def test_a_cursor_stays_valid_when_its_key_reads_fewer_events(
    client: httpx.AsyncClient, admin: httpx.AsyncClient, org: Org, clock: FakeClock
) -> None:
    everything = await org.key_with("read:events", *SCOPES)
    cursor = (await page(client, everything))["next_cursor"]
    await fire_everything(admin, org, clock)
    fewer = await org.key_with("read:events", "read:maintenance")
    after = await page(client, fewer, after=cursor)
    assert {item["event"] for item in after["items"]} == {"mel.created", "mel.expired"}
