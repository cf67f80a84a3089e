"""`hangar backup` while hangar writes and delivers, restored elsewhere with `hangar restore`:
every row and event committed before the backup started is there, the copy is one snapshot
(each product action whole, with its event and its delivery, or not at all), and the webhook
secrets open with the same key: the dispatcher delivers what was pending, signed as before."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import orjson
from gidgethub.sansio import validate_event
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from hangar.db.engine import make_engine
from hangar.fleet.models import Aircraft
from hangar.foundation.config import Settings
from hangar.kit.container import Services
from hangar.squawks.models import Squawk
from hangar.webhooks.delivery.dispatcher import Dispatcher
from hangar.webhooks.delivery.states import LEASE
from hangar.webhooks.events.catalogue import SQUAWK_CREATED
from hangar.webhooks.models import Attempt, Delivery, Event, Subscription
from tests.fixtures.actions import url
from tests.fixtures.environment import SECRET
from tests.fixtures.key_rotation import hangar_with
from tests.fixtures.subprocesses import eventually
from tests.fixtures.webhooks import SECRET as WEBHOOK_SECRET
from tests.fixtures.webhooks import Hooks

BOUND_S = 60.0


@asynccontextmanager
async def squawks_reported(
    member: httpx.AsyncClient, hooks: Hooks, committed: list[str]
) -> AsyncIterator[None]:
    """Squawks reported one after another through the session API until the block ends, each
    id added to `committed` once its answer (so its commit) is in; the dispatcher is kicked
    after each, so deliveries run all along."""
    plane = str((await hooks.org.add(Aircraft))["id"])
    dispatcher = hooks.dispatcher()
    stop = asyncio.Event()
    delivering = asyncio.create_task(dispatcher.run(stop))

    async def report() -> None:
        n = 0
        while not stop.is_set():
            n += 1
            body = {"aircraft_id": plane, "description": f"squawk {n}", "severity": "minor"}
            answer = await member.post(url(hooks.org, "squawks"), json=body)
            assert answer.status_code == 201, answer.text
            committed.append(answer.json()["id"])
            dispatcher.kick()

    reporting = asyncio.create_task(report())
    try:
        yield
    finally:
        stop.set()
        dispatcher.kick()
        await asyncio.wait_for(asyncio.gather(reporting, delivering), BOUND_S)


async def succeeded(engine: AsyncEngine, sub_id: uuid.UUID) -> set[uuid.UUID]:
    async with engine.connect() as conn:
        found = await conn.scalars(
            select(Delivery.id).where(
                Delivery.subscription_id == sub_id, Delivery.status == "succeeded"
            )
        )
        return set(found)


async def test_a_backup_under_writes_and_deliveries_restores_every_committed_row(
    hooks: Hooks, member: httpx.AsyncClient, restored_url: str, tmp_path: Path
) -> None:
    services, org = hooks.services, hooks.org
    sub_id = await hooks.subscribe()
    committed: list[str] = []
    backup = tmp_path / "hangar.tar"
    source = hangar_with(services.engine, services.settings.database_url, tmp_path, SECRET)

    async with squawks_reported(member, hooks, committed):
        await eventually(lambda: len(committed) >= 5, BOUND_S, "squawks reported")
        # Received is not yet recorded: wait for an outcome's commit.
        await eventually(lambda: succeeded(services.engine, sub_id), BOUND_S, "a delivery")
        # What is committed now is committed before the backup starts.
        before = list(committed)
        delivered_before = await succeeded(services.engine, sub_id)
        made = (await source.run("backup", str(backup))).json()
        during = len(committed) - len(before)
    assert during > 0  # the backup ran while squawks were being reported
    assert delivered_before
    assert made["database_kind"] == ("sqlite" if services.settings.is_sqlite else "postgresql")
    assert backup.stat().st_mode & 0o777 == 0o600

    engine = make_engine(restored_url)
    try:
        target = hangar_with(engine, restored_url, tmp_path, SECRET)
        restored = (await target.run("restore", str(backup))).json()
        assert restored["webhook_secrets"] == "readable"
        assert restored["migrate"] is False

        async with engine.connect() as conn:
            squawks = set(
                map(str, await conn.scalars(select(Squawk.id).where(Squawk.org_id == org.id)))
            )
            events = (
                await conn.execute(
                    select(Event.id, Event.data).where(
                        Event.org_id == org.id, Event.name == SQUAWK_CREATED
                    )
                )
            ).all()
            delivered_events = set(
                await conn.scalars(
                    select(Delivery.event_id).where(
                        Delivery.subscription_id == sub_id, Delivery.event_name == SQUAWK_CREATED
                    )
                )
            )
            attempts = set(
                await conn.scalars(
                    select(Attempt.delivery_id).where(Attempt.delivery_id.in_(delivered_before))
                )
            )
        # Every squawk committed before the backup started, and nothing half-written: each
        # squawk with its event, each event with its delivery, no event without its squawk.
        assert set(before) <= squawks
        assert {orjson.loads(e.data)["id"] for e in events} == squawks
        assert {e.id for e in events} == delivered_events
        assert delivered_before <= await succeeded(engine, sub_id)
        assert attempts == delivered_before
        assert squawks <= set(committed)  # the organization is this test's own

        # The restored database's secrets open with the same key, along the delivery path:
        # what was pending at the snapshot is delivered, signed with the subscription's secret.
        hooks.receiver.requests.clear()
        await deliver_pending(services, engine, restored_url, hooks, sub_id)
        assert hooks.receiver.requests
        for got in hooks.receiver.requests:
            validate_event(
                got.body, signature=got.headers["X-Service-Signature"], secret=WEBHOOK_SECRET
            )
    finally:
        await engine.dispose()


async def deliver_pending(
    services: Services, engine: AsyncEngine, database_url: str, hooks: Hooks, sub_id: uuid.UUID
) -> None:
    """Delivers what the restored database holds pending for `sub_id`, as a process started
    on it with the same HANGAR_SECRET_KEY does (a pending delivery is added if the snapshot
    held none)."""
    restored = Services(
        settings=Settings(database_url=database_url, secret_key=SECRET),
        engine=engine,
        clock=hooks.clock,
        limiter=services.limiter,
        redis=services.redis,
        resolver=services.resolver,
    )
    async with engine.connect() as conn:
        sealed = await conn.scalar(
            select(Subscription.secret_encrypted).where(Subscription.id == sub_id)
        )
    assert sealed is not None
    assert restored.secret_box.open(sealed) == WEBHOOK_SECRET
    if not await pending(engine, sub_id):
        await Hooks(restored, hooks.org, hooks.receiver, hooks.sender, hooks.clock).fire()
    # A delivery the snapshot caught mid-attempt is leased to the dispatcher that made it: as
    # after a crash, it is attempted again once its lease has run out.
    hooks.clock.advance(seconds=LEASE.total_seconds())
    dispatcher = Dispatcher(engine, hooks.clock, hooks.sender, restored.secret_box)
    while await pending(engine, sub_id):
        assert await dispatcher.run_once() > 0


async def pending(engine: AsyncEngine, sub_id: uuid.UUID) -> int:
    async with engine.connect() as conn:
        found = await conn.scalars(
            select(Delivery.id).where(
                Delivery.subscription_id == sub_id, Delivery.status == "pending"
            )
        )
        return len(list(found))
