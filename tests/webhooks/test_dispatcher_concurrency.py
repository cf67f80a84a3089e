"""Several workers share the queue without taking one delivery twice; one slow receiver
holds up nobody else; new work wakes a sleeping dispatcher at once."""

from __future__ import annotations

import asyncio
import time

from hangar.services import Services
from hangar.webhooks.dispatcher import Dispatcher
from hangar.webhooks.sender import Sender
from hangar.webhooks.worker import Worker
from tests.factories import Org
from tests.webhooks.conftest import Receiver
from tests.webhooks.test_dispatcher import deliveries, fire, subscribe


async def test_concurrent_claims_never_overlap(
    services: Services, org: Org, receiver: Receiver, sender: Sender
) -> None:
    sub_id = await subscribe(services, org, receiver.url())
    for _ in range(40):
        await fire(services, org)
    workers = [
        Dispatcher(services.engine, services.clock, sender, services.secret_box, batch=15)
        for _ in range(4)
    ]

    claims = await asyncio.gather(*(w.claim() for w in workers))

    ids = [c.id for claim in claims for c in claim]
    assert len(ids) == len(set(ids)) == 40
    assert len(await deliveries(services.engine, sub_id)) == 40


async def test_a_slow_receiver_holds_up_nobody_else(
    services: Services, org: Org, receiver: Receiver, sender: Sender
) -> None:
    receiver.slow_paths["/slow"] = 3.0
    await subscribe(services, org, receiver.url("/slow"))
    await subscribe(services, org, receiver.url("/fast"))
    await fire(services, org)
    dispatcher = Dispatcher(services.engine, services.clock, sender, services.secret_box)
    stop = asyncio.Event()
    started = time.monotonic()
    running = asyncio.create_task(dispatcher.run(stop))
    try:
        while not any(r.path == "/fast" for r in receiver.requests):
            assert time.monotonic() - started < 2.5, "the fast receiver waited for the slow one"
            await asyncio.sleep(0.02)
    finally:
        stop.set()
        dispatcher.kick()
        await asyncio.wait_for(running, 10)


async def test_new_work_wakes_the_worker_at_once(
    services: Services, org: Org, receiver: Receiver, sender: Sender
) -> None:
    sub_id = await subscribe(services, org, receiver.url())
    worker = Worker(services, sender)
    await worker.start()
    try:
        await asyncio.sleep(0.3)  # let it find nothing and go to sleep (for up to 30 s)
        started = time.monotonic()
        await fire(services, org)
        while not receiver.requests:
            assert time.monotonic() - started < 5, "the worker slept through new work"
            await asyncio.sleep(0.02)
    finally:
        await worker.stop()
    assert await deliveries(services.engine, sub_id) == [("succeeded", 1)]
