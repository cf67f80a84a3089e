"""A dispatcher told to stop (SIGTERM) starts no attempt: the one under way finishes and is
recorded, and the deliveries it had no slot for were never leased (a claim takes only what
the slots allow), so they are due for the next worker at once, not when a lease runs out."""

from __future__ import annotations

import asyncio

from sqlalchemy import select

from hangar.kit.container import Services
from hangar.webhooks.delivery.dispatcher import Dispatcher
from hangar.webhooks.delivery.sender import Sender
from hangar.webhooks.models import Delivery
from tests.fixtures.factories import Org
from tests.fixtures.receivers import Receiver
from tests.fixtures.subprocesses import eventually
from tests.fixtures.webhooks import deliveries, fire, subscribe


async def test_stopping_finishes_the_attempt_under_way_and_leaves_the_rest_unleased(
    services: Services, org: Org, receiver: Receiver, sender: Sender
) -> None:
    receiver.delay = 1.0
    sub_id = await subscribe(services, org, receiver.url())
    for _ in range(3):
        await fire(services, org)
    # One slot: one delivery is claimed and attempted; the other two wait, unleased.
    one_at_a_time = Dispatcher(
        services.engine, services.clock, sender, services.secret_box, concurrency=1
    )
    stop = asyncio.Event()
    running = asyncio.create_task(one_at_a_time.run(stop))
    await eventually(lambda: len(receiver.requests) == 1, 10, "the first attempt")

    stop.set()
    await asyncio.wait_for(running, 15)

    assert len(receiver.requests) == 1
    assert sorted(await deliveries(services.engine, sub_id)) == [
        ("pending", 0),
        ("pending", 0),
        ("succeeded", 1),
    ]
    async with services.engine.connect() as conn:
        leases = await conn.scalars(
            select(Delivery.lease_until).where(Delivery.subscription_id == sub_id)
        )
        assert set(leases) == {None}
    # Due again at once, at the same moment on the clock: any dispatcher takes them now.
    other = Dispatcher(services.engine, services.clock, sender, services.secret_box)
    assert len(await other.claim()) == 2
