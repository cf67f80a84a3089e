"""The events API through the client (`client.events`), against a live hangar: every event
once, oldest first, typed like the webhook deliveries' data, across pages and across a poll
that finds nothing and then more; the cursor to resume from; the errors as typed exceptions;
and never another organization's events."""

from __future__ import annotations

import dataclasses
import json
import typing
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from hangar.fleet.models import Aircraft
from hangar.kit.container import Services
from hangar.webhooks.delivery import signing
from hangar_client import (
    AsyncClient,
    Client,
    CursorExpired,
    Event,
    EventPage,
    InsufficientScope,
    InvalidCursor,
    UnknownEvent,
    ValidationFailed,
    parse_event,
)
from hangar_client.events import EVENT_TYPES, EventName, SquawkCreated
from tests.fixtures.actions import raw_events, url
from tests.fixtures.all_events import fire_everything
from tests.fixtures.clients import signed_in_client
from tests.fixtures.factories import Org
from tests.fixtures.fakes import FakeClock
from tests.fixtures.live_server import LiveServer
from tests.fixtures.python_client import Harness, wire

API = "/api/v1/external"


async def report_squawks(admin: httpx.AsyncClient, org: Org, count: int) -> list[str]:
    """`count` squawk.created events, fired by the product action; the squawks' ids."""
    plane = str((await org.add(Aircraft))["id"])
    ids = []
    for n in range(count):
        squawk = {"aircraft_id": plane, "description": f"squawk {n}", "severity": "minor"}
        response = await admin.post(url(org, "squawks"), json=squawk)
        assert response.status_code == 201, response.text
        ids.append(response.json()["id"])
    return ids


def squawk_ids(events: list[Event]) -> list[str]:
    found = []
    for event in events:
        assert isinstance(event.data, SquawkCreated), event
        found.append(event.data.id)
    return found


async def test_iter_walks_every_event_once_in_order_across_pages_and_polls(
    api: AsyncClient,
    harness: Harness,
    admin: httpx.AsyncClient,
    outsider: httpx.AsyncClient,
    org: Org,
    other: Org,
) -> None:
    first = await report_squawks(admin, org, 5)
    await report_squawks(outsider, other, 2)
    walk = api.events.iter(limit=2)
    assert walk.cursor is None
    seen = [await anext(walk)]
    assert walk.cursor is None  # the first page is not all handed out yet
    seen += [event async for event in walk]
    assert squawk_ids(seen) == first  # oldest first, each once, only this organization's
    assert [e.event for e in seen] == ["squawk.created"] * 5
    pages = [sent for sent in harness.transport.sent if sent.startswith(f"{API}/events")]
    assert len(pages) == 3  # pages of 2, 2 and 1: a short page means caught up
    assert pages[0] == f"{API}/events?limit=2"
    assert all(sent.startswith(f"{API}/events?limit=2&after=") for sent in pages[1:])
    caught_up = walk.cursor
    assert isinstance(caught_up, str)

    harness.transport.sent.clear()
    idle = api.events.iter(after=caught_up, limit=2)
    assert [event async for event in idle] == []  # nothing new: one request, a new cursor
    assert len(harness.transport.sent) == 1
    assert isinstance(idle.cursor, str)

    later = await report_squawks(admin, org, 3)
    await report_squawks(outsider, other, 1)
    resumed = api.events.iter(after=idle.cursor, limit=2)
    assert squawk_ids([event async for event in resumed]) == later
    again = api.events.iter(after=resumed.cursor)
    assert [event async for event in again] == []


async def test_a_walk_stopped_in_a_page_resumes_at_that_page(
    api: AsyncClient, admin: httpx.AsyncClient, org: Org, other: Org
) -> None:
    fired = await report_squawks(admin, org, 4)
    walk = api.events.iter(limit=2)
    taken = [await anext(walk) for _ in range(3)]  # all of page 1, one of page 2
    assert squawk_ids(taken) == fired[:3]
    resumed = api.events.iter(after=walk.cursor, limit=2)
    # At least once: the cursor marks pages, so page 2 comes whole again.
    assert squawk_ids([event async for event in resumed]) == fired[2:]


async def test_an_event_is_typed_as_its_webhook_data_and_keeps_it_as_sent(
    api: AsyncClient,
    client: httpx.AsyncClient,
    admin: httpx.AsyncClient,
    org: Org,
    other: Org,
    clock: FakeClock,
) -> None:
    await fire_everything(admin, org, clock)
    page = await api.events.list(limit=500)
    assert isinstance(page, EventPage)
    response = await client.get(f"{API}/events", params={"limit": 500}, headers=org.auth)
    assert response.status_code == 200, response.text
    sent = response.json()["items"]
    stored = await raw_events(org.engine, org.id)
    assert len(page.items) == len(sent) == len(stored) >= 13
    assert sorted(e.event for e in page.items) == sorted(name for name, _ in stored)
    for event, item in zip(page.items, sent, strict=True):
        assert (event.id, event.event, wire(event.created_at)) == (
            item["id"],
            item["event"],
            item["created_at"],
        )
        assert event.created_at.tzinfo is not None
        assert type(event.data) is EVENT_TYPES[event.event]
        assert event.raw_data == item["data"]
        # The same typed data a delivery of this event parses to.
        data = json.dumps(event.raw_data, separators=(",", ":"), ensure_ascii=False)
        assert (event.event, data) in stored  # byte for byte the deliveries' data
        body = signing.envelope(event.event, clock.now(), data)
        assert parse_event(body).data == event.data


async def test_filters_by_event_names_and_creation_time(
    api: AsyncClient,
    harness: Harness,
    admin: httpx.AsyncClient,
    org: Org,
    other: Org,
    clock: FakeClock,
) -> None:
    await report_squawks(admin, org, 2)
    clock.advance(minutes=1)
    since = clock.now()
    fresh = await report_squawks(admin, org, 2)
    walk = api.events.iter(created_after=since, event="squawk.created")
    assert squawk_ids([e async for e in walk]) == fresh  # at or after `since` only
    with pytest.raises(ValueError, match="timezone-aware"):
        await api.events.list(created_after=since.replace(tzinfo=None))

    await fire_everything(admin, org, clock)
    wanted: list[EventName] = ["squawk.resolved", "mel.created"]
    named = [e.event async for e in api.events.iter(event=wanted)]
    assert sorted(named) == sorted(wanted)
    assert f"{API}/events?limit=100&event=squawk.resolved&event=mel.created" in (
        harness.transport.sent
    )
    assert [e.event for e in (await api.events.list(event="mel.created")).items] == ["mel.created"]
    clock.advance(minutes=1)
    assert (await api.events.list(created_after=clock.now())).items == ()


async def test_errors_are_typed(
    api: AsyncClient,
    harness: Harness,
    admin: httpx.AsyncClient,
    outsider: httpx.AsyncClient,
    org: Org,
    other: Org,
    clock: FakeClock,
) -> None:
    with pytest.raises(UnknownEvent) as unknown:
        await api.events.list(event=typing.cast(EventName, "squawk.*"))
    assert (unknown.value.status, unknown.value.code) == (422, "UNKNOWN_EVENT")
    assert "squawk.*" in unknown.value.detail
    assert isinstance(unknown.value, ValidationFailed)  # one except for every 422

    await report_squawks(outsider, other, 1)
    async with harness.client(other.key) as theirs:
        their_cursor = (await theirs.events.list()).next_cursor
    with pytest.raises(InvalidCursor) as foreign:
        await api.events.list(after=their_cursor)
    assert (foreign.value.status, foreign.value.code) == (400, "INVALID_CURSOR")
    mine = (await api.events.list()).next_cursor
    with pytest.raises(InvalidCursor):  # bound to the filters it was given with
        await api.events.list(after=mine, event="mel.created")

    async with harness.client(await org.key_with("read:aircraft")) as narrow:
        with pytest.raises(InsufficientScope) as scope:
            await narrow.events.list()
    assert "read:events" in scope.value.detail

    clock.advance(days=30)  # the cursor's horizon falls out of the retention window
    with pytest.raises(CursorExpired) as expired:
        await api.events.list(after=mine)
    assert (expired.value.status, expired.value.code) == (410, "CURSOR_EXPIRED")
    walk = api.events.iter(after=mine)
    with pytest.raises(CursorExpired):
        await anext(walk)
    assert walk.cursor == mine  # what the caller had, to say what expired


async def test_the_sync_client_walks_events_over_a_socket(
    api_server: LiveServer, services: Services, org: Org, other: Org, clock: FakeClock
) -> None:
    clock.set(datetime.now(UTC))  # the live server's clock is the real one
    async with (
        signed_in_client(services, org, "admin") as admin,
        signed_in_client(services, other, "admin") as outsider,
    ):
        fired = await report_squawks(admin, org, 3)
        await report_squawks(outsider, other, 1)
        await walk_over_a_socket(api_server, admin, org, clock, fired)


async def walk_over_a_socket(
    api_server: LiveServer, admin: httpx.AsyncClient, org: Org, clock: FakeClock, fired: list[str]
) -> None:
    with Client(api_server.url, org.key) as hangar:
        walk = hangar.events.iter(limit=2)
        assert squawk_ids(list(walk)) == fired
        assert list(hangar.events.iter(after=walk.cursor)) == []
        page = hangar.events.list(after=walk.cursor)
        assert page.items == ()
        assert isinstance(page.next_cursor, str)
        with pytest.raises(UnknownEvent):
            hangar.events.list(event=typing.cast(EventName, "runway.closed"))
        clock.advance(seconds=1)
        more = await report_squawks(admin, org, 1)
        assert squawk_ids(list(hangar.events.iter(after=walk.cursor))) == more


# --- the models held to the live OpenAPI document -----------------------------------------


def shape(schema: dict[str, Any]) -> dict[str, Any]:
    return {key: schema[key] for key in ("type", "format", "enum") if key in schema}


async def test_the_event_models_match_the_live_openapi_schemas(
    client: httpx.AsyncClient,
) -> None:
    response = await client.get(f"{API}/openapi.json")
    assert response.status_code == 200
    document = response.json()
    schemas = document["components"]["schemas"]
    page_schema = schemas["EventPage"]
    assert set(page_schema["properties"]) == {f.name for f in dataclasses.fields(EventPage)}
    assert set(page_schema["required"]) == {"items", "next_cursor"}
    assert shape(page_schema["properties"]["next_cursor"]) == {"type": "string"}
    item_ref = page_schema["properties"]["items"]["items"]["$ref"]
    item = schemas[item_ref.rsplit("/", 1)[-1]]
    on_the_wire = {f.name for f in dataclasses.fields(Event)} - {"raw_data"}
    assert set(item["properties"]) == on_the_wire
    assert set(item["required"]) == on_the_wire
    hints = typing.get_type_hints(Event)
    assert shape(item["properties"]["id"]) == {"type": "string"}
    assert shape(item["properties"]["created_at"]) == {"type": "string", "format": "date-time"}
    assert item["properties"]["data"]["type"] == "object"
    assert sorted(item["properties"]["event"]["enum"]) == sorted(typing.get_args(hints["event"]))
    assert set(EVENT_TYPES) - {"test.ping"} == set(typing.get_args(hints["event"]))

    parameters = {p["name"]: p for p in document["paths"][f"{API}/events"]["get"]["parameters"]}
    assert set(parameters) == {"after", "limit", "event", "created_after"}
    event_schema = parameters["event"]["schema"]
    (names,) = [o for o in event_schema.get("anyOf", [event_schema]) if o.get("type") != "null"]
    assert names["type"] == "array"  # repeatable
    enum = names["items"].get("enum") or event_schema["items"]["enum"]
    assert sorted(enum) == sorted(typing.get_args(hints["event"]))


async def test_a_page_without_a_string_cursor_is_refused(org: Org) -> None:
    """The API promises a cursor on every page; a body without one is not an events page."""

    async def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"items": [], "next_cursor": None})

    async with AsyncClient(
        "https://h.example", org.key, transport=httpx.MockTransport(handler)
    ) as broken:
        with pytest.raises(ValueError, match="expected a string"):
            await broken.events.list()
