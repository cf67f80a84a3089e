"""GET /api/v1/external/work-orders"""

from __future__ import annotations

from datetime import timedelta

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from hangar.fleet.models import Aircraft
from hangar.ids import new_id
from hangar.maintenance.models import WorkOrder
from tests.fixtures.factories import T0, Org, write_rows

URL = "/api/v1/external/work-orders"
FIELDS = {
    "id",
    "aircraft_id",
    "title",
    "work_type",
    "status",
    "ap_signer_id",
    "ia_signer_id",
    "created_at",
    "completed_at",
}


async def get(client: httpx.AsyncClient, org: Org, **params: str) -> list[dict[str, object]]:
    response = await client.get(URL, params=params, headers=org.auth)
    assert response.status_code == 200, response.text
    body = response.json()
    assert isinstance(body, list)
    return body


async def test_lists_every_field_newest_first(
    client: httpx.AsyncClient, org: Org, other: Org
) -> None:
    plane = await org.add(Aircraft)
    done = await org.add(
        WorkOrder,
        aircraft_id=plane["id"],
        title="Replace left main tire",
        work_type="repair",
        status="completed",
        ap_signer_id=org.admin_id,
        ia_signer_id=org.admin_id,
        created_at=T0,
        completed_at=T0 + timedelta(days=1, milliseconds=500),
    )
    fresh = await org.add(
        WorkOrder,
        aircraft_id=plane["id"],
        title=None,
        work_type=None,
        status="open",
        created_at=T0 + timedelta(days=2),
    )
    await org.add(
        WorkOrder, aircraft_id=plane["id"], created_at=T0 + timedelta(days=3), deleted_at=T0
    )
    their_plane = await other.add(Aircraft)
    await other.add(WorkOrder, aircraft_id=their_plane["id"], created_at=T0 + timedelta(days=4))

    body = await get(client, org)

    assert [w["id"] for w in body] == [str(fresh["id"]), str(done["id"])]
    assert all(set(w) == FIELDS for w in body)
    assert body[1] == {
        "id": str(done["id"]),
        "aircraft_id": str(plane["id"]),
        "title": "Replace left main tire",
        "work_type": "repair",
        "status": "completed",
        "ap_signer_id": str(org.admin_id),
        "ia_signer_id": str(org.admin_id),
        "created_at": "2026-05-01T09:00:00Z",
        "completed_at": "2026-05-02T09:00:00.500000Z",
    }
    for field in ("title", "work_type", "ap_signer_id", "ia_signer_id", "completed_at"):
        assert body[0][field] is None


async def test_filters_by_status(client: httpx.AsyncClient, org: Org, other: Org) -> None:
    plane = await org.add(Aircraft)
    made = {}
    for n, status in enumerate(["open", "in_progress", "completed", "cancelled", "open"]):
        made[n] = await org.add(
            WorkOrder, aircraft_id=plane["id"], status=status, created_at=T0 + timedelta(hours=n)
        )
    their_plane = await other.add(Aircraft)
    for status in ("open", "in_progress", "completed", "cancelled"):
        await other.add(WorkOrder, aircraft_id=their_plane["id"], status=status)

    async def found(status: str) -> list[object]:
        return [w["id"] for w in await get(client, org, status=status)]

    assert await found("open") == [str(made[4]["id"]), str(made[0]["id"])]
    assert await found("in_progress") == [str(made[1]["id"])]
    assert await found("completed") == [str(made[2]["id"])]
    assert await found("cancelled") == [str(made[3]["id"])]


@pytest.mark.parametrize("value", ["closed", "Open", "", "resolved", "deferred", "open "])
async def test_status_takes_only_the_four_work_order_statuses(
    client: httpx.AsyncClient, org: Org, value: str
) -> None:
    response = await client.get(URL, params={"status": value}, headers=org.auth)
    assert response.status_code == 422
    body = response.json()
    assert body["code"] == "VALIDATION_ERROR"
    assert body["errors"][0]["loc"] == ["query", "status"]


async def test_at_most_the_500_most_recent(
    client: httpx.AsyncClient, org: Org, other: Org, engine: AsyncEngine
) -> None:
    plane = await org.add(Aircraft)
    their_plane = await other.add(Aircraft)

    def row(owner: Org, aircraft_id: object, minutes: int, **values: object) -> dict[str, object]:
        return {
            "id": new_id(),
            "org_id": owner.id,
            "aircraft_id": aircraft_id,
            "title": f"order +{minutes}m",
            "status": "open",
            "created_at": T0 + timedelta(minutes=minutes),
            "deleted_at": None,
            **values,
        }

    mine = [row(org, plane["id"], m) for m in range(0, 520)]  # oldest first this time
    mine[0]["status"] = "cancelled"
    deleted = [row(org, plane["id"], 5000 + m, deleted_at=T0) for m in range(10)]
    theirs = [row(other, their_plane["id"], 9000 + m) for m in range(10)]
    async with engine.begin() as conn:
        await write_rows(conn, WorkOrder, mine + deleted + theirs)

    body = await get(client, org)

    assert [w["id"] for w in body] == [str(r["id"]) for r in reversed(mine[20:])]
    cancelled = await get(client, org, status="cancelled")
    assert [w["id"] for w in cancelled] == [str(mine[0]["id"])]
