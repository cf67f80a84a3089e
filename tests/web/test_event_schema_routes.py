"""GET /docs/events.json and /docs/events/{event}.schema.json: public, an index of the 13
events (and the Test action's test.ping) with each one's schema, served as JSON Schema
2020-12 with an absolute `$id` under the deployment's public URL; an unknown event is 404
`{detail, code}`, never a page or a 500."""

from __future__ import annotations

import dataclasses
from typing import Any

import httpx
import pytest
from jsonschema import Draft202012Validator

from hangar.app import create_app
from hangar.kit.container import Services
from hangar.webhooks.events.catalogue import EVENT_NAMES, TEST_PING
from tests.fixtures.event_schemas import schema_path

BASE = "https://hangar.example"  # the test settings' public URL


def _walk(node: Any) -> list[tuple[str, Any]]:
    if isinstance(node, dict):
        return [pair for key, value in node.items() for pair in [(key, value), *_walk(value)]]
    if isinstance(node, list):
        return [pair for item in node for pair in _walk(item)]
    return []


async def test_the_index_lists_the_13_events_and_their_schemas(client: httpx.AsyncClient) -> None:
    response = await client.get("/docs/events.json")

    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")
    index = response.json()
    assert [e["name"] for e in index["events"]] == list(EVENT_NAMES)
    assert [e["name"] for e in index["test_events"]] == [TEST_PING]
    for entry in index["events"] + index["test_events"]:
        assert entry["description"], entry
        assert entry["schema_url"] == BASE + schema_path(entry["name"])
        # Each listed URL answers, and its schema says it is at that URL.
        served = await client.get(entry["schema_url"].removeprefix(BASE))
        assert served.status_code == 200
        assert served.json()["$id"] == entry["schema_url"]


@pytest.mark.parametrize("event", [*EVENT_NAMES, TEST_PING])
async def test_each_schema_is_served_as_json_schema(client: httpx.AsyncClient, event: str) -> None:
    response = await client.get(schema_path(event))

    assert response.status_code == 200
    assert response.headers["content-type"].split(";")[0] == "application/schema+json"
    schema = response.json()
    Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["$id"] == f"{BASE}/docs/events/{event}.schema.json"
    assert schema["title"].endswith("Event")
    assert schema["description"]
    assert schema["required"] == ["event", "delivered_at", "data"]
    assert schema["properties"]["event"]["const"] == event
    assert schema["properties"]["delivered_at"]["format"] == "date-time"
    # Open, as the contract asks of clients: unknown keys are never refused.
    assert ("additionalProperties", False) not in _walk(schema)
    assert all(d["title"] and d["description"] for d in schema["$defs"].values())


async def test_the_ids_follow_the_public_url(services: Services) -> None:
    elsewhere = dataclasses.replace(
        services,
        settings=dataclasses.replace(services.settings, public_url="https://school.example/hangar"),
    )
    transport = httpx.ASGITransport(app=create_app(elsewhere))
    async with httpx.AsyncClient(transport=transport, base_url=BASE) as client:
        schema = (await client.get(schema_path("mel.expired"))).json()
        index = (await client.get("/docs/events.json")).json()
    expected = "https://school.example/hangar/docs/events/mel.expired.schema.json"
    assert schema["$id"] == expected
    assert expected in [e["schema_url"] for e in index["events"]]


@pytest.mark.parametrize(
    "event",
    ["reservation.deleted", "squawk.*", "*", "RESERVATION.CREATED", "x" * 5000, "é%00", "..%2f.."],
)
async def test_an_unknown_event_is_404_with_a_code(client: httpx.AsyncClient, event: str) -> None:
    response = await client.get(f"/docs/events/{event}.schema.json")

    assert response.status_code == 404
    body = response.json()
    assert body["code"] == "NOT_FOUND"
    assert len(body["detail"]) < 300
    if "%2f" not in event:  # a slash: no route at all, the app's plain 404
        assert "/docs/events.json" in body["detail"]


async def test_served_without_authentication_and_cacheable(client: httpx.AsyncClient) -> None:
    for path in ("/docs/events.json", schema_path("reservation.cancelled")):
        response = await client.get(path, headers={"Authorization": "Bearer svc_pk_nope"})
        assert response.status_code == 200, path
        assert "max-age" in response.headers["cache-control"], path


async def test_docs_links_the_index_and_every_schema(client: httpx.AsyncClient) -> None:
    page = (await client.get("/docs")).text

    assert '<h2 id="event-schemas">Event schemas</h2>' in page
    assert '<a href="#event-schemas">Event schemas</a>' in page
    assert '<a href="/docs/events.json">' in page
    for event in [*EVENT_NAMES, TEST_PING]:
        assert f'<a href="{schema_path(event)}">' in page, event
    # How to generate types, against this deployment's own URL.
    assert f"npx openapi-typescript {BASE}/api/v1/external/openapi.json" in page
    assert "--openapi-scopes schemas webhooks" in page
