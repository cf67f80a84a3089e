"""POST /api/orgs/{org}/members and DELETE .../members/{user_id} (members.manage)."""

from __future__ import annotations

import httpx
import pytest

from tests.actions.support import public, url, user_id
from tests.factories import Org

MEMBER_FIELDS = {
    "user_id",
    "role_id",
    "role_name",
    "status",
    "is_discovery",
    "joined_at",
    "email",
    "first_name",
    "last_name",
    "phone",
}
NEW = {"email": "Pat@Example.org", "first_name": "Pat", "last_name": "Pilot", "role": "member"}


async def test_admin_adds_an_active_member_who_can_sign_in(
    admin: httpx.AsyncClient, client: httpx.AsyncClient, org: Org
) -> None:
    body = {**NEW, "phone": "+15551234", "password": "a long password", "is_discovery": True}
    response = await admin.post(url(org, "members"), json=body)

    assert response.status_code == 201, response.text
    created = response.json()
    assert set(created) == MEMBER_FIELDS
    assert created["email"] == "pat@example.org"
    assert (created["role_name"], created["status"], created["is_discovery"]) == (
        "member",
        "active",
        True,
    )
    assert created["joined_at"] == "2026-05-04T10:00:30Z"
    listed = [m for m in await public(client, org, "members") if m["user_id"] == created["user_id"]]
    assert listed == [created]
    signed_in = await client.post(
        "/api/session", json={"email": "pat@example.org", "password": "a long password"}
    )
    assert signed_in.status_code == 200
    again = await admin.post(url(org, "members"), json=NEW)
    assert again.status_code == 409
    assert again.json()["code"] == "ALREADY_MEMBER"


@pytest.mark.parametrize(
    "body",
    [
        {**NEW, "role": "owner"},
        {**NEW, "password": "short"},
        {**NEW, "email": "not-an-email"},
        {**NEW, "nickname": "Ace"},
        {"email": "x@example.org", "role": "member"},
    ],
)
async def test_invalid_bodies_are_422(
    admin: httpx.AsyncClient, org: Org, body: dict[str, object]
) -> None:
    response = await admin.post(url(org, "members"), json=body)
    assert response.status_code == 422
    assert response.json()["code"] == "VALIDATION_ERROR"


async def test_removal_is_a_soft_delete_that_ends_access(
    admin: httpx.AsyncClient, member: httpx.AsyncClient, client: httpx.AsyncClient, org: Org
) -> None:
    gone = await user_id(member)
    response = await admin.delete(url(org, f"members/{gone}"))

    assert response.status_code == 204
    assert gone not in {m["user_id"] for m in await public(client, org, "members")}
    locked_out = await member.post(url(org, "squawks"), json={})
    assert locked_out.status_code == 404
    assert (await admin.delete(url(org, f"members/{gone}"))).status_code == 404
    myself = await admin.delete(url(org, f"members/{await user_id(admin)}"))
    assert myself.status_code == 409


async def test_only_members_manage_and_only_this_org(
    member: httpx.AsyncClient,
    instructor: httpx.AsyncClient,
    outsider: httpx.AsyncClient,
    org: Org,
) -> None:
    for caller in (member, instructor):
        refused = await caller.post(url(org, "members"), json=NEW)
        assert refused.status_code == 403
        assert "members.manage" in refused.json()["detail"]
        refused = await caller.delete(url(org, f"members/{org.admin_id}"))
        assert refused.status_code == 403
    for response in (
        await outsider.post(url(org, "members"), json=NEW),
        await outsider.delete(url(org, f"members/{org.admin_id}")),
    ):
        assert response.status_code == 404
        assert response.json()["code"] == "NOT_FOUND"


async def test_a_member_of_another_org_is_not_found(
    admin: httpx.AsyncClient, org: Org, other: Org
) -> None:
    theirs = await other.member("member")
    for target in (theirs, "not-an-id"):
        assert (await admin.delete(url(org, f"members/{target}"))).status_code == 404
