"""Every body hangar delivers validates against its event's served JSON Schema, and its
headers against the OpenAPI description's webhooks section (issue 42): the 13 events fired by
the product's own actions and the MEL-expiry job, and a Test's test.ping, captured by a real
HTTPS receiver. A schema lists exactly the fields sent, and rejects a body that lacks one or
has a wrong type: the schemas could not pass by saying nothing."""

from __future__ import annotations

import copy
from typing import Any, get_args

import httpx
import jsonschema
import orjson
import pytest

from hangar.fleet.models import MelCategory
from hangar.reservations.models import ActivityType, ReservationStatus
from hangar.squawks.models import Severity
from hangar.web.events import EVENTS
from hangar.webhooks.events.catalogue import EVENT_NAMES, TEST_PING
from hangar.webhooks.events.event_schemas import VOCABULARIES
from tests.fixtures.all_events import fire_everything
from tests.fixtures.event_schemas import data_properties, served_schemas, validator
from tests.fixtures.webhooks import Hooks


def _headers(doc: dict[str, Any], event: str) -> list[dict[str, Any]]:
    """The header parameters of `event`'s webhook, references resolved."""
    parameters = doc["webhooks"][event]["post"]["parameters"]
    shared = doc["components"]["parameters"]
    return [shared[p["$ref"].rpartition("/")[2]] if "$ref" in p else p for p in parameters]


def _check_headers(doc: dict[str, Any], event: str, sent: dict[str, str]) -> None:
    by_name = {name.lower(): value for name, value in sent.items()}
    for header in _headers(doc, event):
        value = by_name.get(header["name"].lower())
        if value is None:
            assert not header["required"], (event, header["name"])
            continue
        validator(header["schema"]).validate(value)


async def test_every_delivered_body_validates_against_its_schema(
    hooks: Hooks, admin: httpx.AsyncClient, client: httpx.AsyncClient
) -> None:
    org = hooks.org
    schemas = await served_schemas(client)
    doc = (await client.get("/api/v1/external/openapi.json")).json()
    sub_id = await hooks.subscribe()  # every event
    tested = await admin.post(f"/api/orgs/{org.id}/webhooks/{sub_id}/test")
    assert tested.status_code == 202, tested.text
    await fire_everything(admin, org, hooks.clock)
    work = hooks.dispatcher()
    while await work.run_once():
        pass

    heard = hooks.receiver.heard("/hook")
    assert {got.headers["X-Service-Event"] for got in heard} == {*EVENT_NAMES, TEST_PING}
    for got in heard:
        event = got.headers["X-Service-Event"]
        body = orjson.loads(got.body)
        errors = [e.message for e in validator(schemas[event]).iter_errors(body)]
        assert errors == [], (event, body)
        # The schema lists every field sent, no fewer: it documents the payload.
        assert set(body["data"]) == data_properties(schemas[event], body["data"]), event
        _check_headers(doc, event, got.headers)
        if event != TEST_PING:
            assert "X-Service-Test" not in got.headers, event  # a real delivery is no test
    # Both shapes of aircraft.grounded were sent and validated: by an admin, and by the job.
    grounded = [
        orjson.loads(got.body)["data"]
        for got in heard
        if got.headers["X-Service-Event"] == "aircraft.grounded"
    ]
    assert {d["reason"] for d in grounded} == {"admin_deactivate", "mel_expired"}


async def test_the_documented_examples_validate(client: httpx.AsyncClient) -> None:
    schemas = await served_schemas(client)
    for example in EVENTS:
        validator(schemas[example.name]).validate(orjson.loads(example.example))


def _example(name: str) -> dict[str, Any]:
    [found] = [orjson.loads(e.example) for e in EVENTS if e.name == name]
    return copy.deepcopy(found)


def _broken(name: str, change: str) -> dict[str, Any]:
    body = _example(name)
    data = body["data"]
    match change:
        case "missing field":
            del data["aircraft_id"]
        case "wrong type":
            data["hobbs_in"] = "2843.1"
        case "null where never null":
            data["id"] = None
        case "other event's name":
            body["event"] = "reservation.created"
        case "offset, not Z":
            body["delivered_at"] = "2026-05-04T18:07:31.482113+02:00"
        case "not a date":
            data["due_date"] = "14/05/2026"
        case "unknown category":
            data["mel_category"] = "e"
        case "no data":
            del body["data"]
    return body


@pytest.mark.parametrize(
    ("event", "change"),
    [
        ("reservation.cancelled", "missing field"),
        ("reservation.completed", "wrong type"),
        ("squawk.created", "null where never null"),
        ("reservation.cancelled", "other event's name"),
        ("mel.created", "offset, not Z"),
        ("mel.created", "not a date"),
        ("mel.expired", "unknown category"),
        ("aircraft.reactivated", "no data"),
    ],
)
async def test_a_wrong_body_fails_validation(
    client: httpx.AsyncClient, event: str, change: str
) -> None:
    schema = (await client.get(f"/docs/events/{event}.schema.json")).json()
    with pytest.raises(jsonschema.ValidationError):
        validator(schema).validate(_broken(event, change))


async def test_unknown_keys_are_allowed_and_grounded_needs_its_reason(
    client: httpx.AsyncClient,
) -> None:
    schema = (await client.get("/docs/events/aircraft.grounded.schema.json")).json()
    body = _example("aircraft.grounded")
    body["added_later"] = 1
    body["data"]["added_later"] = {"any": "thing"}
    validator(schema).validate(body)  # clients ignore unknown keys; the schema does too
    # The job's shape lacks aircraft_type and is_active; an admin's must have them.
    body["data"] = {"id": "a1", "tail_number": "N1", "reason": "mel_expired"}
    validator(schema).validate(body)
    body["data"]["reason"] = "admin_deactivate"
    with pytest.raises(jsonschema.ValidationError):
        validator(schema).validate(body)


def test_the_vocabularies_are_the_features_own() -> None:
    features = {
        "severity": get_args(Severity),
        "status": get_args(ReservationStatus),
        "activity_type": get_args(ActivityType),
        "mel_category": get_args(MelCategory),
    }
    assert features == VOCABULARIES
