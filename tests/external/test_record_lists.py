"""What the unpaginated record lists (squawks, work orders, maintenance logs) share: a filter
takes only its own values, and a list holds the 500 most recent of the organization's live
records, a filter narrowing the set before the cap."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from hangar.fleet.models import Aircraft
from hangar.maintenance.models import MaintenanceLog, WorkOrder
from hangar.squawks.models import Squawk
from tests.fixtures.external import listed
from tests.fixtures.factories import T0, Org, insert_rows


@dataclass(frozen=True)
class Capped:
    url: str
    model: type[Any]
    when: Callable[[int], dict[str, object]]  # what makes the row of step n: higher is more recent
    mark: dict[str, str]  # what only the old rows have; {} where the filter is their aircraft
    newest_first: bool  # the insertion order, so that it cannot pass for the list's order


def minutes(n: int) -> dict[str, object]:
    return {"created_at": T0 + timedelta(minutes=n)}


def days(n: int) -> dict[str, object]:
    return {"event_date": date(2024, 1, 1) + timedelta(days=n), "work_performed": f"entry {n}"}


P = "/api/v1/external"
CASES = {
    "squawks": Capped(f"{P}/squawks", Squawk, minutes, {"status": "deferred"}, True),
    "work orders": Capped(f"{P}/work-orders", WorkOrder, minutes, {"status": "cancelled"}, False),
    "maintenance logs": Capped(f"{P}/maintenance-logs", MaintenanceLog, days, {}, True),
}


# The filters that take a fixed set of values, and values each must refuse with a 422.
REFUSED = [
    (
        "squawks",
        "is_grounding",
        ["yes", "no", "1", "0", "", "True", "FALSE", "t", "f", "on", "null", "true "],
    ),
    ("squawks", "status", ["closed", "OPEN", "", "completed", "cancelled", "open,resolved", "*"]),
    ("work-orders", "status", ["closed", "Open", "", "resolved", "deferred", "open "]),
]


@pytest.mark.parametrize(
    ("path", "param", "value"), [(p, q, v) for p, q, values in REFUSED for v in values]
)
async def test_a_filter_takes_only_its_own_values(
    client: httpx.AsyncClient, org: Org, path: str, param: str, value: str
) -> None:
    response = await client.get(f"{P}/{path}", params={param: value}, headers=org.auth)
    assert response.status_code == 422
    body = response.json()
    assert body["code"] == "VALIDATION_ERROR"
    assert body["errors"][0]["loc"] == ["query", param]


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
async def test_at_most_the_500_most_recent_and_a_filter_reaches_older(
    client: httpx.AsyncClient, org: Org, other: Org, engine: AsyncEngine, case: Capped
) -> None:
    busy, quiet = await org.add(Aircraft), await org.add(Aircraft)
    their_plane = await other.add(Aircraft)

    def row(owner: Org, plane: dict[str, Any], n: int, **values: object) -> dict[str, object]:
        return owner.row(case.model, aircraft_id=plane["id"], **case.when(n), **values)

    steps = range(700, 170, -1) if case.newest_first else range(171, 701)
    mine = {n: row(org, busy, n) for n in steps}  # 530, in insertion order
    old = [row(org, quiet, n, **case.mark) for n in range(3)]  # older than all of them
    deleted = [row(org, busy, 900 + n, deleted_at=T0) for n in range(10)]
    theirs = [row(other, their_plane, 1000 + n) for n in range(10)]
    await insert_rows(engine, case.model, [*mine.values(), *old, *deleted, *theirs])

    body = await listed(client, case.url, org)

    assert [r["id"] for r in body] == [str(mine[n]["id"]) for n in range(700, 200, -1)]
    # A filter narrows the set before the cap, so older records come back.
    narrowed = case.mark or {"aircraft_id": str(quiet["id"])}
    history = await listed(client, case.url, org, **narrowed)
    assert [r["id"] for r in history] == [str(r["id"]) for r in reversed(old)]
    assert len(await listed(client, case.url, other)) == 10
