"""Aircraft: create, delete, deactivate, reactivate (fleet.manage)."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from hangar.fleet.models import Aircraft
from tests.fixtures.actions import Outsiders, assert_invalid, names, public, public_one, url
from tests.fixtures.factories import Org

NEW = {"tail_number": "n737sp", "aircraft_type": "Cessna 172S"}


async def test_admin_and_mechanic_add_aircraft(
    admin: httpx.AsyncClient, mechanic: httpx.AsyncClient, client: httpx.AsyncClient, org: Org
) -> None:
    full = {
        **NEW,
        "display_name": "Skyhawk",
        "hobbs_current": 12.5,
        "tach_current": 10.0,
        "annual_due_date": "2027-01-31",
        "last_100hr_hobbs": 3.0,
    }
    created = await admin.post(url(org, "aircraft"), json=full)

    assert created.status_code == 201, created.text
    body = created.json()
    assert body == {**full, "id": body["id"], "tail_number": "N737SP", "is_active": True}
    assert await public_one(client, org, "aircraft", body["id"]) == body
    by_mechanic = await mechanic.post(url(org, "aircraft"), json={**NEW, "tail_number": "N2"})
    assert by_mechanic.status_code == 201
    taken = await mechanic.post(url(org, "aircraft"), json={**NEW, "tail_number": "N737SP "})
    assert taken.status_code == 409
    assert taken.json()["code"] == "TAIL_NUMBER_TAKEN"


@pytest.mark.parametrize(
    "body",
    [
        {"tail_number": "N1"},
        {**NEW, "hobbs_current": -1},
        {**NEW, "annual_due_date": "soon"},
        {**NEW, "tail_number": ""},
        {**NEW, "is_active": False},
    ],
)
async def test_invalid_bodies_are_422(
    admin: httpx.AsyncClient, org: Org, body: dict[str, object]
) -> None:
    response = await admin.post(url(org, "aircraft"), json=body)
    assert_invalid(response)


async def test_delete_is_soft_and_final(
    admin: httpx.AsyncClient, client: httpx.AsyncClient, org: Org
) -> None:
    plane = await org.add(Aircraft)
    assert (await admin.delete(url(org, f"aircraft/{plane['id']}"))).status_code == 204
    assert await public_one(client, org, "aircraft", str(plane["id"])) is None
    assert (await admin.delete(url(org, f"aircraft/{plane['id']}"))).status_code == 404
    assert (await admin.post(url(org, f"aircraft/{plane['id']}/deactivate"))).status_code == 404


async def test_deactivate_then_reactivate_with_their_events(
    admin: httpx.AsyncClient, client: httpx.AsyncClient, org: Org
) -> None:
    plane = str((await org.add(Aircraft))["id"])

    down = await admin.post(url(org, f"aircraft/{plane}/deactivate"))
    assert down.status_code == 200
    assert down.json()["is_active"] is False
    assert (await public_one(client, org, "aircraft", plane))["is_active"] is False
    again = await admin.post(url(org, f"aircraft/{plane}/deactivate"))
    assert again.status_code == 409
    assert again.json()["code"] == "INVALID_TRANSITION"

    up = await admin.post(url(org, f"aircraft/{plane}/reactivate"))
    assert up.status_code == 200
    assert (await public_one(client, org, "aircraft", plane))["is_active"] is True
    assert (await admin.post(url(org, f"aircraft/{plane}/reactivate"))).status_code == 409
    assert await names(org.engine, org.id) == ["aircraft.grounded", "aircraft.reactivated"]


async def test_two_concurrent_deactivations_one_wins(admin: httpx.AsyncClient, org: Org) -> None:
    plane = (await org.add(Aircraft))["id"]
    path = url(org, f"aircraft/{plane}/deactivate")
    results = await asyncio.gather(admin.post(path), admin.post(path))
    assert sorted(r.status_code for r in results) == [200, 409]
    assert await names(org.engine, org.id) == ["aircraft.grounded"]


async def test_only_fleet_manage_and_only_this_org(
    outsiders: Outsiders, admin: httpx.AsyncClient, org: Org, other: Org
) -> None:
    plane = (await org.add(Aircraft))["id"]
    calls = [
        ("POST", "aircraft"),
        ("DELETE", f"aircraft/{plane}"),
        ("POST", f"aircraft/{plane}/deactivate"),
        ("POST", f"aircraft/{plane}/reactivate"),
    ]
    for method, path in calls:
        await outsiders.refused(org, method, path, NEW, "fleet.manage")
    theirs = (await other.add(Aircraft))["id"]
    for target in (theirs, "N123"):
        assert (await admin.post(url(org, f"aircraft/{target}/deactivate"))).status_code == 404
    assert all(a["is_active"] for a in await public(admin, other, "aircraft"))
