"""Maintenance log entries and work orders (maintenance.manage). No events fire."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest

from hangar.fleet.models import Aircraft
from hangar.maintenance.models import WorkOrder
from tests.fixtures.actions import Outsiders, assert_invalid, names, public_one, url
from tests.fixtures.factories import Org


async def plane(org: Org) -> str:
    return str((await org.add(Aircraft))["id"])


async def test_a_log_entry_keeps_its_full_text(
    mechanic: httpx.AsyncClient, client: httpx.AsyncClient, org: Org
) -> None:
    text = "Replaced both main tires. " * 100  # 2600 characters
    body = {
        "aircraft_id": await plane(org),
        "event_type": "100hr",
        "hobbs_at_event": 1200.5,
        "ap_cert_number": "A&P 1234567",
        "return_to_service": True,
        "performed_at": "2026-05-03T16:00:00-04:00",
        "work_performed": text,
    }
    response = await mechanic.post(url(org, "maintenance-logs"), json=body)

    assert response.status_code == 201, response.text
    created = response.json()
    assert created["work_performed"] == text
    assert created["performed_at"] == "2026-05-03T20:00:00Z"
    assert created["event_date"] == "2026-05-04"  # omitted: today
    shown = await public_one(client, org, "maintenance-logs", created["id"])
    assert shown == {**created, "work_performed": text[:1000]}
    assert await names(org.engine, org.id) == []


@pytest.mark.parametrize(
    "change",
    [
        {"event_type": "overhaul"},
        {"performed_at": "2026-05-03T16:00:00"},
        {"work_performed": ""},
        {"hobbs_at_event": -3},
        {"aircraft_id": "00000000-0000-7000-8000-000000000000"},
    ],
)
async def test_invalid_log_entries_are_422(
    admin: httpx.AsyncClient, org: Org, change: dict[str, Any]
) -> None:
    body = {"aircraft_id": await plane(org), "event_type": "annual", "work_performed": "Annual"}
    response = await admin.post(url(org, "maintenance-logs"), json={**body, **change})
    assert_invalid(response)


async def test_work_order_life(
    mechanic: httpx.AsyncClient, client: httpx.AsyncClient, org: Org
) -> None:
    body = {"aircraft_id": await plane(org), "title": "Brake job", "work_type": "repair"}
    created = await mechanic.post(url(org, "work-orders"), json=body)
    assert created.status_code == 201, created.text
    order = created.json()
    assert (order["status"], order["created_at"]) == ("open", "2026-05-04T10:00:30Z")
    path = url(org, f"work-orders/{order['id']}")

    started = await mechanic.patch(path, json={"status": "in_progress", "title": "Brakes"})
    assert (started.json()["status"], started.json()["title"]) == ("in_progress", "Brakes")
    assert (await mechanic.patch(path, json={"status": "finished"})).status_code == 422
    signer = {"status": "completed", "ap_signer_id": str(org.admin_id)}
    done = await mechanic.patch(path, json=signer)
    assert done.status_code == 200
    shown = await public_one(client, org, "work-orders", order["id"])
    assert (shown["status"], shown["completed_at"], shown["ap_signer_id"]) == (
        "completed",
        "2026-05-04T10:00:30Z",
        str(org.admin_id),
    )
    reopened = await mechanic.patch(path, json={"status": "open"})
    assert reopened.status_code == 409
    assert reopened.json()["code"] == "INVALID_TRANSITION"


async def test_signers_must_be_members(admin: httpx.AsyncClient, org: Org, other: Org) -> None:
    outsider_id = str(other.admin_id)
    body = {"aircraft_id": await plane(org), "ia_signer_id": outsider_id}
    assert (await admin.post(url(org, "work-orders"), json=body)).status_code == 422


async def test_only_maintenance_manage_and_only_this_org(
    outsiders: Outsiders, admin: httpx.AsyncClient, org: Org, other: Org
) -> None:
    aircraft_id = await plane(org)
    order = (await org.add(WorkOrder, aircraft_id=uuid.UUID(aircraft_id)))["id"]
    calls = [
        (
            "POST",
            "maintenance-logs",
            {"aircraft_id": aircraft_id, "event_type": "ad", "work_performed": "x"},
        ),
        ("POST", "work-orders", {"aircraft_id": aircraft_id}),
        ("PATCH", f"work-orders/{order}", {"status": "cancelled"}),
    ]
    for method, path, body in calls:
        await outsiders.refused(org, method, path, body, "maintenance.manage")
    theirs = (await other.add(WorkOrder, aircraft_id=(await other.add(Aircraft))["id"]))["id"]
    response = await admin.patch(url(org, f"work-orders/{theirs}"), json={"status": "cancelled"})
    assert response.status_code == 404
