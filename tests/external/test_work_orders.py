"""GET /api/v1/external/work-orders"""

from __future__ import annotations

from datetime import timedelta

import httpx

from hangar.fleet.models import Aircraft
from hangar.maintenance.models import WorkOrder
from tests.fixtures.external import listed
from tests.fixtures.factories import T0, Org

URL = "/api/v1/external/work-orders"


async def get(client: httpx.AsyncClient, org: Org, **params: str) -> list[dict[str, object]]:
    return await listed(client, URL, org, **params)


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
    assert all(set(w) == set(body[1]) for w in body)
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
