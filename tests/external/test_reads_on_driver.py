"""Every read of the public API, and the key lookup, runs as a statement built once and
executed on the driver's connection (hangar.db.engine.Read), never through SQLAlchemy's
per-execution machinery, on both databases."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncConnection

from hangar.fleet.models import Aircraft
from hangar.squawks.models import Squawk
from tests.factories import T0, Org

API = "/api/v1/external"


async def test_no_read_goes_through_sqlalchemy_execute(
    client: httpx.AsyncClient, org: Org, monkeypatch: pytest.MonkeyPatch
) -> None:
    plane = await org.add(Aircraft)
    await org.add(Squawk, aircraft_id=plane["id"], created_at=T0, is_grounding=True)
    plane_id = str(plane["id"])
    urls = [
        "/reservations?limit=5",
        f"/reservations?aircraft_id={plane_id}&status=confirmed"
        "&start_after=2020-01-01T00:00:00Z&start_before=2030-01-01T00:00:00Z",
        "/aircraft",
        "/squawks",
        f"/squawks?status=open&aircraft_id={plane_id}&is_grounding=true",
        "/members",
        "/maintenance-logs",
        f"/maintenance-logs?aircraft_id={plane_id}",
        "/work-orders",
        "/work-orders?status=open",
        f"/reservations.ics?token={org.key}",
    ]
    # The first request writes the key's last_used_at (a real UPDATE): let it happen first.
    assert (await client.get(f"{API}/aircraft", headers=org.auth)).status_code == 200

    executed: list[str] = []
    real = AsyncConnection.execute

    async def spy(self: AsyncConnection, statement: Any, *args: Any, **kwargs: Any) -> Any:
        executed.append(str(statement))
        return await real(self, statement, *args, **kwargs)

    monkeypatch.setattr(AsyncConnection, "execute", spy)
    for url in urls:
        response = await client.get(API + url, headers=org.auth)
        assert response.status_code == 200, (url, response.text)
    assert executed == []
