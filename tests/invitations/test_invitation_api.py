"""/api/invitations/{token}: looking at a link, setting a new account's password through it,
and accepting it signed in. Time moves only when a test moves the clock."""

from __future__ import annotations

import asyncio
import uuid
from datetime import timedelta

import httpx
import pytest
from sqlalchemy import select, update

from hangar.accounts.service import password_reset
from hangar.auth import users
from hangar.kit.container import Services
from hangar.orgs.invitations import LIFETIME
from hangar.orgs.models import Invitation, Membership
from tests.fixtures.actions import public
from tests.fixtures.environment import PASSWORD
from tests.fixtures.factories import T0, Org
from tests.fixtures.fakes import FakeClock
from tests.fixtures.invites import (
    Held,
    TwoLinks,
    UserRow,
    account_id,
    browser,
    held,
    invite,
    invite_account,
    org_ids,
    set_password,
    sign_in,
    token_of,
    user_row,
)

NOT_VALID = {"detail": "This invitation link is not valid or has expired", "code": "NOT_FOUND"}
ACCOUNT_EXISTS = {
    "detail": "An account with this email already exists: sign in with it to accept the "
    "invitation. If you cannot sign in, ask this hangar's operator for a password reset link.",
    "code": "ACCOUNT_EXISTS",
}


async def status_of(org: Org, user: str) -> tuple[str, object]:
    async with org.engine.connect() as conn:
        row = (
            await conn.execute(
                select(Membership.status, Membership.joined_at).where(
                    Membership.org_id == org.id,
                    Membership.user_id == uuid.UUID(user),
                    Membership.deleted_at.is_(None),
                )
            )
        ).one()
    return row.status, row.joined_at


async def test_the_link_says_where_it_leads_and_the_same_whatever_the_emails_history(
    admin: httpx.AsyncClient, client: httpx.AsyncClient, org: Org, other: Org
) -> None:
    # Four histories of an email: none; an account with a password in another organization;
    # one without a password there; one whose only membership was removed.
    await other.member("admin", email="has-account@example.org", password=PASSWORD)
    await other.member("member", email="no-password@example.org")
    gone = await other.member("member", email="gone@example.org", password=PASSWORD)
    async with org.engine.begin() as conn:
        await conn.execute(
            update(Membership).where(Membership.user_id == gone).values(deleted_at=T0)
        )
    emails = ["New.Person@Example.org", "has-account@example.org", "no-password@example.org"]
    links = [await invite(admin, org, e, role="instructor") for e in [*emails, "gone@example.org"]]

    shown = [await client.get(f"/api/invitations/{token_of(link)}") for link in links]

    assert {r.status_code for r in shown} == {200}
    assert {r.headers["cache-control"] for r in shown} == {"no-store"}
    org_name = (await admin.get("/api/session")).json()["memberships"][0]["org_name"]
    assert shown[0].json() == {
        "org_name": org_name,
        "role_name": "instructor",
        "email": "new.person@example.org",
        "expires_at": "2026-05-11T10:00:30Z",
    }
    # Every other history answers the very same fields, but for the email itself: nothing
    # says whether an account exists, nor anything of it or of the other organization.
    for response, link in zip(shown[1:], links[1:], strict=True):
        assert response.json() == {**shown[0].json(), "email": link["email"]}
        assert response.headers.keys() == shown[0].headers.keys()
        for secret in (str(other.id), "Other Aero Club", str(gone)):
            assert secret not in response.text


@pytest.mark.parametrize("token", ["x" * 43, "", "x" * 500, "..%2F..%2Fapi"])
async def test_an_unknown_link_is_404(client: httpx.AsyncClient, token: str) -> None:
    response = await client.get(f"/api/invitations/{token}")
    assert response.status_code == 404
    assert response.json()["code"] == "NOT_FOUND"


async def test_a_new_person_sets_their_password_which_accepts_and_signs_them_in(
    admin: httpx.AsyncClient, services: Services, org: Org, other: Org, clock: FakeClock
) -> None:
    created = await invite(admin, org, "fresh@example.org", role="mechanic")
    token = token_of(created)
    clock.advance(hours=3)

    async with browser(services) as person:
        response = await set_password(person, token, "my own secret")

        assert response.status_code == 200, response.text
        assert "hangar_session" in response.cookies
        body = response.json()
        assert body["user"] == {"id": created["user_id"], "email": "fresh@example.org"}
        [joined] = body["memberships"]
        assert (joined["org_id"], joined["role_name"]) == (str(org.id), "mechanic")
        assert (await person.get("/api/session")).status_code == 200
        # The session acts in the organization at once.
        assert (await person.post(f"/api/orgs/{org.id}/squawks", json={})).status_code == 422
        assert (await person.post(f"/api/orgs/{other.id}/squawks", json={})).status_code == 404
    status, joined_at = await status_of(org, created["user_id"])
    assert (status, joined_at) == ("active", clock.now())
    async with browser(services) as later:
        assert (await sign_in(later, "fresh@example.org", "my own secret")).status_code == 200


async def test_the_password_must_be_at_least_8_characters(
    admin: httpx.AsyncClient, client: httpx.AsyncClient, org: Org
) -> None:
    token = token_of(await invite(admin, org, "short-pw@example.org"))
    response = await client.post(f"/api/invitations/{token}/password", json={"password": "1234567"})
    assert response.status_code == 422
    assert response.json()["errors"][0]["loc"] == ["body", "password"]
    assert (await client.get(f"/api/invitations/{token}")).status_code == 200  # still usable


async def test_a_link_never_sets_the_password_of_an_account_that_has_one(
    admin: httpx.AsyncClient, services: Services, org: Org, other: Org
) -> None:
    _, created = await invite_account(admin, org, other, "owner@example.org")

    async with browser(services) as holder:
        refused = await set_password(holder, token_of(created), "the admin's choice")

        assert refused.status_code == 409
        assert refused.json() == ACCOUNT_EXISTS
        assert "hangar_session" not in refused.cookies
        assert (await sign_in(holder, "owner@example.org", "the admin's choice")).status_code == 401
        assert (await sign_in(holder, "owner@example.org", PASSWORD)).status_code == 200
    assert await status_of(org, created["user_id"]) == ("pending", None)


async def test_an_existing_account_accepts_signed_in_with_the_link(
    admin: httpx.AsyncClient,
    client: httpx.AsyncClient,
    services: Services,
    org: Org,
    other: Org,
    clock: FakeClock,
) -> None:
    joiner, created = await invite_account(
        admin, org, other, "joiner@example.org", role="instructor"
    )
    assert created["user_id"] != str(joiner)
    async with browser(services) as person:
        before = (await sign_in(person, "joiner@example.org", PASSWORD)).json()
        assert org_ids(before) == {str(other.id)}  # pending: not listed, no access
        assert (await person.post(f"/api/orgs/{org.id}/squawks", json={})).status_code == 404
        clock.advance(minutes=5)

        accepted = await person.post(f"/api/invitations/{token_of(created)}/accept")

        assert accepted.status_code == 200, accepted.text
        assert org_ids(accepted.json()) == {str(org.id), str(other.id)}
        assert (await person.post(f"/api/orgs/{org.id}/squawks", json={})).status_code == 422
    # The membership is now the account's; the invitation's placeholder is gone.
    assert await status_of(org, str(joiner)) == ("active", clock.now())
    assert await held(org, created) == Held(joiner, "active", "joiner@example.org", True)
    assert await user_row(org.engine, created["user_id"]) is None
    [listed] = [
        m for m in await public(client, org, "members") if m["email"] == "joiner@example.org"
    ]
    assert (listed["user_id"], listed["status"]) == (str(joiner), "active")


async def test_accepting_needs_the_csrf_header(
    admin: httpx.AsyncClient, services: Services, org: Org, other: Org
) -> None:
    _, created = await invite_account(admin, org, other, "csrf-joiner@example.org")
    async with browser(services) as person:
        await sign_in(person, "csrf-joiner@example.org", PASSWORD)
        del person.headers["X-CSRF-Token"]

        refused = await person.post(f"/api/invitations/{token_of(created)}/accept")
        wrong = await person.post(
            f"/api/invitations/{token_of(created)}/accept", headers={"X-CSRF-Token": "nope"}
        )

    for response in (refused, wrong):
        assert response.status_code == 403
        assert response.json()["code"] == "CSRF_FAILED"
    assert await status_of(org, created["user_id"]) == ("pending", None)


async def test_accepting_without_a_session_is_401(
    admin: httpx.AsyncClient, client: httpx.AsyncClient, org: Org
) -> None:
    created = await invite(admin, org, "anon@example.org")
    response = await client.post(f"/api/invitations/{token_of(created)}/accept")
    assert response.status_code == 401
    assert await status_of(org, created["user_id"]) == ("pending", None)


async def test_someone_else_signed_in_cannot_accept_anothers_link(
    admin: httpx.AsyncClient, member: httpx.AsyncClient, org: Org, other: Org
) -> None:
    _, created = await invite_account(admin, org, other, "intended@example.org")

    response = await member.post(f"/api/invitations/{token_of(created)}/accept")

    assert response.status_code == 404
    assert response.json() == NOT_VALID
    assert await status_of(org, created["user_id"]) == ("pending", None)


async def test_a_link_works_once(
    admin: httpx.AsyncClient, services: Services, org: Org, other: Org
) -> None:
    _, created = await invite_account(admin, org, other, "once@example.org")
    token = token_of(created)
    async with browser(services) as person:
        await sign_in(person, "once@example.org", PASSWORD)
        assert (await person.post(f"/api/invitations/{token}/accept")).status_code == 200

        again = await person.post(f"/api/invitations/{token}/accept")
        shown = await person.get(f"/api/invitations/{token}")

    assert again.status_code == shown.status_code == 404
    assert again.json() == shown.json() == NOT_VALID


async def test_a_link_whose_placeholder_became_the_account_meanwhile_is_used_not_a_conflict(
    admin: httpx.AsyncClient, services: Services, org: Org
) -> None:
    # What the loser of two uses at once can read on SQLite, whose statements each read the
    # latest commit: the link still open, and its placeholder already the email's account.
    created = await invite(admin, org, "meanwhile@example.org")
    async with services.engine.begin() as conn:
        placeholder = uuid.UUID(created["user_id"])
        assert await users.claim_placeholder(conn, placeholder, "meanwhile@example.org", "x")
    async with browser(services) as person:
        answer = await set_password(person, token_of(created), "a password of mine")
    assert answer.status_code == 404
    assert answer.json() == NOT_VALID


async def test_a_new_accounts_link_cannot_be_used_twice_even_at_once(
    admin: httpx.AsyncClient, services: Services, org: Org
) -> None:
    token = token_of(await invite(admin, org, "race@example.org"))
    async with browser(services) as one, browser(services) as two:
        first, second = await asyncio.gather(
            set_password(one, token, "first password"), set_password(two, token, "second password")
        )
        assert sorted([first.status_code, second.status_code]) == [200, 404]
        winner = "first password" if first.status_code == 200 else "second password"
        loser = "second password" if winner == "first password" else "first password"
        async with browser(services) as later:
            assert (await sign_in(later, "race@example.org", loser)).status_code == 401
            assert (await sign_in(later, "race@example.org", winner)).status_code == 200


async def test_a_link_expires_after_seven_days(
    admin: httpx.AsyncClient, services: Services, org: Org, clock: FakeClock
) -> None:
    assert LIFETIME.days == 7
    early = token_of(await invite(admin, org, "slow@example.org"))
    late = token_of(await invite(admin, org, "slower@example.org"))
    clock.advance(days=7, seconds=-1)
    async with browser(services) as person:
        assert (await set_password(person, early, "just in time")).status_code == 200

    clock.advance(seconds=1)

    async with browser(services) as person:
        for response in (
            await person.get(f"/api/invitations/{late}"),
            await set_password(person, late, "too late now"),
        ):
            assert response.status_code == 404
            assert response.json() == NOT_VALID


async def test_an_expired_link_cannot_be_accepted_signed_in(
    admin: httpx.AsyncClient, services: Services, org: Org, other: Org, clock: FakeClock
) -> None:
    _, created = await invite_account(admin, org, other, "expired-joiner@example.org")
    clock.advance(days=7)
    async with browser(services) as person:
        await sign_in(person, "expired-joiner@example.org", PASSWORD)
        response = await person.post(f"/api/invitations/{token_of(created)}/accept")
    assert response.status_code == 404
    assert await status_of(org, created["user_id"]) == ("pending", None)


async def test_an_accepted_invitation_records_when(
    admin: httpx.AsyncClient, services: Services, org: Org, clock: FakeClock
) -> None:
    created = await invite(admin, org, "recorded@example.org")
    clock.advance(days=2)
    async with browser(services) as person:
        assert (await set_password(person, token_of(created), "recorded pw")).status_code == 200
    async with org.engine.connect() as conn:
        row = (
            await conn.execute(
                select(Invitation.accepted_at, Invitation.expires_at)
                .join(Membership, Membership.id == Invitation.membership_id)
                .where(Membership.user_id == uuid.UUID(created["user_id"]))
            )
        ).one()
    assert row.accepted_at == clock.now()
    assert row.expires_at == clock.now() - timedelta(days=2) + LIFETIME


async def test_an_invitations_placeholder_never_signs_in(
    admin: httpx.AsyncClient, services: Services, org: Org
) -> None:
    created = await invite(admin, org, "placeholder@example.org")

    assert await user_row(org.engine, created["user_id"]) == UserRow(None, False)
    assert await account_id(org.engine, "placeholder@example.org") is None
    async with browser(services) as person:
        for email in ("placeholder@example.org", "PLACEHOLDER@example.org"):
            refused = await sign_in(person, email, "any password at all")
            assert refused.status_code == 401
            assert refused.json()["code"] == "INVALID_CREDENTIALS"


async def test_an_account_made_through_one_orgs_link_accepts_anothers_signed_in(
    services: Services, org: Org, other: Org, two_links: TwoLinks
) -> None:
    in_a, in_b = two_links.a, two_links.b
    async with browser(services) as person:
        assert (await set_password(person, token_of(in_a), "chosen via A")).status_code == 200

        # B's link makes no second account, nor a new password: the account is its holder's.
        refused = await set_password(person, token_of(in_b), "chosen via B")
        assert refused.status_code == 409
        assert refused.json() == ACCOUNT_EXISTS

        accepted = await person.post(f"/api/invitations/{token_of(in_b)}/accept")

        assert accepted.status_code == 200, accepted.text
        assert org_ids(accepted.json()) == {str(org.id), str(other.id)}
    # A's placeholder became the account; B's membership moved to it and its placeholder went.
    account = uuid.UUID(in_a["user_id"])
    assert await account_id(org.engine, two_links.email) == account
    assert (await held(org, in_a)).user_id == (await held(other, in_b)).user_id == account
    assert await user_row(org.engine, in_b["user_id"]) is None
    async with browser(services) as later:
        email = two_links.email
        assert (await sign_in(later, email, "chosen via B")).status_code == 401
        assert (await sign_in(later, email, "chosen via A")).status_code == 200


async def test_two_orgs_links_for_one_new_email_used_at_once_make_one_account(
    services: Services, org: Org, other: Org, two_links: TwoLinks
) -> None:
    links = {"via A": token_of(two_links.a), "via B": token_of(two_links.b)}
    async with browser(services) as one, browser(services) as two:
        first, second = await asyncio.gather(
            set_password(one, links["via A"], "password via A"),
            set_password(two, links["via B"], "password via B"),
        )
    answers = {"via A": first, "via B": second}
    [winner] = [k for k, r in answers.items() if r.status_code == 200]
    [loser] = [k for k, r in answers.items() if r.status_code != 200]
    # Whether the loser checked before or after the winner committed: the same refusal.
    refused = answers[loser]
    assert refused.json() == ACCOUNT_EXISTS, refused.text
    async with browser(services) as person:
        email = two_links.email
        assert (await sign_in(person, email, f"password {loser}")).status_code == 401
        assert (await sign_in(person, email, f"password {winner}")).is_success
        accepted = await person.post(f"/api/invitations/{links[loser]}/accept")
        assert accepted.status_code == 200, accepted.text
        assert org_ids(accepted.json()) == {str(org.id), str(other.id)}


async def test_a_link_that_loses_its_new_email_to_another_orgs_is_409_and_changes_nothing(
    services: Services, other: Org, two_links: TwoLinks, monkeypatch: pytest.MonkeyPatch
) -> None:
    in_a, in_b = two_links.a, two_links.b
    async with browser(services) as person:
        assert (await set_password(person, token_of(in_a), "the winner's")).status_code == 200

    # The interleaving of a race: B's link looked for the email's account before A's link
    # committed it, so only the unique email stops B's placeholder from becoming a second one.
    async def not_yet(conn: object, email: str, *, lock: bool = False) -> None:
        return None

    monkeypatch.setattr(users, "account_with", not_yet)
    async with browser(services) as late:
        clash = await late.post(
            f"/api/invitations/{token_of(in_b)}/password", json={"password": "the loser's"}
        )
    monkeypatch.undo()

    assert clash.status_code == 409, clash.text
    assert clash.json() == ACCOUNT_EXISTS
    assert "hangar_session" not in clash.cookies
    placeholder = uuid.UUID(in_b["user_id"])
    assert await held(other, in_b) == Held(placeholder, "pending", two_links.email, False)
    assert await user_row(other.engine, placeholder) == UserRow(None, False)
    async with browser(services) as person:
        assert (await sign_in(person, two_links.email, "the loser's")).status_code == 401
        assert (await sign_in(person, two_links.email, "the winner's")).is_success
        accepted = await person.post(f"/api/invitations/{token_of(in_b)}/accept")
        assert accepted.status_code == 200, accepted.text
    assert (await held(other, in_b)).user_id == uuid.UUID(in_a["user_id"])


async def test_accepting_as_a_member_already_is_409_and_changes_nothing(
    admin: httpx.AsyncClient, services: Services, org: Org, other: Org
) -> None:
    dana, created = await invite_account(admin, org, other, "dana@example.org", role="admin")
    # Made meanwhile, as only a race (or the operator's own hands in the database) could.
    await org.membership_row(dana, "dana@example.org", "member")

    async with browser(services) as person:
        await sign_in(person, "dana@example.org", PASSWORD)
        refused = await person.post(f"/api/invitations/{token_of(created)}/accept")

    assert refused.status_code == 409
    assert refused.json() == {
        "detail": "dana@example.org is already a member",
        "code": "ALREADY_MEMBER",
    }
    placeholder = uuid.UUID(created["user_id"])
    assert await held(org, created) == Held(placeholder, "pending", "dana@example.org", False)
    assert await user_row(org.engine, placeholder) == UserRow(None, False)


async def test_an_invitation_made_on_the_account_itself_is_accepted_in_place(
    services: Services, client: httpx.AsyncClient, org: Org, other: Org, clock: FakeClock
) -> None:
    # As invitations were before they named emails: the pending membership is the account's.
    erin = await other.member("member", email="erin@example.org", password=PASSWORD)
    token = await org.legacy_invitation(erin, "erin@example.org", clock.now())
    assert (await client.get(f"/api/invitations/{token}")).status_code == 200

    async with browser(services) as person:
        await sign_in(person, "erin@example.org", PASSWORD)
        accepted = await person.post(f"/api/invitations/{token}/accept")

    assert accepted.status_code == 200, accepted.text
    assert await status_of(org, str(erin)) == ("active", clock.now())
    assert await user_row(org.engine, erin) == UserRow("erin@example.org", True)


async def test_an_account_whose_memberships_are_gone_never_takes_a_password_through_a_link(
    admin: httpx.AsyncClient, services: Services, org: Org, other: Org
) -> None:
    # An account the operator made for frank@ (no password: he never signed in) whose one
    # membership, in the other organization, was removed long ago. This organization's admin
    # invites the address and opens the link themselves.
    frank = await other.member("member", email="frank@example.org")
    async with org.engine.begin() as conn:
        await conn.execute(
            update(Membership).where(Membership.user_id == frank).values(deleted_at=T0)
        )
    created = await invite(admin, org, "frank@example.org", role="mechanic")
    assert created["user_id"] != str(frank)

    async with browser(services) as holder:
        refused = await set_password(holder, token_of(created), "the admin's choice")

        assert refused.status_code == 409
        assert refused.json() == ACCOUNT_EXISTS
        assert "hangar_session" not in refused.cookies
        # Nothing of the old account reaches the link's holder: not its id, not a session.
        assert str(frank) not in refused.text
        assert (await holder.get("/api/session")).status_code == 401
    assert await user_row(org.engine, frank) == UserRow("frank@example.org", False)
    assert (await held(org, created)).status == "pending"

    # Frank himself gets the operator's recovery link, then accepts signed in.
    async with org.engine.begin() as conn:
        reset = await password_reset.issue_reset(conn, "frank@example.org", services.clock.now())
    await password_reset.choose_new_password(services, reset.token, "frank's own")
    async with browser(services) as person:
        assert (await sign_in(person, "frank@example.org", "frank's own")).status_code == 200
        accepted = await person.post(f"/api/invitations/{token_of(created)}/accept")
        assert accepted.status_code == 200, accepted.text
        assert org_ids(accepted.json()) == {str(org.id)}
    assert (await held(org, created)).user_id == frank


async def test_a_link_never_hands_over_an_account_that_belongs_to_another_organization(
    admin: httpx.AsyncClient, client: httpx.AsyncClient, services: Services, org: Org, other: Org
) -> None:
    # The other organization's member has no password yet (an account made before
    # invitations named emails). Whoever holds this organization's link must not choose
    # it: that would give them the account's place in the other organization.
    email = f"gina-{uuid.uuid4().hex[:8]}@example.org"  # accounts are global: one per test
    gina = await other.member("admin", email=email)
    created = await invite(admin, org, email, role="mechanic")
    token = token_of(created)

    async with browser(services) as holder:
        refused = await set_password(holder, token, "the admin's choice")
    assert refused.status_code == 409
    assert refused.json() == ACCOUNT_EXISTS
    assert str(gina) not in refused.text
    assert await user_row(org.engine, gina) == UserRow(email, False)
    assert (await held(org, created)).status == "pending"
