"""A key is kept a day (the injected clock): the same key a day later is a new key, and the
retention job deletes keys a day old, across organizations, in batches, younger ones kept."""

from __future__ import annotations

from datetime import timedelta

import httpx
from sqlalchemy.ext.asyncio import AsyncEngine

from hangar.idempotency import replay
from hangar.idempotency.replay import KEPT, Scope
from hangar.kit.container import Services
from hangar.webhooks.models import Subscription
from tests.fixtures.clients import signed_in_as
from tests.fixtures.factories import Org
from tests.fixtures.fakes import FakeClock
from tests.fixtures.idempotency import NEW_WEBHOOK, count, keyed, keys_of, webhooks
from tests.fixtures.retention import NOW, pruned


async def test_the_same_key_a_day_later_is_a_new_key(
    boss: httpx.AsyncClient, org: Org, services: Services, clock: FakeClock, engine: AsyncEngine
) -> None:
    first = await boss.post(webhooks(org), json=NEW_WEBHOOK, headers=keyed("daily"))
    clock.advance(seconds=KEPT.total_seconds() - 1)
    async with signed_in_as(services, org.admin_id) as later:  # the first session has ended
        replayed = await later.post(webhooks(org), json=NEW_WEBHOOK, headers=keyed("daily"))
        assert replayed.headers["Idempotent-Replayed"] == "true"
        assert replayed.content == first.content

        clock.advance(seconds=1)
        again = await later.post(webhooks(org), json=NEW_WEBHOOK, headers=keyed("daily"))
        assert again.status_code == 201
        assert "Idempotent-Replayed" not in again.headers
    # Even with another body: the old key's request is forgotten.
    clock.advance(days=1)
    async with signed_in_as(services, org.admin_id) as later:
        other = {**NEW_WEBHOOK, "name": "other"}
        reused = await later.post(webhooks(org), json=other, headers=keyed("daily"))
        assert reused.status_code == 201
    assert await count(engine, Subscription, org) == 3


async def key_at(services: Services, org: Org, key: str, at_offset: timedelta) -> None:
    scope = Scope(org.id, org.admin_id, key)
    claimed = await replay.claim(services.engine, scope, "f" * 64, NOW + at_offset)
    assert isinstance(claimed, replay.Claimed)


async def test_retention_deletes_keys_a_day_old(
    services: Services, org: Org, other: Org, engine: AsyncEngine
) -> None:
    await pruned(services)  # what other tests left behind at this moment
    day = timedelta(days=1)
    for owner in (org, other):
        for n in range(3):
            await key_at(services, owner, f"old-{n}", -day - timedelta(minutes=n + 1))
    await key_at(services, org, "young", -day + timedelta(minutes=1))
    await key_at(services, other, "new", timedelta(0))

    done = await pruned(services)  # batches of 2

    assert done["idempotency_keys"] == 6
    assert [r.key for r in await keys_of(engine, org)] == ["young"]
    assert [r.key for r in await keys_of(engine, other)] == ["new"]
