"""Cursor pagination of /reservations: complete walks in order, and every bad cursor refused."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy.ext.asyncio import AsyncEngine

from hangar.fleet.models import Aircraft
from hangar.foundation.ids import new_id
from hangar.kit import cursor
from hangar.kit.container import Services
from hangar.reservations.models import Reservation
from tests.fixtures.factories import T0, Org, make_org, write_rows
from tests.fixtures.fakes import FakeClock

URL = "/api/v1/external/reservations"
# Few distinct start times, one a microsecond off another: many ties and near-ties.
STARTS = [
    T0,
    T0 + timedelta(microseconds=1),
    T0 + timedelta(hours=1),
    T0 - timedelta(days=400),
    None,
]
STATUSES = ["confirmed", "cancelled"]


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


async def walk(
    client: httpx.AsyncClient,
    clock: FakeClock,
    key: str,
    params: dict[str, str],
    limits: list[int],
) -> list[dict[str, Any]]:
    """Every page, following next_cursor, checking the cursor rule on each page."""
    items: list[dict[str, Any]] = []
    after: str | None = None
    for n in range(1000):
        limit = limits[n % len(limits)]
        query = {**params, "limit": str(limit), **({"after": after} if after else {})}
        clock.advance(minutes=1)  # the walk is not a rate-limit test
        response = await client.get(URL, params=query, headers=bearer(key))
        assert response.status_code == 200, response.text
        body = response.json()
        assert len(body["items"]) <= limit
        assert (body["next_cursor"] is not None) == (len(body["items"]) == limit)
        items += body["items"]
        after = body["next_cursor"]
        if after is None:
            return items
    raise AssertionError("the walk never ended")


def documented_order(rows: list[dict[str, Any]]) -> list[str]:
    """Newest start first, undated last; ties by id, newest first."""
    dated = sorted(
        (r for r in rows if r["start_time"] is not None),
        key=lambda r: (r["start_time"], r["id"]),
        reverse=True,
    )
    undated = sorted((r for r in rows if r["start_time"] is None), key=lambda r: r["id"])
    return [str(r["id"]) for r in dated + undated[::-1]]


row_spec = st.tuples(
    st.sampled_from(STARTS),
    st.sampled_from(STATUSES),
    st.sampled_from([0, 1, None]),  # which aircraft
    st.booleans(),  # soft-deleted
)
filter_spec = st.fixed_dictionaries(
    {},
    optional={
        "aircraft": st.sampled_from([0, 1]),
        "status": st.sampled_from(STATUSES),
        "start_after": st.sampled_from([s for s in STARTS if s is not None]),
        "start_before": st.sampled_from([s for s in STARTS if s is not None]),
    },
)


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    specs=st.lists(row_spec, max_size=30),
    chosen=filter_spec,
    limits=st.lists(st.integers(1, 7), min_size=1, max_size=3),
)
async def test_any_walk_returns_every_reservation_once_in_order(
    client: httpx.AsyncClient,
    engine: AsyncEngine,
    other: Org,
    clock: FakeClock,
    specs: list[tuple[datetime | None, str, int | None, bool]],
    chosen: dict[str, Any],
    limits: list[int],
) -> None:
    org = await make_org(engine)
    planes = [(await org.add(Aircraft))["id"] for _ in range(2)]
    theirs = (await other.add(Aircraft))["id"]
    rows, foreign = [], []
    for start, status, plane, deleted in specs:
        values = {
            "activity_type": "solo",
            "start_time": start,
            "end_time": start and start + timedelta(hours=1),
            "status": status,
            "created_at": T0,
            "deleted_at": datetime(2026, 1, 1, tzinfo=UTC) if deleted else None,
        }
        rows.append({**values, "id": new_id(), "org_id": org.id, "aircraft_id": plane})
        if plane is not None:
            rows[-1]["aircraft_id"] = planes[plane]
        # The other organization holds a live twin of every row, same start and status.
        foreign.append({**values, "id": new_id(), "org_id": other.id, "aircraft_id": theirs})
        foreign[-1]["deleted_at"] = None
    async with engine.begin() as conn:
        if rows:
            await write_rows(conn, Reservation, rows)
            await write_rows(conn, Reservation, foreign)

    params: dict[str, str] = {}
    expected = [r for r in rows if r["deleted_at"] is None]
    if "aircraft" in chosen:
        params["aircraft_id"] = str(planes[chosen["aircraft"]])
        expected = [r for r in expected if r["aircraft_id"] == planes[chosen["aircraft"]]]
    if "status" in chosen:
        params["status"] = chosen["status"]
        expected = [r for r in expected if r["status"] == chosen["status"]]
    if "start_after" in chosen:
        params["start_after"] = chosen["start_after"].isoformat()
        expected = [
            r for r in expected if r["start_time"] and r["start_time"] >= chosen["start_after"]
        ]
    if "start_before" in chosen:
        params["start_before"] = chosen["start_before"].isoformat()
        expected = [
            r for r in expected if r["start_time"] and r["start_time"] < chosen["start_before"]
        ]

    walked = [item["id"] for item in await walk(client, clock, org.key, params, limits)]

    assert walked == documented_order(expected)
    assert len(set(walked)) == len(walked)
    # The walk agrees with one page holding everything.
    assert walked == [i["id"] for i in await walk(client, clock, org.key, params, [500])]


async def cursor_of(client: httpx.AsyncClient, org: Org, **params: str) -> str:
    response = await client.get(URL, params={"limit": "1", **params}, headers=org.auth)
    assert response.status_code == 200, response.text
    value: str = response.json()["next_cursor"]
    assert value
    return value


def assert_invalid(response: httpx.Response) -> None:
    assert response.status_code == 400, response.text
    body = response.json()
    assert set(body) == {"detail", "code"}
    assert body["code"] == "INVALID_CURSOR"


async def two_of_each(org: Org, other: Org) -> list[dict[str, Any]]:
    plane = await org.add(Aircraft)
    mine = [
        await org.add(Reservation, aircraft_id=plane["id"], start_time=T0 + timedelta(hours=h))
        for h in range(3)
    ]
    for h in range(3):
        await other.add(Reservation, start_time=T0 + timedelta(hours=h))
    return mine


async def test_a_cursor_from_another_organization_is_refused(
    client: httpx.AsyncClient, org: Org, other: Org
) -> None:
    await two_of_each(org, other)
    theirs = await cursor_of(client, other)
    assert_invalid(await client.get(URL, params={"limit": 1, "after": theirs}, headers=org.auth))
    # Another key of the same organization may carry on the walk.
    key = await org.key_with("read:reservations")
    mine = await cursor_of(client, org)
    response = await client.get(URL, params={"limit": 1, "after": mine}, headers=bearer(key))
    assert response.status_code == 200


async def test_a_forged_cursor_is_refused(
    client: httpx.AsyncClient, org: Org, other: Org, services: Services
) -> None:
    mine = await two_of_each(org, other)
    position = cursor.Position(start_time=mine[1]["start_time"], id=mine[1]["id"])
    for forged in (
        cursor.encode(cursor.CursorKeys(b"not the server key" * 2), org.id, "||||", position),
        cursor.encode(services.cursor_keys, other.id, "||||", position),
        cursor.encode(services.cursor_keys, org.id, "other-context", position),
    ):
        assert_invalid(await client.get(URL, params={"after": forged}, headers=org.auth))
    # The same position, honestly signed, is accepted: the refusals above are the MAC's.
    honest = cursor.encode(services.cursor_keys, org.id, "||||", position)
    response = await client.get(URL, params={"after": honest}, headers=org.auth)
    assert response.status_code == 200
    assert [i["id"] for i in response.json()["items"]] == [str(mine[0]["id"])]


async def test_a_cursor_with_any_character_altered_is_refused(
    client: httpx.AsyncClient, org: Org, other: Org, clock: FakeClock
) -> None:
    await two_of_each(org, other)
    valid = await cursor_of(client, org)
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.=+/"
    altered = set()
    for i, char in enumerate(valid):
        for replacement in {"A", "f", "_", "=", "+", "!", "Ω"} - {char}:
            altered.add(valid[:i] + replacement + valid[i + 1 :])
        altered.add(valid[:i] + valid[i + 1 :])  # a character dropped
        altered.add(valid[:i] + alphabet[(alphabet.index(char) + 1) % 64] + valid[i + 1 :])
    altered |= {valid + "A", valid + "=", valid + "!", "A" + valid, valid + valid[-1]}
    altered.discard(valid)
    for n, bad in enumerate(sorted(altered)):
        if n % 50 == 0:
            clock.advance(hours=1)  # fresh minute and hour budgets
        response = await client.get(URL, params={"limit": 1, "after": bad}, headers=org.auth)
        assert response.status_code == 400, (bad, response.text)
        assert response.json()["code"] == "INVALID_CURSOR"


@pytest.mark.parametrize(
    "garbage",
    [
        "garbage",
        ".",
        "..",
        "a.b",
        "a.b.c",
        "%%%.%%%",
        "é.é",
        "\x00.\x00",
        "eyJ9.AAAA",
        "W251bGwsIm5vdC1oZXgiXQ.AAAAAAAAAAAAAAAAAAAAAA",
        "A" * 201,
        "A" * 100 + "." + "A" * 100,
        "A" * 5000 + "." + "A",
    ],
)
async def test_garbage_is_refused_and_never_a_500(
    client: httpx.AsyncClient, org: Org, other: Org, garbage: str
) -> None:
    await two_of_each(org, other)
    assert_invalid(await client.get(URL, params={"after": garbage}, headers=org.auth))


async def test_an_over_long_cursor_is_refused(
    client: httpx.AsyncClient, org: Org, other: Org
) -> None:
    await two_of_each(org, other)
    valid = await cursor_of(client, org)
    for padded in (valid + "A" * 300, valid + "=" * 10_000, " " * 300 + valid):
        assert_invalid(await client.get(URL, params={"after": padded}, headers=org.auth))


async def test_a_cursor_reused_with_other_filters_is_refused(
    client: httpx.AsyncClient, org: Org, other: Org
) -> None:
    mine = await two_of_each(org, other)
    plane = str(mine[0]["aircraft_id"])
    since = "2026-05-01T09:00:00Z"
    filtered = await cursor_of(
        client, org, aircraft_id=plane, status="confirmed", start_after=since
    )
    for changed in (
        {},
        {"aircraft_id": plane, "status": "confirmed"},
        {"aircraft_id": plane, "status": "cancelled", "start_after": since},
        {"aircraft_id": str(uuid.uuid4()), "status": "confirmed", "start_after": since},
        {"aircraft_id": plane, "status": "confirmed", "start_after": "2026-05-01T09:00:01Z"},
        {"aircraft_id": plane, "status": "confirmed", "start_after": since, "pilot_id": plane},
        {
            "aircraft_id": plane,
            "status": "confirmed",
            "start_after": since,
            "start_before": "2030-01-01T00:00:00Z",
        },
    ):
        response = await client.get(
            URL, params={**changed, "limit": 1, "after": filtered}, headers=org.auth
        )
        assert_invalid(response)
    unfiltered = await cursor_of(client, org)
    response = await client.get(
        URL, params={"status": "confirmed", "after": unfiltered}, headers=org.auth
    )
    assert_invalid(response)
    # The same filters (the instant written with another offset) carry on the walk.
    same = {"aircraft_id": plane, "status": "confirmed", "start_after": "2026-05-01T11:00:00+02:00"}
    response = await client.get(URL, params={**same, "after": filtered}, headers=org.auth)
    assert response.status_code == 200
    assert [i["id"] for i in response.json()["items"]] == [
        str(mine[1]["id"]),
        str(mine[0]["id"]),
    ]
