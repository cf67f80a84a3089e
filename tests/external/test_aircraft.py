"""GET /api/v1/external/aircraft"""

from __future__ import annotations

from datetime import UTC, date, datetime

import httpx
from sqlalchemy.ext.asyncio import AsyncEngine

from hangar.fleet.models import Aircraft
from tests.fixtures.factories import T0, Org, insert_rows

URL = "/api/v1/external/aircraft"


async def test_lists_the_orgs_live_fleet_with_every_field(
    client: httpx.AsyncClient, org: Org, other: Org
) -> None:
    skyhawk = await org.add(
        Aircraft,
        tail_number="N12345",
        aircraft_type="Cessna 172S",
        display_name="Skyhawk",
        hobbs_current=1234.5,
        tach_current=1001.2,
        annual_due_date=date(2027, 2, 28),
        last_100hr_hobbs=1200.0,
    )
    grounded = await org.add(
        Aircraft,
        tail_number="N2",
        is_active=False,
        display_name=None,
        hobbs_current=None,
        tach_current=None,
        annual_due_date=None,
        last_100hr_hobbs=None,
    )
    await org.add(Aircraft, tail_number="N3", deleted_at=datetime(2026, 1, 1, tzinfo=UTC))
    await other.add(Aircraft, tail_number="N999OT")

    response = await client.get(URL, headers=org.auth)

    assert response.status_code == 200
    body = response.json()
    assert isinstance(body, list)
    by_id = {a["id"]: a for a in body}
    assert set(by_id) == {str(skyhawk["id"]), str(grounded["id"])}
    assert by_id[str(skyhawk["id"])] == {
        "id": str(skyhawk["id"]),
        "tail_number": "N12345",
        "aircraft_type": "Cessna 172S",
        "display_name": "Skyhawk",
        "is_active": True,
        "hobbs_current": 1234.5,
        "tach_current": 1001.2,
        "annual_due_date": "2027-02-28",
        "last_100hr_hobbs": 1200.0,
    }
    assert by_id[str(grounded["id"])]["is_active"] is False
    for field in ("display_name", "hobbs_current", "tach_current", "annual_due_date"):
        assert by_id[str(grounded["id"])][field] is None
    assert all(set(a) == set(by_id[str(skyhawk["id"])]) for a in body)


async def test_needs_read_aircraft(client: httpx.AsyncClient, org: Org) -> None:
    key = await org.key_with("read:squawks")
    response = await client.get(URL, headers={"Authorization": f"Bearer {key}"})
    assert response.status_code == 403
    assert response.json()["code"] == "INSUFFICIENT_SCOPE"
    assert "read:aircraft" in response.json()["detail"]


async def test_is_unpaginated_and_never_shows_another_orgs_or_deleted_aircraft(
    client: httpx.AsyncClient, org: Org, other: Org, engine: AsyncEngine
) -> None:
    rows = [
        org.row(
            Aircraft,
            tail_number=f"N{i:05d}",
            aircraft_type="Piper PA-28",
            is_active=i % 2 == 0,
            deleted_at=T0 if i % 10 == 0 else None,
        )
        for i in range(600)
    ]
    await insert_rows(engine, Aircraft, rows)
    theirs = await other.add(Aircraft, tail_number="N00001")

    response = await client.get(URL, headers=org.auth)

    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")
    ids = [a["id"] for a in response.json()]
    assert len(ids) == len(set(ids)) == 540
    assert set(ids) == {str(r["id"]) for r in rows if r["deleted_at"] is None}
    assert str(theirs["id"]) not in ids

    mine = await client.get(URL, headers=other.auth)
    assert [a["id"] for a in mine.json()] == [str(theirs["id"])]


async def test_an_org_without_aircraft_gets_an_empty_array(
    client: httpx.AsyncClient, org: Org, other: Org
) -> None:
    await other.add(Aircraft)
    response = await client.get(URL, headers=org.auth)
    assert response.status_code == 200
    assert response.json() == []


async def test_ignores_query_parameters(client: httpx.AsyncClient, org: Org, other: Org) -> None:
    await other.add(Aircraft)
    plane = await org.add(Aircraft)
    response = await client.get(
        URL, params={"org_id": str(other.id), "limit": "1", "deleted": "true"}, headers=org.auth
    )
    assert response.status_code == 200
    assert [a["id"] for a in response.json()] == [str(plane["id"])]
