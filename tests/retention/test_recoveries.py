"""Retention of Recover's records: a recovery asked for before the window (30 days by default)
goes, oldest first, in batches; one within it stays, with the organization's other rows; the
deliveries it queued are left to their own rule (finished and old, they go; pending, never)."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

from sqlalchemy import insert, select, update

from hangar.foundation.ids import new_id
from hangar.kit.container import Services
from hangar.webhooks.models import Delivery, Recovery
from tests.fixtures.factories import Org
from tests.fixtures.retention import (
    CUTOFF,
    OLD,
    RECENT,
    delivery,
    kept,
    left,
    pruned,
    subscription,
)


async def recovery(services: Services, org: Org, sub_id: uuid.UUID, at: datetime) -> uuid.UUID:
    recovery_id = new_id()
    async with services.engine.begin() as conn:
        await conn.execute(
            insert(Recovery).values(
                id=recovery_id,
                org_id=org.id,
                subscription_id=sub_id,
                requested_by=org.admin_id,
                requested_at=at,
                since=at - timedelta(hours=1),
                deliveries=1,
            )
        )
    return recovery_id


async def test_recoveries_past_the_window_go_and_the_others_stay(
    services: Services, org: Org, other: Org
) -> None:
    await pruned(services)  # what other tests left: from here on, only this test's rows
    ours, theirs = await subscription(services, org), await subscription(services, other)
    old = [await recovery(services, org, ours, OLD - timedelta(seconds=n)) for n in range(3)]
    old.append(await recovery(services, other, theirs, OLD))
    recent = [
        await recovery(services, org, ours, RECENT),
        await recovery(services, other, theirs, CUTOFF + timedelta(seconds=1)),
    ]
    # A delivery an old recovery queued that is still pending: it is never pruned, and
    # keeps the recovery's id (not a foreign key) once the recovery is gone.
    waiting = await delivery(services, org, ours, finished=None)
    async with services.engine.begin() as conn:
        await conn.execute(
            update(Delivery).where(Delivery.id == waiting.id).values(recovery_id=old[0])
        )

    done = await pruned(services)  # batches of 2

    assert done["webhook_recoveries"] == 4
    assert await left(services.engine, Recovery, old) == set()
    assert await left(services.engine, Recovery, recent) == set(recent)
    assert await kept(services.engine, waiting) == waiting.rows
    async with services.engine.connect() as conn:
        named = await conn.scalar(select(Delivery.recovery_id).where(Delivery.id == waiting.id))
    assert named == old[0]
