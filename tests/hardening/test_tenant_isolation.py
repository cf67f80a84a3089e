"""Tenant isolation: hypothesis builds three organizations' data; for every operation, every
filter and every cursor, no key ever sees another organization's record. Cursors swapped
between organizations give 400 INVALID_CURSOR; management calls across organizations 404.

Each generated world is written to three fresh organizations. Filters are tried with the
ids of all three (own and foreign), so a filter that bypassed the organization would show.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import httpx
import pytest
from hypothesis import strategies as st
from sqlalchemy.ext.asyncio import AsyncEngine

from hangar.kit.container import Services
from hangar.maintenance.models import MaintenanceLog, WorkOrder
from hangar.reservations.models import Reservation
from hangar.squawks.models import Squawk
from tests.fixtures.clients import signed_in_as
from tests.fixtures.examples import drawn
from tests.fixtures.factories import T0, Org, aircraft, make_org
from tests.fixtures.fakes import FakeClock

API = "/api/v1/external"
RESERVATION_STATUSES = ["confirmed", "standby", "completed", "cancelled", "no_show", "expired"]
SQUAWK_STATUSES = ["open", "in_progress", "resolved", "deferred"]
WORK_ORDER_STATUSES = ["open", "in_progress", "completed", "cancelled"]
WORLDS = 6


@st.composite
def org_data(draw: st.DrawFn) -> dict[str, Any]:
    planes = draw(st.integers(1, 3))
    plane = st.integers(0, planes - 1)
    hours = st.integers(-500, 500)
    return {
        "aircraft": planes,
        "members": draw(st.integers(0, 3)),
        "reservations": draw(
            st.lists(
                st.tuples(
                    st.one_of(st.none(), plane),
                    st.sampled_from(RESERVATION_STATUSES),
                    hours,
                    st.booleans(),  # soft-deleted
                    st.booleans(),  # piloted by a member rather than the admin
                ),
                max_size=9,
            )
        ),
        "squawks": draw(
            st.lists(st.tuples(plane, st.sampled_from(SQUAWK_STATUSES), st.booleans()), max_size=5)
        ),
        "logs": draw(st.lists(plane, max_size=4)),
        "work_orders": draw(
            st.lists(st.tuples(plane, st.sampled_from(WORK_ORDER_STATUSES)), max_size=4)
        ),
        "shares_a_member_with_the_next": draw(st.booleans()),
    }


def record_calls(org_id: object, key_id: str, sub_id: str) -> list[tuple[str, str, object]]:
    """Every call on one API key's and one webhook's records, under `org_id`'s path."""
    key = f"/api/orgs/{org_id}/api-keys/{key_id}"
    hook = f"/api/orgs/{org_id}/webhooks/{sub_id}"
    return [
        ("POST", f"{key}/rotate", {}),
        ("POST", f"{key}/revoke", None),
        ("GET", hook, None),
        ("PATCH", hook, {"name": "mine"}),
        ("POST", f"{hook}/enable", None),
        ("POST", f"{hook}/test", None),
        ("GET", f"{hook}/deliveries", None),
        ("DELETE", hook, None),
    ]


def worlds() -> list[list[dict[str, Any]]]:
    return drawn(st.lists(org_data(), min_size=3, max_size=3), WORLDS)


@dataclass
class Tenant:
    org: Org
    aircraft: list[str] = field(default_factory=list)
    users: list[str] = field(default_factory=list)
    reservations: set[str] = field(default_factory=set)  # visible ones (not deleted)
    squawks: set[str] = field(default_factory=set)
    logs: set[str] = field(default_factory=set)
    work_orders: set[str] = field(default_factory=set)


async def build(engine: AsyncEngine, world: list[dict[str, Any]]) -> list[Tenant]:
    tenants = [Tenant(await make_org(engine, f"Tenant {i}")) for i in range(3)]
    for tenant, spec in zip(tenants, world, strict=True):
        org = tenant.org
        tenant.users = [str(org.admin_id)]
        tenant.aircraft = [str((await aircraft(org))["id"]) for _ in range(spec["aircraft"])]
        for _ in range(spec["members"]):
            tenant.users.append(str(await org.member("member")))
        for plane, status, hours, deleted, by_member in spec["reservations"]:
            start = T0 + timedelta(hours=hours)
            row = await org.add(
                Reservation,
                aircraft_id=None if plane is None else uuid.UUID(tenant.aircraft[plane]),
                pilot_id=uuid.UUID(tenant.users[-1] if by_member else tenant.users[0]),
                status=status,
                start_time=start,
                end_time=start + timedelta(hours=1),
                deleted_at=T0 if deleted else None,
            )
            if not deleted:
                tenant.reservations.add(str(row["id"]))
        for plane, status, grounding in spec["squawks"]:
            row = await org.add(
                Squawk,
                aircraft_id=uuid.UUID(tenant.aircraft[plane]),
                status=status,
                is_grounding=grounding,
                severity="grounding" if grounding else "minor",
            )
            tenant.squawks.add(str(row["id"]))
        for plane in spec["logs"]:
            row = await org.add(MaintenanceLog, aircraft_id=uuid.UUID(tenant.aircraft[plane]))
            tenant.logs.add(str(row["id"]))
        for plane, status in spec["work_orders"]:
            row = await org.add(
                WorkOrder, aircraft_id=uuid.UUID(tenant.aircraft[plane]), status=status
            )
            tenant.work_orders.add(str(row["id"]))
    # A person may belong to two organizations: each sees only its own membership of them.
    for i, spec in enumerate(world):
        if spec["shares_a_member_with_the_next"]:
            here, there = tenants[i], tenants[(i + 1) % 3]
            email = f"shared-{uuid.uuid4().hex[:8]}@example.org"
            user = str(await here.org.member("instructor", email=email))
            assert str(await there.org.member("mechanic", email=email)) == user
            here.users.append(user)
            there.users.append(user)
    return tenants


class Caller:
    def __init__(self, client: httpx.AsyncClient, clock: FakeClock) -> None:
        self.client = client
        self.clock = clock

    async def get(self, path: str, key: str, **params: Any) -> httpx.Response:
        self.clock.advance(minutes=1)  # a new rate-limit minute for every call
        if path.endswith(".ics"):
            return await self.client.get(f"{API}{path}", params={**params, "token": key})
        headers = {"Authorization": f"Bearer {key}"}
        return await self.client.get(f"{API}{path}", params=params, headers=headers)

    async def ok(self, path: str, key: str, **params: Any) -> Any:
        response = await self.get(path, key, **params)
        assert response.status_code == 200, (path, params, response.text)
        return response.json()


def ids(rows: list[dict[str, Any]], name: str = "id") -> set[str]:
    return {str(row[name]) for row in rows}


async def walk(caller: Caller, key: str, limit: int, **filters: Any) -> tuple[set[str], list[str]]:
    seen: list[str] = []
    cursors: list[str] = []
    after: str | None = None
    for _ in range(200):
        params = {**filters, "limit": limit, **({"after": after} if after else {})}
        page = await caller.ok("/reservations", key, **params)
        seen += [item["id"] for item in page["items"]]
        after = page["next_cursor"]
        if after is None:
            break
        cursors.append(after)
    assert len(seen) == len(set(seen)), "a reservation came back twice"
    return set(seen), cursors


async def check_world(caller: Caller, tenants: list[Tenant]) -> None:
    everyone = list(tenants)
    all_aircraft = [a for t in everyone for a in t.aircraft]
    all_users = [u for t in everyone for u in t.users]
    for tenant in tenants:
        key = tenant.org.key
        # Every operation, unfiltered: exactly this organization's records.
        assert (await walk(caller, key, 500))[0] == tenant.reservations
        assert ids(await caller.ok("/aircraft", key)) == set(tenant.aircraft)
        assert ids(await caller.ok("/squawks", key)) == tenant.squawks
        assert ids(await caller.ok("/maintenance-logs", key)) == tenant.logs
        assert ids(await caller.ok("/work-orders", key)) == tenant.work_orders
        members = await caller.ok("/members", key)
        assert ids(members, "user_id") == set(tenant.users)
        feed = (await caller.get("/reservations.ics", key)).text
        uids = {
            line.split("svc-resv-")[1].split("@")[0]
            for line in feed.splitlines()
            if line.startswith("UID:")
        }
        assert uids == tenant.reservations

        # Every filter, with every organization's ids: never a foreign record.
        for plane in all_aircraft:
            own = plane in tenant.aircraft
            for path, known in (
                ("/squawks", tenant.squawks),
                ("/maintenance-logs", tenant.logs),
            ):
                got = ids(await caller.ok(path, key, aircraft_id=plane))
                assert got <= known
                assert own or got == set()
            got, _ = await walk(caller, key, 500, aircraft_id=plane)
            assert got <= tenant.reservations
            assert own or got == set()
        for user in all_users:
            got, _ = await walk(caller, key, 500, pilot_id=user)
            assert got <= tenant.reservations
            assert user in tenant.users or got == set()
        for status in RESERVATION_STATUSES:
            assert (await walk(caller, key, 500, status=status))[0] <= tenant.reservations
        for status in SQUAWK_STATUSES:
            assert ids(await caller.ok("/squawks", key, status=status)) <= tenant.squawks
        for flag in ("true", "false"):
            assert ids(await caller.ok("/squawks", key, is_grounding=flag)) <= tenant.squawks
        for status in WORK_ORDER_STATUSES:
            got = ids(await caller.ok("/work-orders", key, status=status))
            assert got <= tenant.work_orders

    # Every cursor: a complete walk in small pages, and no other organization may use it.
    for tenant in tenants:
        for limit in (1, 2):
            seen, cursors = await walk(caller, tenant.org.key, limit)
            assert seen == tenant.reservations
            for cursor in cursors:
                for stranger in tenants:
                    if stranger is tenant:
                        continue
                    swapped = await caller.get("/reservations", stranger.org.key, after=cursor)
                    assert swapped.status_code == 400, swapped.text
                    assert swapped.json()["code"] == "INVALID_CURSOR"
                    assert set(swapped.json()) == {"detail", "code"}


@pytest.mark.parametrize("world", range(WORLDS))
async def test_no_key_ever_sees_another_organizations_records(
    world: int, engine: AsyncEngine, client: httpx.AsyncClient, clock: FakeClock
) -> None:
    generated = GENERATED[world]
    tenants = await build(engine, generated)
    await check_world(Caller(client, clock), tenants)


GENERATED = worlds()


# --- management across organizations ----------------------------------------------------------


async def test_management_calls_across_organizations_are_404(
    services: Services, engine: AsyncEngine, resolver: Any
) -> None:
    tenants = [await make_org(engine, f"Managed {i}") for i in range(3)]
    keys: dict[uuid.UUID, str] = {}
    subs: dict[uuid.UUID, str] = {}
    for org in tenants:
        async with signed_in_as(services, org.admin_id) as admin:
            created = await admin.post(
                f"/api/orgs/{org.id}/api-keys", json={"name": "k", "scopes": ["read:aircraft"]}
            )
            assert created.status_code == 201, created.text
            keys[org.id] = created.json()["id"]
            sub = await admin.post(
                f"/api/orgs/{org.id}/webhooks",
                json={"name": "s", "url": "https://hooks.example.com/x", "events": ["*"]},
            )
            assert sub.status_code == 201, sub.text
            subs[org.id] = sub.json()["id"]

    for me in tenants:
        async with signed_in_as(services, me.admin_id) as admin:
            for them in tenants:
                if them is me:
                    continue
                k, s = keys[them.id], subs[them.id]
                # Their organization in the path: as if it did not exist.
                foreign = [
                    ("GET", f"/api/orgs/{them.id}/api-keys", None),
                    (
                        "POST",
                        f"/api/orgs/{them.id}/api-keys",
                        {"name": "x", "scopes": ["read:aircraft"]},
                    ),
                    ("GET", f"/api/orgs/{them.id}/webhooks", None),
                    (
                        "POST",
                        f"/api/orgs/{them.id}/aircraft",
                        {"tail_number": "N1", "aircraft_type": "C172"},
                    ),
                    *record_calls(them.id, k, s),
                    # Their records under my organization's path: not found either.
                    *record_calls(me.id, k, s),
                ]
                for method, path, body in foreign:
                    response = await admin.request(method, path, json=body)
                    assert response.status_code == 404, (method, path, response.text)
                    assert response.json()["code"] == "NOT_FOUND"
                mine = await admin.get(f"/api/orgs/{me.id}/api-keys")
                assert k not in {row["id"] for row in mine.json()}
    # Nothing of theirs was changed by anyone else.
    for org in tenants:
        async with signed_in_as(services, org.admin_id) as admin:
            [sub] = (await admin.get(f"/api/orgs/{org.id}/webhooks")).json()
            assert sub["name"] == "s"
            listed = {
                row["id"]: row["status"]
                for row in (await admin.get(f"/api/orgs/{org.id}/api-keys")).json()
            }
            assert listed[keys[org.id]] == "active"
