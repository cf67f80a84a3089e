"""GET /api/orgs/{org_id}/audit-log: newest first, a page at a time (`after` takes the last
page's `next_cursor`), filtered by action, actor and since; a bad filter is 422 naming it,
a cursor of other filters or another organization 400; Org Settings only; another
organization's entries never show."""

from __future__ import annotations

import uuid
from datetime import timedelta

import httpx
import pytest

from hangar.audit import service as audit
from hangar.audit.service import OPERATOR, SYSTEM, Who
from hangar.kit.container import Services
from tests.fixtures.audit import entries, log_url
from tests.fixtures.factories import Org
from tests.fixtures.fakes import FakeClock

ALICE = Who.person(uuid.UUID(int=1), "alice@example.org", "203.0.113.1")
BOB = Who.person(uuid.UUID(int=2), "bob@example.org", "203.0.113.2")


@pytest.fixture
async def logged(services: Services, org: Org, other: Org, clock: FakeClock) -> list[str]:
    """Twelve entries of `org`, a minute apart, by Alice, Bob, the operator and hangar; and
    three of the other organization's. Returns `org`'s ids, newest first."""
    made: list[uuid.UUID] = []
    who = [ALICE, BOB, OPERATOR, SYSTEM]
    actions: tuple[audit.Action, ...] = ("key.created", "webhook.updated", "member.invited")
    async with services.engine.begin() as conn:
        for n in range(12):
            at = clock.now() + timedelta(minutes=n)
            target = uuid.UUID(int=100 + n)
            entry = await audit.record(
                conn, org.id, who[n % 4], actions[n % 3], ("api_key", target), at
            )
            made.append(entry)
        for n in range(3):
            at = clock.now() + timedelta(minutes=n)
            await audit.record(conn, other.id, ALICE, "key.created", ("api_key", "x"), at)
    return [str(i) for i in reversed(made)]


async def test_pages_newest_first_follow_the_cursor_to_the_end(
    admin: httpx.AsyncClient, org: Org, logged: list[str]
) -> None:
    first = (await admin.get(log_url(org.id), params={"limit": 5})).json()
    assert set(first) == {"items", "next_cursor"}
    assert [e["id"] for e in first["items"]] == logged[:5]
    assert set(first["items"][0]) == {
        "id",
        "at",
        "actor",
        "client_address",
        "action",
        "target",
        "details",
    }
    walked = await entries(admin, org.id, limit=5)
    assert [e["id"] for e in walked] == logged  # every one once, none of the other org's
    last = (await admin.get(log_url(org.id), params={"limit": 12})).json()
    assert last["next_cursor"] is None


async def test_filters_by_action_actor_and_since(
    admin: httpx.AsyncClient, org: Org, logged: list[str], clock: FakeClock
) -> None:
    updated = await entries(admin, org.id, action="webhook.updated", limit=2)
    assert len(updated) == 4
    assert {e["action"] for e in updated} == {"webhook.updated"}
    by_alice = await entries(admin, org.id, actor="ALICE@example.org")
    assert len(by_alice) == 3
    assert {e["actor"]["email"] for e in by_alice} == {"alice@example.org"}
    assert {e["client_address"] for e in by_alice} == {"203.0.113.1"}
    assert await entries(admin, org.id, actor=str(BOB.user_id)) == await entries(
        admin, org.id, actor="bob@example.org"
    )
    operator = await entries(admin, org.id, actor="operator")
    system = await entries(admin, org.id, actor="system")
    assert len(operator) == len(system) == 3
    assert {e["actor"] for e in operator + system} == {None}
    since = (clock.now() + timedelta(minutes=9)).isoformat()
    assert [e["id"] for e in await entries(admin, org.id, since=since)] == logged[:3]
    day = clock.now().date().isoformat()
    assert len(await entries(admin, org.id, since=day)) == 12
    # Alice's are the 1st, 5th and 9th: only the first is a key created.
    both = await entries(admin, org.id, action="key.created", actor="alice@example.org")
    assert [e["id"] for e in both] == logged[-1:]


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"action": "key.exploded"}, "action"),
        ({"actor": "not-an-id"}, "actor"),
        ({"since": "yesterday"}, "since"),
        ({"since": "2026-05-01T09:00:00"}, "since"),  # no offset
        ({"since": "2026-13-01"}, "since"),
        ({"limit": "0"}, "limit"),
        ({"limit": "201"}, "limit"),
        ({"limit": "1e2"}, "limit"),
    ],
)
async def test_a_bad_filter_is_422_naming_it(
    admin: httpx.AsyncClient, org: Org, params: dict[str, str], field: str
) -> None:
    refused = await admin.get(log_url(org.id), params=params)
    assert refused.status_code == 422, refused.text
    body = refused.json()
    assert body["code"] == "VALIDATION_ERROR"
    assert body["detail"]
    assert field in refused.text


async def test_a_cursor_of_other_filters_or_another_org_is_refused(
    admin: httpx.AsyncClient,
    outsider: httpx.AsyncClient,
    org: Org,
    other: Org,
    logged: list[str],
) -> None:
    cursor = (await admin.get(log_url(org.id), params={"limit": 2})).json()["next_cursor"]
    assert cursor
    for params in (
        {"after": cursor, "action": "key.created"},
        {"after": cursor + "x"},
        {"after": "garbage"},
    ):
        refused = await admin.get(log_url(org.id), params=params)
        assert (refused.status_code, refused.json()["code"]) == (400, "INVALID_CURSOR")
    theirs = await outsider.get(log_url(other.id), params={"after": cursor})
    assert (theirs.status_code, theirs.json()["code"]) == (400, "INVALID_CURSOR")


async def test_only_org_settings_reads_it(
    member: httpx.AsyncClient, outsider: httpx.AsyncClient, org: Org, logged: list[str]
) -> None:
    assert (await member.get(log_url(org.id))).status_code == 403
    assert (await outsider.get(log_url(org.id))).status_code == 404
    async with httpx.AsyncClient(
        transport=member._transport, base_url="https://hangar.example"
    ) as anonymous:
        assert (await anonymous.get(log_url(org.id))).status_code == 401
