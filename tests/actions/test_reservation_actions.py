"""Reservations: create, cancel, check in, check out, no-show/expire, delete."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from hangar.fleet.models import Aircraft
from hangar.reservations.models import Reservation
from hangar.squawks.models import Squawk
from tests.fixtures.actions import assert_invalid, names, public_one, url, user_id
from tests.fixtures.factories import Org

SLOT = {
    "activity_type": "solo",
    "start_time": "2026-05-06T09:00:00+02:00",
    "end_time": "2026-05-06T09:00:00Z",
}


async def book(client: httpx.AsyncClient, org: Org, **body: Any) -> dict[str, Any]:
    response = await client.post(url(org, "reservations"), json={**SLOT, **body})
    assert response.status_code == 201, response.text
    return dict(response.json())


async def test_a_member_books_for_themselves(
    member: httpx.AsyncClient, client: httpx.AsyncClient, org: Org
) -> None:
    plane = str((await org.add(Aircraft))["id"])
    created = await book(member, org, aircraft_id=plane, instructor_id=str(org.admin_id))

    assert created["pilot_id"] == await user_id(member)
    assert (created["status"], created["start_time"]) == ("confirmed", "2026-05-06T07:00:00Z")
    assert await public_one(client, org, "reservations", created["id"]) == created
    assert await names(org.engine, org.id) == ["reservation.confirmed", "reservation.created"]
    standby = await book(member, org, status="standby", is_backup=True)
    assert standby["status"] == "standby"
    assert (await names(org.engine, org.id)).count("reservation.created") == 2
    assert (await names(org.engine, org.id)).count("reservation.confirmed") == 1


async def test_booking_for_someone_else_needs_manage(
    member: httpx.AsyncClient, instructor: httpx.AsyncClient, org: Org
) -> None:
    student = await user_id(member)
    refused = await member.post(url(org, "reservations"), json={**SLOT, "pilot_id": None})
    assert refused.status_code == 403
    assert "reservations.manage" in refused.json()["detail"]
    by_staff = await book(instructor, org, pilot_id=student)
    assert by_staff["pilot_id"] == student


@pytest.mark.parametrize(
    "change",
    [
        {"start_time": "2026-05-06T09:00:00"},  # no offset
        {"start_time": "2026-05-06"},
        {"end_time": "2026-05-06T06:00:00Z"},  # before the start
        {"status": "completed"},
        {"activity_type": "joyride"},
        {"aircraft_id": "00000000-0000-7000-8000-000000000000"},
        {"instructor_id": "00000000-0000-7000-8000-000000000000"},
        {"checked_in_at": "2026-05-06T07:00:00Z"},
    ],
)
async def test_invalid_bookings_are_422(
    admin: httpx.AsyncClient, org: Org, change: dict[str, Any]
) -> None:
    response = await admin.post(url(org, "reservations"), json={**SLOT, **change})
    assert_invalid(response)
    assert await names(org.engine, org.id) == []


async def test_an_aircraft_of_another_org_cannot_be_booked(
    admin: httpx.AsyncClient, org: Org, other: Org
) -> None:
    theirs = (await other.add(Aircraft))["id"]
    response = await admin.post(url(org, "reservations"), json={**SLOT, "aircraft_id": str(theirs)})
    assert response.status_code == 422


async def test_cancel_own_or_any_with_manage(
    member: httpx.AsyncClient, instructor: httpx.AsyncClient, client: httpx.AsyncClient, org: Org
) -> None:
    mine = await book(member, org)
    theirs = (await org.add(Reservation))["id"]  # the org admin's
    path = url(org, f"reservations/{mine['id']}/cancel")

    assert (await member.post(path, json={})).status_code == 422
    cancelled = await member.post(path, json={"reason": "weather"})
    assert cancelled.status_code == 200
    assert (await public_one(client, org, "reservations", mine["id"]))["status"] == "cancelled"
    assert (await member.post(path, json={"reason": "again"})).status_code == 409
    other_pilot = await member.post(url(org, f"reservations/{theirs}/cancel"), json={"reason": "x"})
    assert other_pilot.status_code == 403
    assert "reservations.manage" in other_pilot.json()["detail"]
    by_staff = await instructor.post(
        url(org, f"reservations/{theirs}/cancel"), json={"reason": "sick"}
    )
    assert by_staff.status_code == 200


async def test_check_in_is_blocked_by_an_inactive_aircraft_unless_forced(
    member: httpx.AsyncClient, client: httpx.AsyncClient, org: Org
) -> None:
    plane = str((await org.add(Aircraft, is_active=False))["id"])
    booked = await book(member, org, aircraft_id=plane)
    path = url(org, f"reservations/{booked['id']}/check-in")

    blocked = await member.post(path)
    assert blocked.status_code == 409
    assert blocked.json()["code"] == "CHECK_IN_BLOCKED"
    assert "inactive" in blocked.json()["detail"]
    forced = await member.post(path, json={"force": True})
    assert forced.status_code == 200
    assert forced.json()["checked_in_at"] == "2026-05-04T10:00:30Z"
    assert forced.json()["status"] == "confirmed"
    shown = await public_one(client, org, "reservations", booked["id"])
    assert shown["checked_in_at"] == "2026-05-04T10:00:30Z"
    assert (await member.post(path, json={"force": True})).status_code == 409


async def test_open_grounding_squawks_block_check_in(member: httpx.AsyncClient, org: Org) -> None:
    plane = (await org.add(Aircraft))["id"]
    await org.add(Squawk, aircraft_id=plane, severity="minor")
    await org.add(Squawk, aircraft_id=plane, severity="grounding", is_grounding=True)
    await org.add(
        Squawk, aircraft_id=plane, severity="grounding", is_grounding=True, status="resolved"
    )
    booked = await book(member, org, aircraft_id=str(plane))
    blocked = await member.post(url(org, f"reservations/{booked['id']}/check-in"), json={})
    assert blocked.status_code == 409
    assert "1 open grounding squawk" in blocked.json()["detail"]
    ground_lesson = await book(member, org, activity_type="ground")
    assert (await member.post(url(org, f"reservations/{ground_lesson['id']}/check-in"))).is_success


async def test_checkout_completes_and_advances_the_hobbs(
    member: httpx.AsyncClient, client: httpx.AsyncClient, org: Org
) -> None:
    plane = str((await org.add(Aircraft, hobbs_current=100.0))["id"])
    booked = await book(member, org, aircraft_id=plane)
    path = url(org, f"reservations/{booked['id']}/checkout")
    hobbs = {"hobbs_out": 100.0, "hobbs_in": 101.7}

    assert (await member.post(path, json=hobbs)).status_code == 409  # not checked in
    await member.post(url(org, f"reservations/{booked['id']}/check-in"))
    assert (await member.post(path, json={"hobbs_out": 2, "hobbs_in": 1})).status_code == 422
    done = await member.post(path, json=hobbs)

    assert done.status_code == 200
    assert (done.json()["status"], done.json()["completed_at"]) == (
        "completed",
        "2026-05-04T10:00:30Z",
    )
    assert await public_one(client, org, "reservations", booked["id"]) == done.json()
    assert (await public_one(client, org, "aircraft", plane))["hobbs_current"] == 101.7
    assert (await member.post(path, json=hobbs)).status_code == 409
    closed = await member.post(
        url(org, f"reservations/{booked['id']}/cancel"), json={"reason": "x"}
    )
    assert closed.status_code == 409


async def test_staff_mark_no_show_or_expired(
    member: httpx.AsyncClient, instructor: httpx.AsyncClient, client: httpx.AsyncClient, org: Org
) -> None:
    first, second = await book(member, org), await book(member, org)

    async def mark(by: httpx.AsyncClient, booked: dict[str, Any], status: str) -> int:
        path = url(org, f"reservations/{booked['id']}")
        return (await by.patch(path, json={"status": status})).status_code

    refused = await member.patch(
        url(org, f"reservations/{first['id']}"), json={"status": "no_show"}
    )
    assert refused.status_code == 403
    assert "reservations.manage" in refused.json()["detail"]
    for status in ("completed", "cancelled", "confirmed"):
        assert await mark(instructor, first, status) == 422

    assert await mark(instructor, first, "no_show") == 200
    assert (await public_one(client, org, "reservations", first["id"]))["status"] == "no_show"
    assert await mark(instructor, first, "expired") == 409  # already marked
    await member.post(url(org, f"reservations/{second['id']}/check-in"))
    assert await mark(instructor, second, "expired") == 409  # checked in: it is being flown


async def test_delete_needs_manage_and_hides_the_reservation(
    member: httpx.AsyncClient, instructor: httpx.AsyncClient, client: httpx.AsyncClient, org: Org
) -> None:
    mine = await book(member, org)
    path = url(org, f"reservations/{mine['id']}")
    assert (await member.delete(path)).status_code == 403
    assert (await instructor.delete(path)).status_code == 204
    assert await public_one(client, org, "reservations", mine["id"]) is None
    assert (await instructor.delete(path)).status_code == 404
    assert (await member.post(f"{path}/cancel", json={"reason": "x"})).status_code == 404


async def test_another_orgs_admin_sees_nothing(
    outsider: httpx.AsyncClient, admin: httpx.AsyncClient, org: Org
) -> None:
    booked = await book(admin, org)
    path = url(org, f"reservations/{booked['id']}")
    for method, target, body in (
        ("POST", url(org, "reservations"), SLOT),
        ("DELETE", path, None),
        ("PATCH", path, {"status": "no_show"}),
        ("POST", f"{path}/cancel", {"reason": "x"}),
        ("POST", f"{path}/check-in", {}),
        ("POST", f"{path}/checkout", {"hobbs_out": 1, "hobbs_in": 2}),
    ):
        response = await outsider.request(method, target, json=body)
        assert response.status_code == 404, (method, target)
    assert (await admin.post(url(org, "reservations/nope/check-in"))).status_code == 404
