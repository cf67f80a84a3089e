"""GET /api/v1/external/members"""

from __future__ import annotations

import uuid
from datetime import timedelta

import httpx
from sqlalchemy import select, update

from hangar.orgs.members import Contact, invite_member
from hangar.orgs.models import Membership, Role
from tests.fixtures.factories import T0, Org

URL = "/api/v1/external/members"
FIELDS = {"user_id", "role_id", "role_name", "status", "is_discovery", "joined_at"}
CONTACT = {"email", "first_name", "last_name", "phone"}


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


async def members(client: httpx.AsyncClient, key: str) -> dict[str, dict[str, object]]:
    response = await client.get(URL, headers=bearer(key))
    assert response.status_code == 200, response.text
    body = response.json()
    assert isinstance(body, list)
    by_user = {m["user_id"]: m for m in body}
    assert len(by_user) == len(body)
    return by_user


async def role_id(org: Org, name: str) -> str:
    async with org.engine.connect() as conn:
        found = await conn.scalar(select(Role.id).where(Role.org_id == org.id, Role.name == name))
    return str(found)


async def changed_member(org: Org, role: str, **row: object) -> uuid.UUID:
    """A membership of `org`, then its row changed to what the app does not make itself."""
    user = await org.member(role)
    async with org.engine.begin() as conn:
        await conn.execute(
            update(Membership)
            .where(Membership.org_id == org.id, Membership.user_id == user)
            .values(**row)
        )
    return user


async def test_without_full_the_contact_keys_are_absent(
    client: httpx.AsyncClient, org: Org, other: Org
) -> None:
    pilot = await org.member(
        "instructor",
        email="Cfi@Example.org",
        first_name="Chuck",
        last_name="Yeager",
        phone="+15551234567",
        is_discovery=True,
        now=T0 + timedelta(days=2, seconds=5),
    )
    await other.member("member", email="stranger@example.org")

    by_user = await members(client, await org.key_with("read:members"))

    assert set(by_user) == {str(org.admin_id), str(pilot)}
    for record in by_user.values():
        assert set(record) == FIELDS  # absent, not null
    assert by_user[str(pilot)] == {
        "user_id": str(pilot),
        "role_id": await role_id(org, "instructor"),
        "role_name": "instructor",
        "status": "active",
        "is_discovery": True,
        "joined_at": "2026-05-03T09:00:05Z",
    }
    assert by_user[str(org.admin_id)]["role_name"] == "admin"
    assert by_user[str(org.admin_id)]["is_discovery"] is False


async def test_with_both_scopes_the_contact_fields_are_present(
    client: httpx.AsyncClient, org: Org, other: Org
) -> None:
    pilot = await org.member(
        "member", email="Pat.Contact@Example.org", first_name="Pat", last_name="Pilot", phone=None
    )
    await other.member("member", email="someone-else@example.org")

    by_user = await members(client, await org.key_with("read:members", "read:members.full"))

    assert set(by_user) == {str(org.admin_id), str(pilot)}
    for record in by_user.values():
        assert set(record) == FIELDS | CONTACT
    assert {k: by_user[str(pilot)][k] for k in CONTACT} == {
        "email": "pat.contact@example.org",
        "first_name": "Pat",
        "last_name": "Pilot",
        "phone": None,
    }
    admin = by_user[str(org.admin_id)]
    assert (admin["first_name"], admin["last_name"]) == ("Ada", "Admin")
    assert "someone-else@example.org" not in str(by_user)


async def test_full_alone_is_refused_and_members_alone_hides_contacts(
    client: httpx.AsyncClient, org: Org, other: Org
) -> None:
    await org.member("member", email="hidden@example.org", phone="+15550001111")
    await other.member("member")
    only_full = await client.get(URL, headers=bearer(await org.key_with("read:members.full")))
    assert only_full.status_code == 403
    assert only_full.json()["code"] == "INSUFFICIENT_SCOPE"
    assert "read:members" in only_full.json()["detail"]

    plain = await client.get(URL, headers=bearer(await org.key_with("read:members")))
    assert plain.status_code == 200
    assert "hidden@example.org" not in plain.text
    assert "+15550001111" not in plain.text
    assert "Ada" not in plain.text


async def test_soft_deleted_memberships_and_other_orgs_are_absent(
    client: httpx.AsyncClient, org: Org, other: Org
) -> None:
    await changed_member(org, "member", deleted_at=T0 + timedelta(days=1))
    stays = await org.member("mechanic")
    theirs = await other.member("member")

    by_user = await members(client, org.key)

    assert set(by_user) == {str(org.admin_id), str(stays)}
    assert str(theirs) not in by_user
    theirs_seen = await members(client, other.key)
    assert set(theirs_seen) == {str(other.admin_id), str(theirs)}


async def test_a_person_in_two_orgs_shows_each_orgs_membership(
    client: httpx.AsyncClient, org: Org, other: Org
) -> None:
    both = await org.member("instructor", email="both@example.org")
    assert await other.member("member", email="both@example.org") == both

    mine = (await members(client, org.key))[str(both)]
    theirs = (await members(client, other.key))[str(both)]
    assert (mine["role_name"], mine["role_id"]) == ("instructor", await role_id(org, "instructor"))
    assert (theirs["role_name"], theirs["role_id"]) == ("member", await role_id(other, "member"))


async def test_status_values_and_a_membership_without_a_role(
    client: httpx.AsyncClient, org: Org, other: Org
) -> None:
    inactive = await changed_member(org, "member", status="inactive")
    pending = await changed_member(org, "member", status="pending", joined_at=None)
    roleless = await changed_member(org, "member", role_id=None)
    await other.member("member")

    by_user = await members(client, await org.key_with("read:members", "read:members.full"))

    assert by_user[str(inactive)]["status"] == "inactive"
    assert by_user[str(pending)]["status"] == "pending"
    assert by_user[str(pending)]["joined_at"] is None
    assert by_user[str(roleless)]["role_id"] is None
    assert by_user[str(roleless)]["role_name"] is None
    assert str(by_user[str(roleless)]["email"]).endswith("@example.org")
    assert len(by_user) == 4


async def test_a_pending_member_shows_this_orgs_record_under_its_invitations_id(
    client: httpx.AsyncClient, org: Org, other: Org
) -> None:
    account = await other.member("member", email="invited@example.org", first_name="Theirs")
    async with org.engine.begin() as conn:
        person = Contact("Invited@Example.org", first_name="Ours")
        invited = await invite_member(conn, org.id, person, role="instructor", now=T0)

    by_user = await members(client, await org.key_with("read:members", "read:members.full"))

    pending = by_user[str(invited.member.user_id)]
    assert (pending["status"], pending["email"], pending["first_name"]) == (
        "pending",
        "invited@example.org",
        "Ours",
    )
    assert str(account) not in by_user
    assert "Theirs" not in str(by_user)
    theirs = await members(client, await other.key_with("read:members", "read:members.full"))
    assert str(invited.member.user_id) not in theirs
    assert theirs[str(account)]["first_name"] == "Theirs"
