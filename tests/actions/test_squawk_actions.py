"""Squawks: report (squawks.report); status, resolve, escalate (squawks.manage)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from hangar.fleet.models import Aircraft
from hangar.squawks.models import Squawk
from tests.fixtures.actions import assert_invalid, names, public_one, url
from tests.fixtures.factories import Org


async def report(client: httpx.AsyncClient, org: Org, **body: Any) -> httpx.Response:
    plane = body.pop("aircraft_id", None) or str((await org.add(Aircraft))["id"])
    fields = {"aircraft_id": plane, "description": "Left brake soft", "severity": "minor"}
    return await client.post(url(org, "squawks"), json={**fields, **body})


@pytest.mark.parametrize("severity", ["minor", "major", "grounding"])
async def test_anyone_reports_an_open_squawk(
    member: httpx.AsyncClient, client: httpx.AsyncClient, org: Org, severity: str
) -> None:
    response = await report(member, org, severity=severity)

    assert response.status_code == 201, response.text
    created = response.json()
    assert (created["status"], created["severity"]) == ("open", severity)
    assert created["is_grounding"] is (severity == "grounding")
    assert created["created_at"] == "2026-05-04T10:00:30Z"
    assert await public_one(client, org, "squawks", created["id"]) == created
    assert await names(org.engine, org.id) == ["squawk.created"]


@pytest.mark.parametrize(
    "change",
    [
        {"severity": "critical"},
        {"description": ""},
        {"aircraft_id": "N123"},
        {"aircraft_id": "00000000-0000-7000-8000-000000000000"},
        {"status": "resolved"},
    ],
)
async def test_invalid_reports_are_422(
    member: httpx.AsyncClient, org: Org, change: dict[str, Any]
) -> None:
    response = await report(member, org, **change)
    assert_invalid(response)


async def test_status_moves_need_squawks_manage(
    member: httpx.AsyncClient, mechanic: httpx.AsyncClient, client: httpx.AsyncClient, org: Org
) -> None:
    squawk = (await report(member, org)).json()["id"]
    path = url(org, f"squawks/{squawk}")

    refused = await member.patch(path, json={"status": "in_progress"})
    assert refused.status_code == 403
    assert "squawks.manage" in refused.json()["detail"]
    assert (await mechanic.patch(path, json={"status": "resolved"})).status_code == 422
    for status in ("in_progress", "deferred"):
        moved = await mechanic.patch(path, json={"status": status})
        assert moved.status_code == 200
        assert (await public_one(client, org, "squawks", squawk))["status"] == status
    assert (await mechanic.patch(path, json={"status": "deferred"})).status_code == 409


async def test_resolve_once(
    member: httpx.AsyncClient, instructor: httpx.AsyncClient, client: httpx.AsyncClient, org: Org
) -> None:
    squawk = (await report(member, org)).json()["id"]
    path = url(org, f"squawks/{squawk}/resolve")
    assert (await member.post(path)).status_code == 403

    resolved = await instructor.post(path)

    assert resolved.status_code == 200
    shown = await public_one(client, org, "squawks", squawk)
    assert (shown["status"], shown["resolved_at"]) == ("resolved", "2026-05-04T10:00:30Z")
    again = await instructor.post(path)
    assert again.status_code == 409
    assert again.json()["code"] == "INVALID_TRANSITION"
    reopen = await instructor.patch(url(org, f"squawks/{squawk}"), json={"status": "in_progress"})
    assert reopen.status_code == 409
    assert (await names(org.engine, org.id)).count("squawk.resolved") == 1


async def test_escalate_makes_it_grounding_and_keeps_its_status(
    member: httpx.AsyncClient, mechanic: httpx.AsyncClient, client: httpx.AsyncClient, org: Org
) -> None:
    squawk = (await report(member, org, severity="major")).json()["id"]
    path = url(org, f"squawks/{squawk}/escalate")
    assert (await member.post(path)).status_code == 403

    escalated = await mechanic.post(path)

    assert escalated.status_code == 200
    shown = await public_one(client, org, "squawks", squawk)
    assert (shown["severity"], shown["is_grounding"], shown["status"]) == (
        "grounding",
        True,
        "open",
    )
    assert (await mechanic.post(path)).status_code == 409  # already grounding
    await mechanic.post(url(org, f"squawks/{(await report(member, org)).json()['id']}/resolve"))
    fixed = (await report(member, org)).json()["id"]
    await mechanic.post(url(org, f"squawks/{fixed}/resolve"))
    assert (await mechanic.post(url(org, f"squawks/{fixed}/escalate"))).status_code == 409
    assert (await names(org.engine, org.id)).count("squawk.escalated") == 1


async def test_another_orgs_squawks_are_not_found(
    outsider: httpx.AsyncClient, admin: httpx.AsyncClient, org: Org, other: Org
) -> None:
    plane = (await org.add(Aircraft))["id"]
    ours = (await org.add(Squawk, aircraft_id=plane))["id"]
    for method, path, body in (
        ("POST", "squawks", {"aircraft_id": str(plane), "description": "x", "severity": "minor"}),
        ("PATCH", f"squawks/{ours}", {"status": "in_progress"}),
        ("POST", f"squawks/{ours}/resolve", None),
        ("POST", f"squawks/{ours}/escalate", None),
    ):
        assert (await outsider.request(method, url(org, path), json=body)).status_code == 404
    their_plane = (await other.add(Aircraft))["id"]
    theirs = (await other.add(Squawk, aircraft_id=their_plane))["id"]
    assert (await admin.post(url(org, f"squawks/{theirs}/resolve"))).status_code == 404
