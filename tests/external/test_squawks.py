"""GET /api/v1/external/squawks"""

from __future__ import annotations

from datetime import timedelta

import httpx

from hangar.fleet.models import Aircraft
from hangar.foundation.ids import new_id
from hangar.squawks.models import Squawk
from tests.fixtures.external import listed
from tests.fixtures.factories import T0, Org

URL = "/api/v1/external/squawks"


async def get(client: httpx.AsyncClient, org: Org, **params: str) -> list[dict[str, object]]:
    return await listed(client, URL, org, **params)


async def test_lists_every_field_newest_first(
    client: httpx.AsyncClient, org: Org, other: Org
) -> None:
    plane = await org.add(Aircraft)
    older = await org.add(
        Squawk,
        aircraft_id=plane["id"],
        description="Left brake soft",
        severity="major",
        status="resolved",
        is_grounding=False,
        created_at=T0,
        resolved_at=T0 + timedelta(hours=3, microseconds=250000),
    )
    newer = await org.add(
        Squawk,
        aircraft_id=plane["id"],
        description="Mag drop 250 rpm",
        severity="grounding",
        status="open",
        is_grounding=True,
        created_at=T0 + timedelta(days=1),
        resolved_at=None,
    )
    await org.add(Squawk, aircraft_id=plane["id"], deleted_at=T0, created_at=T0 + timedelta(days=2))
    their_plane = await other.add(Aircraft)
    await other.add(Squawk, aircraft_id=their_plane["id"], created_at=T0 + timedelta(days=3))

    body = await get(client, org)

    assert [s["id"] for s in body] == [str(newer["id"]), str(older["id"])]
    assert body[0] == {
        "id": str(newer["id"]),
        "aircraft_id": str(plane["id"]),
        "description": "Mag drop 250 rpm",
        "severity": "grounding",
        "status": "open",
        "is_grounding": True,
        "created_at": "2026-05-02T09:00:00Z",
        "resolved_at": None,
    }
    assert body[1]["resolved_at"] == "2026-05-01T12:00:00.250000Z"
    assert body[1]["is_grounding"] is False
    assert all(set(s) == set(body[0]) for s in body)


async def test_filters(client: httpx.AsyncClient, org: Org, other: Org) -> None:
    one, two = await org.add(Aircraft), await org.add(Aircraft)
    rows = {}
    for n, (plane, status, grounding) in enumerate(
        [
            (one, "open", True),
            (one, "in_progress", False),
            (two, "resolved", False),
            (two, "deferred", True),
            (two, "open", False),
        ]
    ):
        rows[n] = await org.add(
            Squawk,
            aircraft_id=plane["id"],
            status=status,
            is_grounding=grounding,
            severity="grounding" if grounding else "minor",
            created_at=T0 + timedelta(hours=n),
        )
    their_plane = await other.add(Aircraft)
    for status in ("open", "in_progress", "resolved", "deferred"):
        await other.add(Squawk, aircraft_id=their_plane["id"], status=status, is_grounding=True)

    def ids(*ns: int) -> list[str]:
        return [str(rows[n]["id"]) for n in ns]

    async def found(**params: str) -> list[object]:
        return [s["id"] for s in await get(client, org, **params)]

    assert await found() == ids(4, 3, 2, 1, 0)
    assert await found(status="open") == ids(4, 0)
    assert await found(status="in_progress") == ids(1)
    assert await found(status="resolved") == ids(2)
    assert await found(status="deferred") == ids(3)
    assert await found(aircraft_id=str(one["id"])) == ids(1, 0)
    assert await found(is_grounding="true") == ids(3, 0)
    assert await found(is_grounding="false") == ids(4, 2, 1)
    assert await found(aircraft_id=str(two["id"]), status="open", is_grounding="false") == ids(4)
    assert await found(aircraft_id=str(two["id"]), is_grounding="true") == ids(3)
    # Ids that match nothing of ours give an empty list, even another org's aircraft.
    assert await found(aircraft_id=str(their_plane["id"])) == []
    assert await found(aircraft_id=str(new_id())) == []
    assert await found(aircraft_id="not-an-id") == []
