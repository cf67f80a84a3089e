"""GET /api/v1/external/reservations: fields, order, filters, limits, validation."""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import httpx
import pytest

from hangar.fleet.models import Aircraft
from hangar.reservations.models import STATUSES, Reservation
from tests.fixtures.factories import T0, Org, insert_rows

URL = "/api/v1/external/reservations"
# What a reservation may leave empty: a waitlist entry for ground school leaves it all.
NULLABLE = (
    "aircraft_id",
    "pilot_id",
    "instructor_id",
    "start_time",
    "end_time",
    "checked_in_at",
    "completed_at",
)
UTC_Z = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,6})?Z$")
DELETED = datetime(2026, 1, 1, tzinfo=UTC)


def ids(body: dict[str, Any]) -> list[str]:
    return [item["id"] for item in body["items"]]


def parse_z(value: str) -> datetime:
    assert UTC_Z.match(value), value
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


async def get(client: httpx.AsyncClient, org: Org, **params: Any) -> dict[str, Any]:
    response = await client.get(URL, params=params, headers=org.auth)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    assert set(body) == {"items", "next_cursor"}
    return body


def assert_422(response: httpx.Response, param: str) -> dict[str, Any]:
    assert response.status_code == 422, response.text
    body: dict[str, Any] = response.json()
    assert set(body) == {"detail", "code", "errors"}
    assert body["code"] == "VALIDATION_ERROR"
    assert isinstance(body["detail"], str)
    assert body["detail"]
    assert body["errors"]
    for error in body["errors"]:
        assert set(error) == {"loc", "msg"}
        assert isinstance(error["msg"], str)
    assert ["query", param] in [e["loc"] for e in body["errors"]]
    return body


async def noise(other: Org) -> set[str]:
    """Rows of the other organization, at every start time a test uses: never shown."""
    plane = await other.add(Aircraft, tail_number="N999OT")
    rows = [
        await other.add(Reservation, aircraft_id=plane["id"], start_time=T0 + timedelta(hours=h))
        for h in (-1, 0, 1)
    ]
    rows.append(await other.add(Reservation, start_time=None, end_time=None))
    return {str(r["id"]) for r in rows}


async def test_every_field_with_its_type_and_nulls(
    client: httpx.AsyncClient, org: Org, other: Org
) -> None:
    foreign = await noise(other)
    plane = await org.add(Aircraft)
    instructor = await org.member("instructor")
    full = await org.add(
        Reservation,
        aircraft_id=plane["id"],
        pilot_id=org.admin_id,
        instructor_id=instructor,
        activity_type="dual_training",
        # Stored from a +02:00 time: read back in UTC.
        start_time=datetime(2026, 5, 1, 11, 0, tzinfo=timezone(timedelta(hours=2))),
        end_time=datetime(2026, 5, 1, 11, 0, 0, 250000, tzinfo=UTC),
        status="completed",
        checked_in_at=datetime(2026, 5, 1, 8, 45, 5, tzinfo=UTC),
        completed_at=datetime(2026, 5, 1, 11, 2, tzinfo=UTC),
    )
    bare = await org.add(
        Reservation, activity_type="ground", status="standby", **dict.fromkeys(NULLABLE)
    )

    body = await get(client, org)

    assert body["next_cursor"] is None
    assert not foreign & set(ids(body))
    assert body["items"] == [
        {
            "id": str(full["id"]),
            "aircraft_id": str(plane["id"]),
            "pilot_id": str(org.admin_id),
            "instructor_id": str(instructor),
            "activity_type": "dual_training",
            "start_time": "2026-05-01T09:00:00Z",
            "end_time": "2026-05-01T11:00:00.250000Z",
            "status": "completed",
            "checked_in_at": "2026-05-01T08:45:05Z",
            "completed_at": "2026-05-01T11:02:00Z",
        },
        {
            "id": str(bare["id"]),
            "aircraft_id": None,
            "pilot_id": None,
            "instructor_id": None,
            "activity_type": "ground",
            "start_time": None,
            "end_time": None,
            "status": "standby",
            "checked_in_at": None,
            "completed_at": None,
        },
    ]
    assert all(set(item) == set(body["items"][0]) for item in body["items"])
    for field in ("start_time", "end_time", "checked_in_at", "completed_at"):
        assert parse_z(body["items"][0][field]).utcoffset() == timedelta(0)


async def test_newest_start_first_and_undated_last(
    client: httpx.AsyncClient, org: Org, other: Org
) -> None:
    foreign = await noise(other)
    starts = [T0 + timedelta(hours=3), None, T0, T0 + timedelta(days=30), None, T0 - timedelta(1)]
    for start in starts:
        await org.add(Reservation, start_time=start, end_time=start and start + timedelta(hours=1))

    items = (await get(client, org))["items"]

    assert not foreign & {i["id"] for i in items}
    got = [None if i["start_time"] is None else parse_z(i["start_time"]) for i in items]
    dated = sorted((s for s in starts if s is not None), reverse=True)
    assert got == [*dated, None, None]


async def test_soft_deleted_reservations_are_never_returned(
    client: httpx.AsyncClient, org: Org, other: Org
) -> None:
    await noise(other)
    plane = await org.add(Aircraft)
    live = await org.add(Reservation, aircraft_id=plane["id"], start_time=T0)
    await org.add(Reservation, aircraft_id=plane["id"], start_time=T0, deleted_at=DELETED)
    await org.add(Reservation, start_time=None, end_time=None, deleted_at=DELETED)

    assert ids(await get(client, org)) == [str(live["id"])]
    assert ids(await get(client, org, aircraft_id=str(plane["id"]))) == [str(live["id"])]
    assert ids(await get(client, org, start_after="2026-05-01T09:00:00Z")) == [str(live["id"])]


async def test_filters_by_aircraft_pilot_and_status(
    client: httpx.AsyncClient, org: Org, other: Org
) -> None:
    foreign = await noise(other)
    one, two = await org.add(Aircraft), await org.add(Aircraft)
    student = await org.member("member")
    a = await org.add(Reservation, aircraft_id=one["id"], pilot_id=student, status="cancelled")
    b = await org.add(Reservation, aircraft_id=one["id"], pilot_id=org.admin_id)
    c = await org.add(Reservation, aircraft_id=two["id"], pilot_id=student, status="no_show")
    d = await org.add(Reservation, aircraft_id=None, pilot_id=None, start_time=None, end_time=None)

    async def listed(**params: Any) -> set[str]:
        got = set(ids(await get(client, org, **params)))
        assert not got & foreign
        return got

    assert await listed() == {str(r["id"]) for r in (a, b, c, d)}
    assert await listed(aircraft_id=str(one["id"])) == {str(a["id"]), str(b["id"])}
    assert await listed(aircraft_id=str(two["id"])) == {str(c["id"])}
    assert await listed(pilot_id=str(student)) == {str(a["id"]), str(c["id"])}
    assert await listed(pilot_id=str(org.admin_id)) == {str(b["id"])}
    assert await listed(status="confirmed") == {str(b["id"]), str(d["id"])}
    assert await listed(status="cancelled") == {str(a["id"])}
    assert await listed(status="expired") == set()
    assert await listed(aircraft_id=str(one["id"]), pilot_id=str(student)) == {str(a["id"])}
    assert await listed(aircraft_id=str(two["id"]), status="no_show") == {str(c["id"])}
    assert await listed(aircraft_id=str(two["id"]), status="confirmed") == set()


@pytest.mark.parametrize("status", STATUSES)
async def test_each_of_the_six_statuses_is_accepted(
    client: httpx.AsyncClient, org: Org, other: Org, status: str
) -> None:
    await noise(other)
    row = await org.add(Reservation, status=status)
    await org.add(Reservation, status="expired" if status != "expired" else "confirmed")
    assert ids(await get(client, org, status=status)) == [str(row["id"])]


async def test_start_after_is_inclusive_and_start_before_exclusive(
    client: httpx.AsyncClient, org: Org, other: Org
) -> None:
    await noise(other)
    tick = timedelta(microseconds=1)
    before = await org.add(Reservation, start_time=T0 - tick)
    at = await org.add(Reservation, start_time=T0)
    after = await org.add(Reservation, start_time=T0 + tick)
    await org.add(Reservation, start_time=None, end_time=None)  # no start: no range holds it
    edge = "2026-05-01T09:00:00Z"

    assert ids(await get(client, org, start_after=edge)) == [str(after["id"]), str(at["id"])]
    assert ids(await get(client, org, start_before=edge)) == [str(before["id"])]
    assert ids(await get(client, org, start_after=edge, start_before=edge)) == []
    assert ids(
        await get(client, org, start_after=edge, start_before="2026-05-01T09:00:00.000001Z")
    ) == [str(at["id"])]
    assert ids(
        await get(client, org, start_after="2026-05-01T08:59:59.999999Z", start_before=edge)
    ) == [str(before["id"])]


async def test_an_offset_is_honoured(client: httpx.AsyncClient, org: Org, other: Org) -> None:
    await noise(other)
    early = await org.add(Reservation, start_time=T0 - timedelta(seconds=1))
    at = await org.add(Reservation, start_time=T0)  # 09:00Z is 11:00+02:00 and 04:00-05:00

    for value in ("2026-05-01T11:00:00+02:00", "2026-05-01T04:00:00-05:00"):
        assert ids(await get(client, org, start_after=value)) == [str(at["id"])]
        assert ids(await get(client, org, start_before=value)) == [str(early["id"])]
    # A "+" left unencoded in the URL arrives as a space; it still means +02:00.
    response = await client.get(URL + "?start_after=2026-05-01T11:00:00+02:00", headers=org.auth)
    assert response.status_code == 200, response.text
    assert ids(response.json()) == [str(at["id"])]


@pytest.mark.parametrize("param", ["start_after", "start_before"])
@pytest.mark.parametrize(
    "value",
    ["2026-05-01T09:00:00", "2026-05-01", "2026-05-01T09:00", "2026-05-01 09:00:00"],
)
async def test_a_time_without_offset_is_422_saying_an_offset_is_required(
    client: httpx.AsyncClient, org: Org, param: str, value: str
) -> None:
    body = assert_422(await client.get(URL, params={param: value}, headers=org.auth), param)
    for message in (body["detail"], body["errors"][0]["msg"]):
        assert "offset" in message.lower()
        assert "required" in message.lower()


@pytest.mark.parametrize("value", ["yesterday", "2026-13-01T00:00:00Z", "", "T"])
async def test_a_time_that_is_no_date_time_is_422(
    client: httpx.AsyncClient, org: Org, value: str
) -> None:
    assert_422(
        await client.get(URL, params={"start_after": value}, headers=org.auth), "start_after"
    )


@pytest.mark.parametrize("value", ["bogus", "CONFIRMED", "open", "", "confirmed,cancelled"])
async def test_an_unknown_status_is_422(client: httpx.AsyncClient, org: Org, value: str) -> None:
    assert_422(await client.get(URL, params={"status": value}, headers=org.auth), "status")


# Digits only: Python's int() would read "5_0" as 50, and " 5", "+5" or an Arabic-Indic 5 as 5.
@pytest.mark.parametrize(
    "value",
    ["0", "501", "abc", "-1", "1.5", "", "5_0", " 50", "50 ", "+50", "\u0665\u0660", "\uff15"],
)
async def test_a_limit_outside_1_to_500_is_422(
    client: httpx.AsyncClient, org: Org, value: str
) -> None:
    assert_422(await client.get(URL, params={"limit": value}, headers=org.auth), "limit")


async def test_limit_defaults_to_100_and_reaches_500(
    client: httpx.AsyncClient, org: Org, other: Org
) -> None:
    await noise(other)
    starts = [T0 + timedelta(minutes=n) for n in range(501)]
    # By default a confirmed solo of the admin's.
    rows = [org.row(Reservation, start_time=s, end_time=s + timedelta(hours=1)) for s in starts]
    await insert_rows(org.engine, Reservation, rows)

    default = await get(client, org)
    assert len(default["items"]) == 100
    assert default["next_cursor"] is not None
    one = await get(client, org, limit=1)
    assert len(one["items"]) == 1
    assert one["next_cursor"] is not None
    most = await get(client, org, limit=500)
    assert len(most["items"]) == 500
    assert most["next_cursor"] is not None
    last = await get(client, org, limit=500, after=most["next_cursor"])
    assert ids(last) == [str(rows[0]["id"])]
    assert last["next_cursor"] is None


async def test_next_cursor_is_set_on_a_full_page_and_null_on_a_short_one(
    client: httpx.AsyncClient, org: Org, other: Org
) -> None:
    await noise(other)
    for _ in range(3):
        await org.add(Reservation)

    short = await get(client, org, limit=4)
    assert len(short["items"]) == 3
    assert short["next_cursor"] is None
    full = await get(client, org, limit=3)  # exactly full: a cursor, then an empty page
    assert len(full["items"]) == 3
    assert isinstance(full["next_cursor"], str)
    assert full["next_cursor"]
    empty = await get(client, org, limit=3, after=full["next_cursor"])
    assert empty == {"items": [], "next_cursor": None}
    first = await get(client, org, limit=2)
    assert first["next_cursor"] is not None
    rest = await get(client, org, limit=2, after=first["next_cursor"])
    assert len(rest["items"]) == 1
    assert rest["next_cursor"] is None


async def test_unknown_query_parameters_are_ignored(
    client: httpx.AsyncClient, org: Org, other: Org
) -> None:
    foreign = await noise(other)
    mine = {str((await org.add(Reservation))["id"]) for _ in range(2)}
    params = {"org_id": str(other.id), "foo": "bar", "sort": "asc", "page": "7", "token": other.key}
    assert set(ids(await get(client, org, **params))) == mine
    assert not mine & foreign


@pytest.mark.parametrize("param", ["aircraft_id", "pilot_id"])
async def test_an_id_that_matches_nothing_gives_an_empty_page(
    client: httpx.AsyncClient, org: Org, other: Org, param: str
) -> None:
    await noise(other)
    await org.add(Reservation, aircraft_id=(await org.add(Aircraft))["id"])
    theirs = await other.add(Aircraft)
    for value in (
        str(uuid.uuid4()),
        str(theirs["id"]) if param == "aircraft_id" else str(other.admin_id),
        "not-a-uuid",
        "",
        "x" * 5000,
        "'; DROP TABLE reservations; --",
    ):
        assert await get(client, org, **{param: value}) == {"items": [], "next_cursor": None}


async def test_needs_read_reservations(client: httpx.AsyncClient, org: Org) -> None:
    missing = await client.get(URL)
    assert missing.status_code == 401
    assert missing.json()["code"] == "UNAUTHORIZED"
    key = await org.key_with("read:aircraft", "read:members")
    response = await client.get(URL, headers={"Authorization": f"Bearer {key}"})
    assert response.status_code == 403
    assert response.json()["code"] == "INSUFFICIENT_SCOPE"
    assert "read:reservations" in response.json()["detail"]
    only = await org.key_with("read:reservations")
    assert (await client.get(URL, headers={"Authorization": f"Bearer {only}"})).status_code == 200
