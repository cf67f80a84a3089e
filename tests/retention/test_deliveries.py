"""Retention of deliveries and events: exactly the finished deliveries older than the window
go, with their attempts and redeliveries; pending ones stay however old (a redelivered one
is pending again); events go once old and no delivery refers to them. Both organizations'
rows alike. Small batches, so every rule holds across batch boundaries too."""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass
from datetime import timedelta

import pytest
from sqlalchemy import text

from hangar.kit.container import Services
from hangar.webhooks.delivery import pruning as batches
from hangar.webhooks.models import Event
from tests.fixtures.environment import PG_URL
from tests.fixtures.factories import Org
from tests.fixtures.retention import (
    CUTOFF,
    NOW,
    OLD,
    RECENT,
    Made,
    delivery,
    event,
    kept,
    left,
    nothing_of,
    pruned,
    subscription,
    with_days,
)


@dataclass
class Rows:
    gone: list[Made]  # with their events
    stay: list[Made]  # with their events
    shared: Made  # old and gone, but its event stays: a delivery that stays refers to it
    old_event: uuid.UUID  # referred to by no delivery: goes
    recent_event: uuid.UUID  # referred to by no delivery: stays


async def rows_of(services: Services, owner: Org) -> Rows:
    sub, second_sub = await subscription(services, owner), await subscription(services, owner)
    gone = [
        await delivery(services, owner, sub, finished=OLD, attempts=2, redeliveries=1),
        await delivery(services, owner, sub, finished=OLD, status="failed", attempts=3),
        await delivery(services, owner, sub, finished=OLD, status="skipped", attempts=0),
        await delivery(services, owner, sub, finished=CUTOFF - timedelta(seconds=1)),
        await delivery(services, owner, sub, finished=OLD - timedelta(days=400)),
    ]
    stay = [
        await delivery(services, owner, sub, finished=CUTOFF),  # not older than the window
        await delivery(services, owner, sub, finished=RECENT, redeliveries=1),
        # Never finished, made long ago (a dispatcher that was down): pending.
        await delivery(services, owner, sub, finished=None, attempts=0),
        # Finished long ago, then redelivered: pending again, with its history.
        await delivery(services, owner, sub, finished=None, attempts=3, redeliveries=1),
    ]
    # One event delivered to two subscriptions: one delivery old, the other recent.
    both = await event(services.engine, owner, OLD - timedelta(minutes=5))
    shared = await delivery(services, owner, sub, finished=OLD, event_id=both)
    stay.append(await delivery(services, owner, second_sub, finished=RECENT, event_id=both))
    return Rows(
        gone,
        stay,
        shared,
        old_event=await event(services.engine, owner, OLD),
        recent_event=await event(services.engine, owner, RECENT),
    )


async def test_old_finished_deliveries_go_and_everything_else_stays(
    services: Services, org: Org, other: Org
) -> None:
    engine = services.engine
    made = [await rows_of(services, owner) for owner in (org, other)]

    await pruned(services)

    for rows in made:
        for gone in [*rows.gone, rows.shared]:
            assert await kept(engine, gone) == nothing_of(gone)
        for stays in rows.stay:
            assert await kept(engine, stays) == stays.rows
        events_of_stay = {m.event for m in rows.stay}
        assert await left(engine, Event, [m.event for m in rows.gone]) == set()
        assert await left(engine, Event, events_of_stay) == events_of_stay
        assert rows.shared.event in events_of_stay
        assert await left(engine, Event, [rows.old_event, rows.recent_event]) == {rows.recent_event}


async def test_the_window_is_the_setting(services: Services, org: Org) -> None:
    week = with_days(services, 7)
    sub = await subscription(week, org)
    eight_days = await delivery(week, org, sub, finished=NOW - timedelta(days=8))
    six_days = await delivery(week, org, sub, finished=NOW - timedelta(days=6))

    await pruned(week)

    assert await kept(week.engine, eight_days) == nothing_of(eight_days)
    assert await kept(week.engine, six_days) == six_days.rows


async def test_a_delivery_redelivered_after_the_batch_was_read_is_not_deleted(
    services: Services, org: Org
) -> None:
    """On SQLite the batch is read before its write transaction begins; each delete restates
    the condition, so a delivery pending again by then keeps all its rows."""
    sub = await subscription(services, org)
    finished = await delivery(services, org, sub, finished=OLD, attempts=2, redeliveries=1)
    redelivered = await delivery(services, org, sub, finished=None, attempts=2, redeliveries=1)
    ids = [finished.id, redelivered.id]
    async with services.engine.begin() as conn:
        for stmt in (
            batches.attempts_of(ids, CUTOFF),
            batches.redeliveries_of(ids, CUTOFF),
            batches.deliveries_of(ids, CUTOFF),
        ):
            await conn.execute(stmt)
    assert await kept(services.engine, finished) == nothing_of(finished)
    assert await kept(services.engine, redelivered) == redelivered.rows


@pytest.mark.skipif(not PG_URL, reason="row locks: PostgreSQL")
async def test_a_delivery_another_transaction_holds_is_skipped_not_waited_for(
    services: Services, org: Org
) -> None:
    """Redeliver locks its delivery FOR UPDATE: the batch goes around it at once."""
    await pruned(services)  # what other tests left behind, so the run below is this test's
    sub = await subscription(services, org)
    held, free = [await delivery(services, org, sub, finished=OLD) for _ in range(2)]
    async with services.engine.connect() as holder:
        await holder.execute(
            text("SELECT id FROM webhook_deliveries WHERE id = :id FOR UPDATE"), {"id": held.id}
        )
        # A run that waited would wait for ever (the lock goes only after it): any bound
        # tells the two apart, and a generous one holds on a busy machine.
        await asyncio.wait_for(pruned(services), 60)
        assert await kept(services.engine, free) == nothing_of(free)
        assert await kept(services.engine, held) == held.rows
        await holder.rollback()
    await pruned(services)
    assert await kept(services.engine, held) == nothing_of(held)
