"""The two attacks an organization's admin could make on accounts that exist outside it,
reproduced end to end through the HTTP API, and shown to be closed.

1. Takeover: B's admin sets up alice@ with a password B chose; A's admin then adds alice@ as
   an admin of A. B's password must never give access to A, and the account B set up must not
   be able to accept A's invitation without A's link.
2. Disclosure and enrolment: B's admin adds the email of one of A's members. The answer must
   not carry A's record of the person (names, phone), must not enrol the person in B without
   their consent, and must look exactly like the answer for an email with no account: down to
   the `user_id`, which is the invitation's own (made now), never the account's, so neither
   its value nor its UUIDv7 time says whether (or which, or since when) an account exists,
   and two organizations cannot match up a person who has not accepted.

`org` is A (its admin is `admin`), `other` is B (its admin is `outsider`).
"""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest
from sqlalchemy import update

from hangar.auth.models import User
from hangar.kit.container import Services
from hangar.kit.errors import Conflict
from hangar.orgs.members import Contact, add_member
from hangar.seed.demo import ADMIN_EMAIL, prepare_demo
from tests.fixtures.actions import public
from tests.fixtures.environment import PASSWORD
from tests.fixtures.factories import Org, make_org
from tests.fixtures.fakes import FakeClock
from tests.fixtures.invites import (
    UserRow,
    browser,
    held,
    id_time,
    invite,
    org_ids,
    set_password,
    sign_in,
    token_of,
    user_row,
)

B_PASSWORD = "chosen by B's admin"
# What the admin typed differs between the two requests; nothing else may.
TYPED = {"email", "first_name", "last_name", "phone", "role_name", "is_discovery"}
GENERATED = {"user_id", "role_id", "invitation_url"}
# A's record of Bob: none of it may reach B.
BOB_IN_A = {"first_name": "Robert", "last_name": "Secretname", "phone": "+15559876543"}


async def test_a_password_set_up_through_b_never_gives_access_to_a(
    admin: httpx.AsyncClient,
    outsider: httpx.AsyncClient,
    services: Services,
    client: httpx.AsyncClient,
    org: Org,
    other: Org,
) -> None:
    # B's admin invites alice@ and, holding the link, chooses her password.
    b_link = await invite(outsider, other, "alice@x.example", first_name="Alice", last_name="B")
    async with browser(services) as b_admin_as_alice:
        assert (await set_password(b_admin_as_alice, token_of(b_link), B_PASSWORD)).is_success

        # A's admin adds the same email as an admin of A. No password can be given.
        with_password = await admin.post(
            f"/api/orgs/{org.id}/members",
            json={
                "email": "alice@x.example",
                "first_name": "Alice",
                "last_name": "A",
                "role": "admin",
                "password": "A's choice",
            },
        )
        assert with_password.status_code == 422
        a_link = await invite(admin, org, "alice@x.example", role="admin", last_name="A")
        assert a_link["status"] == "pending"

        # B's password signs in to B only; A is as unknown as any organization.
        session = (await b_admin_as_alice.get("/api/session")).json()
        assert org_ids(session) == {str(other.id)}
        for attempt in (
            await b_admin_as_alice.post(f"/api/orgs/{org.id}/api-keys", json={}),
            await b_admin_as_alice.get(f"/api/orgs/{org.id}/api-keys"),
            await b_admin_as_alice.post(f"/api/orgs/{org.id}/members", json={}),
            await b_admin_as_alice.get(f"/settings/{org.id}/keys"),
        ):
            assert attempt.status_code == 404
        # Without A's link there is nothing to accept: B's own (used) link and a guess answer
        # the same 404; A's link, if it ever reached B's admin, makes no account for an
        # email that has one (409, nothing changes).
        for token in (token_of(b_link), "A" * 43):
            refused = await b_admin_as_alice.post(f"/api/invitations/{token}/accept")
            assert refused.status_code == 404
        door = await set_password(b_admin_as_alice, token_of(a_link), "takeover!")
        assert (door.status_code, door.json()["code"]) == (409, "ACCOUNT_EXISTS")
        async with browser(services) as fresh:
            assert (await sign_in(fresh, "alice@x.example", "takeover!")).status_code == 401
            again = (await sign_in(fresh, "alice@x.example", B_PASSWORD)).json()
            assert org_ids(again) == {str(other.id)}

    # A still sees a pending invitation, not an admin.
    [alice_in_a] = [
        m for m in await public(client, org, "members") if m["email"] == "alice@x.example"
    ]
    assert (alice_in_a["status"], alice_in_a["role_name"]) == ("pending", "admin")


async def test_adding_an_email_of_another_orgs_member_discloses_and_enrols_nothing(
    outsider: httpx.AsyncClient,
    services: Services,
    client: httpx.AsyncClient,
    org: Org,
    other: Org,
    clock: FakeClock,
) -> None:
    bob = await org.member("instructor", email="bob@x.example", password=PASSWORD, **BOB_IN_A)

    async def b_adds(email: str) -> httpx.Response:
        """B's admin adds `email`: the two requests differ in nothing else."""
        body = {"email": email, "first_name": "Bobby", "last_name": "B", "role": "member"}
        return await outsider.post(f"/api/orgs/{other.id}/members", json=body)

    known, unknown = await b_adds("bob@x.example"), await b_adds("nobody@x.example")

    # The same status and the same shape, whether or not the email has an account.
    assert known.status_code == unknown.status_code == 201
    k, u = known.json(), unknown.json()
    assert set(k) == set(u)
    assert known.headers.keys() == unknown.headers.keys()
    differing = {f for f in k if k[f] != u[f]}
    assert differing <= GENERATED | {"email"}, differing
    assert k["email"] == "bob@x.example"
    assert {f: k[f] for f in TYPED - {"email"}} == {f: u[f] for f in TYPED - {"email"}}
    # Nothing of A's record of Bob is in B's answer.
    for secret in (*BOB_IN_A.values(), "instructor", str(org.id)):
        assert secret not in known.text
    assert (k["first_name"], k["last_name"], k["phone"]) == ("Bobby", "B", None)
    # Both ids are the invitations' own, made now: not Bob's, nor anything older.
    assert k["user_id"] != str(bob)
    assert id_time(k["user_id"]) == id_time(u["user_id"]) == clock.now()
    assert id_time(bob) != clock.now()

    # B's own list shows B's record, under B's invitation's id; A's is untouched.
    b_members = await public(client, other, "members")
    assert str(bob) not in str(b_members)
    [bob_in_b] = [m for m in b_members if m["user_id"] == k["user_id"]]
    assert (bob_in_b["status"], bob_in_b["email"], bob_in_b["first_name"], bob_in_b["phone"]) == (
        "pending",
        "bob@x.example",
        "Bobby",
        None,
    )
    assert "Secretname" not in str(await public(client, other, "members"))
    [bob_in_a] = [m for m in await public(client, org, "members") if m["user_id"] == str(bob)]
    assert bob_in_a["status"] == "active"
    assert {f: bob_in_a[f] for f in BOB_IN_A} == BOB_IN_A

    # Bob is not enrolled in B until he accepts; B's admin cannot accept for him.
    async with browser(services) as bob_browser:
        session = (await sign_in(bob_browser, "bob@x.example", PASSWORD)).json()
        assert org_ids(session) == {str(org.id)}
        assert (await bob_browser.post(f"/api/orgs/{other.id}/squawks", json={})).status_code == 404
    refused = await outsider.post(f"/api/invitations/{token_of(k)}/accept")
    assert refused.status_code == 404
    assert (await set_password(client, token_of(k), "B sets it")).status_code == 409
    assert (await held(other, k)).status == "pending"


async def test_two_organizations_inviting_one_person_get_ids_that_match_nothing(
    admin: httpx.AsyncClient,
    outsider: httpx.AsyncClient,
    client: httpx.AsyncClient,
    org: Org,
    other: Org,
) -> None:
    third = await make_org(org.engine, "Third Flying Club")
    carol = await third.member("member", email="carol@x.example", password=PASSWORD)

    in_a = await invite(admin, org, "carol@x.example")
    in_b = await invite(outsider, other, "Carol@X.example")

    ids = {in_a["user_id"], in_b["user_id"], str(carol)}
    assert len(ids) == 3
    a_list, b_list = await public(client, org, "members"), await public(client, other, "members")
    assert {m["user_id"] for m in a_list} & {m["user_id"] for m in b_list} == set()
    for member_list in (a_list, b_list):
        assert str(carol) not in str(member_list)
    # Behind each id is a placeholder of its own: no email, no password.
    for created in (in_a, in_b):
        assert await user_row(org.engine, created["user_id"]) == UserRow(None, False)


async def test_the_answer_for_a_known_email_matches_that_for_a_new_one_field_by_field(
    outsider: httpx.AsyncClient, org: Org, other: Org, clock: FakeClock
) -> None:
    known_account = await org.member(
        "member", email="known@x.example", first_name="K", phone="+15550000001"
    )
    fields: dict[str, Any] = {
        "first_name": "Same",
        "last_name": "Name",
        "phone": "+1555",
        "is_discovery": True,
    }

    known = await invite(outsider, other, "known@x.example", role="mechanic", **fields)
    new = await invite(outsider, other, "new@x.example", role="mechanic", **fields)

    for created in (known, new):
        assert {f: created[f] for f in fields} == fields
        assert (created["status"], created["joined_at"], created["role_name"]) == (
            "pending",
            None,
            "mechanic",
        )
        assert created["invitation_expires_at"] == new["invitation_expires_at"]
        # A fresh id, made at the clock's now, whatever the email's history.
        assert uuid.UUID(created["user_id"]).version == 7
        assert id_time(created["user_id"]) == clock.now()
    assert str(known_account) not in {known["user_id"], new["user_id"]}
    assert known["user_id"] != new["user_id"]
    assert known["role_id"] == new["role_id"]  # B's mechanic role, not anything of A's


async def test_no_operator_path_joins_an_existing_account_to_an_organization(
    org: Org, other: Org, clock: FakeClock
) -> None:
    # An account someone set up (here, through another organization): neither the operator's
    # active membership (`hangar user create`'s, the demo's) nor the demo's admin login may
    # land on it; only an invitation its holder accepts does.
    email = f"set-up-{uuid.uuid4().hex[:8]}@example.org"
    account = await other.member("member", email=email, password=PASSWORD)
    async with org.engine.begin() as conn:
        with pytest.raises(Conflict) as refused:
            await add_member(conn, org.id, Contact(email.upper()), role="admin", now=clock.now())
    assert refused.value.code == "ACCOUNT_EXISTS"
    async with org.engine.begin() as conn:
        # The demo's admin login, on an address someone else already holds an account for.
        await conn.execute(update(User).where(User.id == account).values(email=ADMIN_EMAIL))
        with pytest.raises(Conflict):
            await prepare_demo(conn, clock.now())
        await conn.rollback()
    assert await user_row(org.engine, account) == UserRow(email, True)
