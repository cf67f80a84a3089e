"""Events are recorded in the transaction of the change: both commit, or neither does."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from hangar.auth.sessions import SignedIn
from hangar.fleet import service as fleet
from hangar.fleet.models import Aircraft
from hangar.foundation.ids import new_id
from hangar.orgs.actors import Actor
from hangar.orgs.capabilities import capabilities_of
from hangar.webhooks.events import outbox
from tests.fixtures.actions import deliveries, names, public, public_one, subscribe, url
from tests.fixtures.factories import Org
from tests.fixtures.fakes import FakeClock

SLOT = {
    "activity_type": "solo",
    "start_time": "2026-05-06T09:00:00Z",
    "end_time": "2026-05-06T11:00:00Z",
}


def admin_actor(org: Org) -> Actor:
    session = SignedIn(session_id=new_id(), user_id=org.admin_id, email="a@x.org", csrf_token="")
    return Actor(
        user_id=org.admin_id,
        org_id=org.id,
        role_name="admin",
        capabilities=frozenset(capabilities_of("admin")),
        session=session,
    )


async def test_each_matching_enabled_subscription_gets_one_delivery_per_event(
    admin: httpx.AsyncClient, engine: AsyncEngine, org: Org, other: Org
) -> None:
    everything = await subscribe(org, ["*"])
    some = await subscribe(org, ["reservation.created", "squawk.created"])
    disabled = await subscribe(org, ["*"], enabled=False)
    unrelated = await subscribe(org, ["mel.created"])
    elsewhere = await subscribe(other, ["*"])

    assert (await admin.post(url(org, "reservations"), json=SLOT)).status_code == 201

    assert await deliveries(engine, everything) == ["reservation.confirmed", "reservation.created"]
    assert await deliveries(engine, some) == ["reservation.created"]
    for none in (disabled, unrelated, elsewhere):
        assert await deliveries(engine, none) == []


async def test_a_failure_while_recording_rolls_the_change_back(
    admin: httpx.AsyncClient, client: httpx.AsyncClient, engine: AsyncEngine, org: Org
) -> None:
    sub = await subscribe(org, ["*"])

    async def broken(*_: Any) -> None:
        raise RuntimeError("the outbox is down")

    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(outbox, "record", broken)
        failed = await admin.post(url(org, "reservations"), json=SLOT)
    assert failed.status_code == 500
    assert (await public(client, org, "reservations"))["items"] == []
    assert await names(engine, org.id) == []

    created = await admin.post(url(org, "reservations"), json=SLOT)
    assert created.status_code == 201
    assert await public_one(client, org, "reservations", created.json()["id"]) is not None
    assert await names(engine, org.id) == ["reservation.confirmed", "reservation.created"]
    assert len(await deliveries(engine, sub)) == 2


async def test_a_transaction_that_fails_after_the_command_keeps_neither(
    client: httpx.AsyncClient, engine: AsyncEngine, org: Org, clock: FakeClock
) -> None:
    plane = (await org.add(Aircraft))["id"]
    sub = await subscribe(org, ["aircraft.grounded"])

    async def deactivate_then_fail() -> None:
        async with engine.begin() as conn:
            await fleet.deactivate(conn, admin_actor(org), plane, clock.now())
            raise RuntimeError("something later in the same transaction fails")

    with pytest.raises(RuntimeError):
        await deactivate_then_fail()

    assert (await public_one(client, org, "aircraft", str(plane)))["is_active"] is True
    assert await names(engine, org.id) == []
    assert await deliveries(engine, sub) == []

    async with engine.begin() as conn:
        await fleet.deactivate(conn, admin_actor(org), plane, clock.now())

    assert (await public_one(client, org, "aircraft", str(plane)))["is_active"] is False
    assert await names(engine, org.id) == ["aircraft.grounded"]
    assert await deliveries(engine, sub) == ["aircraft.grounded"]
