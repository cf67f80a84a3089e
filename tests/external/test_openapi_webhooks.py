"""The OpenAPI description's `webhooks` section (issue 42): one POST per event (the 13 and the
Test action's test.ping), its body the event's schema among the components, the same schema
GET /docs/events/{event}.schema.json serves, and the headers hangar sends on a delivery."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from hangar.webhooks.events.catalogue import EVENT_NAMES, TEST_PING
from tests.fixtures.event_schemas import schema_path

# Generated types are named by these: a rename breaks every receiver's code.
BODIES = {
    "squawk.created": "SquawkCreatedEvent",
    "squawk.resolved": "SquawkResolvedEvent",
    "squawk.escalated": "SquawkEscalatedEvent",
    "reservation.created": "ReservationCreatedEvent",
    "reservation.confirmed": "ReservationConfirmedEvent",
    "reservation.cancelled": "ReservationCancelledEvent",
    "reservation.checked_in": "ReservationCheckedInEvent",
    "reservation.completed": "ReservationCompletedEvent",
    "flight_session.completed": "FlightSessionCompletedEvent",
    "aircraft.grounded": "AircraftGroundedEvent",
    "aircraft.reactivated": "AircraftReactivatedEvent",
    "mel.created": "MelCreatedEvent",
    "mel.expired": "MelExpiredEvent",
    "test.ping": "TestPingEvent",
}
# What hangar.webhooks.delivery.signing.headers sends (tests/webhooks/test_delivery_headers.py
# checks the wire), and the Test action's mark; Content-Type is the request body's media type.
REQUIRED = {
    "X-Service-Event",
    "X-Service-Signature",
    "X-Service-Delivery",
    "X-Service-Event-Id",
    "X-Service-Organization",
    "User-Agent",
    "webhook-id",
    "webhook-timestamp",
    "webhook-signature",
}
OPTIONAL = {"X-Service-Signature-Previous", "X-Service-Test"}


@pytest.fixture
async def doc(client: httpx.AsyncClient) -> dict[str, Any]:
    response = await client.get("/api/v1/external/openapi.json")
    assert response.status_code == 200
    body: dict[str, Any] = response.json()
    return body


def _headers(doc: dict[str, Any], op: dict[str, Any]) -> dict[str, dict[str, Any]]:
    shared = doc["components"]["parameters"]
    resolved = [
        shared[p["$ref"].rpartition("/")[2]] if "$ref" in p else p for p in op["parameters"]
    ]
    assert all(p["in"] == "header" for p in resolved)
    return {p["name"]: p for p in resolved}


async def test_one_webhook_per_event(doc: dict[str, Any]) -> None:
    assert list(doc["webhooks"]) == [*EVENT_NAMES, TEST_PING]
    assert set(BODIES) == set(doc["webhooks"])
    operation_ids = set()
    for event, item in doc["webhooks"].items():
        assert list(item) == ["post"], event
        op = item["post"]
        assert op["summary"] == event
        assert op["description"], event
        assert op["tags"] == ["events"]
        operation_ids.add(op["operationId"])
        [(media, content)] = op["requestBody"]["content"].items()
        assert media == "application/json"
        assert op["requestBody"]["required"] is True
        assert content["schema"] == {"$ref": f"#/components/schemas/{BODIES[event]}"}
        assert set(op["responses"]) == {"2XX", "default"}
        assert "retried" in op["responses"]["default"]["description"]
        assert "2 s" in op["responses"]["default"]["description"]
    assert operation_ids == {"receive_" + e.replace(".", "_") for e in BODIES}
    paths = {op["operationId"] for item in doc["paths"].values() for op in item.values()}
    assert not operation_ids & paths


async def test_each_webhook_lists_the_delivery_headers(doc: dict[str, Any]) -> None:
    for event, item in doc["webhooks"].items():
        headers = _headers(doc, item["post"])
        assert set(headers) == REQUIRED | OPTIONAL, event
        assert {n for n, h in headers.items() if h["required"]} == REQUIRED, event
        assert headers["X-Service-Event"]["schema"]["const"] == event
        assert all(h["description"] for h in headers.values()), event
    assert headers["X-Service-Test"]["schema"]["enum"] == ["true"]


async def test_the_bodies_are_the_served_schemas(
    doc: dict[str, Any], client: httpx.AsyncClient
) -> None:
    components = doc["components"]["schemas"]
    for event, name in BODIES.items():
        served = (await client.get(schema_path(event))).json()
        body = {k: v for k, v in served.items() if k not in ("$schema", "$id", "$defs")}
        as_components = _rerooted(body)
        assert components[name] == as_components, event
        for def_name, schema in served["$defs"].items():
            assert components[def_name] == _rerooted(schema), (event, def_name)
    # No `$id` in the components: it would move the base their `$ref`s resolve against.
    assert not [n for n, s in components.items() if "$id" in s or "$schema" in s]


def _rerooted(node: Any) -> Any:
    if isinstance(node, dict):
        return {
            k: v.replace("#/$defs/", "#/components/schemas/") if k == "$ref" else _rerooted(v)
            for k, v in node.items()
        }
    if isinstance(node, list):
        return [_rerooted(item) for item in node]
    return node
