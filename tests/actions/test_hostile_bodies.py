"""Hostile JSON bodies on the session API and the product actions: always a 422 with
`{detail, code, errors}`, never a 500 (PostgreSQL refuses NUL in text; Python's JSON parser
accepts NaN and Infinity; some offsets have no UTC equivalent)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from hangar.fleet.models import Aircraft
from tests.fixtures.actions import url
from tests.fixtures.factories import Org

NUL = "bad\u0000value"


def assert_422(response: httpx.Response, field: str) -> None:
    assert response.status_code == 422, response.text
    body = response.json()
    assert body["code"] == "VALIDATION_ERROR"
    assert isinstance(body["detail"], str)
    assert any(field in err["loc"] for err in body["errors"]), body


async def test_nul_in_sign_in_email_is_422(client: httpx.AsyncClient) -> None:
    response = await client.post("/api/session", json={"email": f"a{NUL}@x.org", "password": "p"})
    assert_422(response, "email")


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("api-keys", {"name": NUL, "scopes": ["read:aircraft"]}, "name"),
        ("api-keys", {"name": "k", "scopes": [f"read:aircraft{NUL}"]}, "scopes"),
        (
            "members",
            {"email": f"x{NUL}@y.org", "first_name": "A", "last_name": "B", "role": "member"},
            "email",
        ),
        ("aircraft", {"tail_number": f"N1{NUL}", "aircraft_type": "C172"}, "tail_number"),
        ("webhooks", {"name": NUL, "url": "https://hooks.example.com/h", "events": ["*"]}, "name"),
    ],
)
async def test_nul_characters_are_refused(
    admin: httpx.AsyncClient, org: Org, path: str, body: dict[str, Any], field: str
) -> None:
    assert_422(await admin.post(url(org, path), json=body), field)


async def test_nul_in_a_squawk_description_is_refused(admin: httpx.AsyncClient, org: Org) -> None:
    plane = str((await org.add(Aircraft))["id"])
    body = {"aircraft_id": plane, "description": NUL, "severity": "minor"}
    assert_422(await admin.post(url(org, "squawks"), json=body), "description")


@pytest.mark.parametrize("number", ["Infinity", "-Infinity", "NaN", "1e400"])
async def test_non_finite_numbers_are_refused(
    admin: httpx.AsyncClient, org: Org, number: str
) -> None:
    # Sent raw: a JSON encoder would refuse to write these, an attacker's would not.
    raw = '{"tail_number": "N12345", "aircraft_type": "C172", "hobbs_current": ' + number + "}"
    response = await admin.post(
        url(org, "aircraft"), content=raw, headers={"Content-Type": "application/json"}
    )
    assert_422(response, "hobbs_current")


@pytest.mark.parametrize("moment", ["9999-12-31T23:59:59-01:00", "0001-01-01T00:00:00+01:00"])
async def test_times_without_a_utc_equivalent_are_refused(
    admin: httpx.AsyncClient, org: Org, moment: str
) -> None:
    body = {"activity_type": "solo", "start_time": moment, "end_time": "2026-06-01T10:00:00Z"}
    assert_422(await admin.post(url(org, "reservations"), json=body), "start_time")
    plane = str((await org.add(Aircraft))["id"])
    log = {"aircraft_id": plane, "event_type": "oil_change", "performed_at": moment}
    assert_422(await admin.post(url(org, "maintenance-logs"), json=log), "performed_at")


async def test_refusals_made_after_parsing_carry_the_same_errors_list(
    admin: httpx.AsyncClient, org: Org, other: Org
) -> None:
    # Checks that need the database (or more than one field) answer in Pydantic's shape too.
    person = {"email": "not-an-email", "first_name": "A", "last_name": "B", "role": "member"}
    assert_422(await admin.post(url(org, "members"), json=person), "email")
    their_plane = str((await other.add(Aircraft))["id"])
    squawk = {"aircraft_id": their_plane, "description": "x", "severity": "minor"}
    assert_422(await admin.post(url(org, "squawks"), json=squawk), "aircraft_id")
    plane = str((await org.add(Aircraft))["id"])
    mel = {"aircraft_id": plane, "item_description": "x", "mel_category": "c"}
    assert_422(
        await admin.post(url(org, "mel-items"), json={**mel, "due_date": "2026-05-03"}), "due_date"
    )
    hook = {"name": "h", "url": "https://hooks.example.com/h", "events": []}
    assert_422(await admin.post(url(org, "webhooks"), json=hook), "events")


# Bodies are strictly typed: JSON's own types, no coercion (a string is not a number, a number
# not a string, "true" not a boolean, a number not an id or a date).
@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        (
            "aircraft",
            {"tail_number": "N1", "aircraft_type": "C172", "hobbs_current": "2"},
            "hobbs_current",
        ),
        ("aircraft", {"tail_number": 12345, "aircraft_type": "C172"}, "tail_number"),
        (
            "aircraft",
            {"tail_number": "N1", "aircraft_type": "C172", "annual_due_date": 20270101},
            "annual_due_date",
        ),
        ("api-keys", {"name": 7, "scopes": ["read:aircraft"]}, "name"),
        ("api-keys", {"name": "k", "scopes": "read:aircraft"}, "scopes"),
        ("webhooks", {"name": "h", "url": "https://hooks.example.com/h", "events": [1]}, "events"),
        (
            "reservations",
            {"activity_type": "solo", "start_time": 1767261600, "end_time": "2027-01-01T11:00:00Z"},
            "start_time",
        ),
        (
            "reservations",
            {
                "activity_type": "solo",
                "start_time": "2027-01-01T10:00:00Z",
                "end_time": "2027-01-01T11:00:00Z",
                "is_backup": "true",
            },
            "is_backup",
        ),
        (
            "reservations",
            {
                "activity_type": "solo",
                "start_time": "2027-01-01T10:00:00Z",
                "end_time": "2027-01-01T11:00:00Z",
                "pilot_id": 5,
            },
            "pilot_id",
        ),
    ],
)
async def test_values_of_the_wrong_json_type_are_refused(
    admin: httpx.AsyncClient, org: Org, path: str, body: dict[str, Any], field: str
) -> None:
    assert_422(await admin.post(url(org, path), json=body), field)


@pytest.mark.parametrize("hours", ["2", "24", 2.0, True])
async def test_grace_hours_must_be_a_json_integer(
    admin: httpx.AsyncClient, org: Org, hours: object
) -> None:
    created = await admin.post(
        url(org, "api-keys"), json={"name": "k", "scopes": ["read:aircraft"]}
    )
    key_id = created.json()["id"]
    rotated = await admin.post(url(org, f"api-keys/{key_id}/rotate"), json={"grace_hours": hours})
    assert_422(rotated, "grace_hours")


async def test_numbers_ids_and_dates_of_the_right_type_still_pass(
    admin: httpx.AsyncClient, org: Org
) -> None:
    body = {
        "tail_number": "N1",
        "aircraft_type": "C172",
        "hobbs_current": 1200,  # a JSON integer is a number
        "tach_current": 1100.5,
        "annual_due_date": "2027-01-01",
    }
    created = await admin.post(url(org, "aircraft"), json=body)
    assert created.status_code == 201, created.text
    assert created.json()["hobbs_current"] == 1200
    squawk = {"aircraft_id": created.json()["id"], "description": "x", "severity": "minor"}
    assert (await admin.post(url(org, "squawks"), json=squawk)).status_code == 201
