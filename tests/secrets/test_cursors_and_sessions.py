"""Cursors and sessions across a rotation: a cursor handed out before it pages on after it
(until its key is dropped, then it is a 400, never a 500), and a session from before it stays
signed in (sessions are random tokens looked up by hash: the key never signed them)."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

import httpx

from hangar.auth import sessions
from hangar.kit.container import Services
from hangar.reservations.models import Reservation
from tests.fixtures.environment import PASSWORD
from tests.fixtures.factories import T0, Org
from tests.fixtures.key_rotation import NEW_KEY, OLD_KEY, client_of, holding

URL = "/api/v1/external/reservations"


async def reservations(org: Org) -> list[str]:
    """Three reservations of `org`, in the order the API lists them (latest first)."""
    made = [await org.add(Reservation, start_time=T0 + timedelta(hours=h)) for h in range(3)]
    return [str(r["id"]) for r in reversed(made)]


async def page(client: httpx.AsyncClient, org: Org, after: str | None = None) -> Any:
    params = {"limit": "1"} | ({"after": after} if after else {})
    return await client.get(URL, params=params, headers=org.auth)


async def test_a_cursor_from_before_the_rotation_pages_on_until_its_key_is_dropped(
    services: Services, org: Org, other: Org
) -> None:
    ids = await reservations(org)
    await reservations(other)
    async with client_of(holding(services, OLD_KEY)) as before:
        first = (await page(before, org)).json()
    assert [i["id"] for i in first["items"]] == ids[:1]
    old_cursor = first["next_cursor"]

    async with client_of(holding(services, NEW_KEY, OLD_KEY)) as rotated:
        second = await page(rotated, org, old_cursor)
        assert second.status_code == 200, second.text
        assert [i["id"] for i in second.json()["items"]] == ids[1:2]
        new_cursor = second.json()["next_cursor"]

    # Once the old key is dropped: what the rotated process handed out was signed with the
    # new key and pages on; the cursor from before the rotation is refused as any bad cursor.
    async with client_of(holding(services, NEW_KEY)) as dropped:
        third = await page(dropped, org, new_cursor)
        assert third.status_code == 200, third.text
        assert [i["id"] for i in third.json()["items"]] == ids[2:]
        refused = await page(dropped, org, old_cursor)
    assert refused.status_code == 400
    assert refused.json()["code"] == "INVALID_CURSOR"


async def test_a_cursor_signed_with_the_new_key_is_refused_where_it_is_unknown(
    services: Services, org: Org
) -> None:
    # The rotated process signs with its current key, not with a previous one: a process that
    # knows only the old key cannot verify it (why docs/operators/rotate.md rolls the new key
    # in first).
    await reservations(org)
    async with client_of(holding(services, NEW_KEY, OLD_KEY)) as rotated:
        handed_out = (await page(rotated, org)).json()["next_cursor"]
    async with client_of(holding(services, OLD_KEY)) as old_only:
        assert (await page(old_only, org, handed_out)).status_code == 400
    async with client_of(holding(services, OLD_KEY, NEW_KEY)) as accepting_new:
        assert (await page(accepting_new, org, handed_out)).status_code == 200


async def test_a_session_from_before_the_rotation_stays_signed_in(
    services: Services, org: Org
) -> None:
    email = f"pilot-{uuid.uuid4().hex[:12]}@example.org"
    await org.member("admin", email=email, password=PASSWORD)
    async with client_of(holding(services, OLD_KEY)) as before:
        signed_in = await before.post("/api/session", json={"email": email, "password": PASSWORD})
        assert signed_in.status_code == 200, signed_in.text
        token = signed_in.cookies[sessions.COOKIE]
    cookies = {sessions.COOKIE: token}
    for keys in ((NEW_KEY, OLD_KEY), (NEW_KEY,)):
        async with client_of(holding(services, *keys), cookies=cookies) as after:
            me = await after.get("/api/session")
        assert me.status_code == 200, me.text
        assert me.json()["user"]["email"] == email
