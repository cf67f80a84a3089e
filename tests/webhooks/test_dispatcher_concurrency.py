"""Several workers share the queue without taking one delivery twice; one slow receiver
holds up nobody else (a slow backlog: test_fair_delivery.py); new work wakes a sleeping
dispatcher at once."""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

import aiosqlite
import asyncpg
import pytest
from sqlalchemy import event, text

from hangar.kit.container import Services
from hangar.webhooks.delivery import worker as worker_module
from hangar.webhooks.delivery.dispatcher import Dispatcher
from hangar.webhooks.delivery.sender import Sender
from hangar.webhooks.delivery.states import MAX_IN_FLIGHT
from hangar.wiring.worker import Worker
from tests.fixtures.environment import PG_URL
from tests.fixtures.factories import Org
from tests.fixtures.fakes import FakeClock
from tests.fixtures.receivers import Receiver
from tests.fixtures.webhooks import deliveries, dispatcher, fire, subscribe


async def fire_and_wait(services: Services, org: Org, receiver: Receiver, why: str) -> None:
    """Fires an event; its delivery must reach the receiver within 5 s (else: `why`)."""
    started = time.monotonic()
    await fire(services, org)
    while not receiver.requests:
        assert time.monotonic() - started < 5, why
        await asyncio.sleep(0.02)


async def test_concurrent_claims_never_overlap(
    services: Services, org: Org, receiver: Receiver, sender: Sender
) -> None:
    # Ten subscriptions with four due each: forty deliveries, as many as their caps allow.
    subs = [await subscribe(services, org, receiver.url(f"/{i}")) for i in range(10)]
    for _ in range(MAX_IN_FLIGHT):
        await fire(services, org)
    workers = [
        Dispatcher(services.engine, services.clock, sender, services.secret_box, batch=15)
        for _ in range(4)
    ]

    # Rounds of claims at once until nothing is left: a claim skips the subscriptions
    # another is claiming for (PostgreSQL), so one round may not take everything.
    ids: list[uuid.UUID] = []
    for _ in range(10):
        claims = await asyncio.gather(*(w.claim() for w in workers))
        if not any(claims):
            break
        ids += [c.id for claim in claims for c in claim]

    assert len(ids) == len(set(ids)) == 10 * MAX_IN_FLIGHT
    for sub_id in subs:
        assert len(await deliveries(services.engine, sub_id)) == MAX_IN_FLIGHT


async def test_a_slow_receiver_holds_up_nobody_else(
    services: Services, org: Org, receiver: Receiver, sender: Sender
) -> None:
    # The slow receiver answers only once the fast one has been heard: a dispatcher that
    # waited for the one before sending to the other would never get there.
    heard_fast = asyncio.Event()
    receiver.held_paths["/slow"] = heard_fast
    await subscribe(services, org, receiver.url("/slow"))
    await subscribe(services, org, receiver.url("/fast"))
    await fire(services, org)
    dispatcher = Dispatcher(services.engine, services.clock, sender, services.secret_box)
    stop = asyncio.Event()
    running = asyncio.create_task(dispatcher.run(stop))
    try:
        started = time.monotonic()
        while not any(r.path == "/fast" for r in receiver.requests):
            assert time.monotonic() - started < 5, "the fast receiver waited for the slow one"
            await asyncio.sleep(0.01)
        assert receiver.in_flight["/slow"] == 1  # still held: the fast one did not wait
    finally:
        heard_fast.set()
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
        # Asleep with nothing due: only the new work's signal can wake it now.
        await asyncio.wait_for(worker.dispatcher.asleep.wait(), 5)
        await fire_and_wait(services, org, receiver, "the worker slept through new work")
    finally:
        await worker.stop()
    assert await deliveries(services.engine, sub_id) == [("succeeded", 1)]


@pytest.mark.skipif(not PG_URL, reason="LISTEN/NOTIFY is PostgreSQL's; SQLite wakes in-process")
async def test_a_lost_listen_connection_is_restored(
    services: Services,
    org: Org,
    receiver: Receiver,
    sender: Sender,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(worker_module, "LISTEN_RETRY_MIN", 0.05)
    sub_id = await subscribe(services, org, receiver.url())
    worker = Worker(services, sender)
    await worker.start()
    try:
        await asyncio.wait_for(worker.listening.wait(), 5)
        async with services.engine.connect() as conn:
            killed = await conn.scalar(
                text(
                    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                    " WHERE datname = current_database() AND query ILIKE 'LISTEN%'"
                )
            )
        assert killed == 1
        lost_at = time.monotonic()
        while worker.listening.is_set():  # the worker notices the loss...
            assert time.monotonic() - lost_at < 5, "the worker never noticed the lost LISTEN"
            await asyncio.sleep(0.01)
        await asyncio.wait_for(worker.listening.wait(), 5)  # ...and listens again
        # Asleep past the reconnect's own kick: only a NOTIFY can wake it now.
        await asyncio.wait_for(worker.dispatcher.asleep.wait(), 5)
        await fire_and_wait(services, org, receiver, "no NOTIFY reached the restored listener")
    finally:
        await worker.stop()
    assert await deliveries(services.engine, sub_id) == [("succeeded", 1)]


async def test_a_running_worker_retries_when_the_retry_is_due(
    services: Services, org: Org, receiver: Receiver, sender: Sender, clock: FakeClock
) -> None:
    # While an attempt runs, its lease (60 s) is the soonest thing the sleeping loop knows
    # of; the retry scheduled when the attempt fails, 2 s later, must wake it.
    receiver.statuses = [500, 200]
    sub_id = await subscribe(services, org, receiver.url())
    worker = Worker(services, sender)
    await worker.start()
    try:
        await fire(services, org)
        started = time.monotonic()
        while await deliveries(services.engine, sub_id) != [("pending", 1)]:
            assert time.monotonic() - started < 5, "the first attempt never happened"
            await asyncio.sleep(0.02)
        clock.advance(seconds=2)  # the retry is due now (by the injected clock)
        retried = time.monotonic()
        while len(receiver.requests) < 2:
            assert time.monotonic() - retried < 5, "the worker slept past the due retry"
            await asyncio.sleep(0.02)
    finally:
        await worker.stop()
    assert await deliveries(services.engine, sub_id) == [("succeeded", 2)]


async def test_a_claim_of_one_window_is_three_statements(
    services: Services,
    org: Org,
    receiver: Receiver,
    sender: Sender,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Each round trip of a claim is latency between a commit and its delivery (G7).
    await subscribe(services, org, receiver.url())
    await fire(services, org)
    statements: list[str] = []
    # PostgreSQL: the claim runs on asyncpg's own connection; SQLite: through SQLAlchemy,
    # but for the walk (a `Read`, on aiosqlite's own).
    fetch = asyncpg.Connection.fetch
    fetch_all = aiosqlite.Connection.execute_fetchall

    async def counted(conn: asyncpg.Connection, query: str, *args: object) -> object:
        statements.append(query)
        return await fetch(conn, query, *args)

    async def counted_all(conn: aiosqlite.Connection, query: str, *args: Any) -> object:
        statements.append(query)
        return await fetch_all(conn, query, *args)

    monkeypatch.setattr(asyncpg.Connection, "fetch", counted)
    monkeypatch.setattr(aiosqlite.Connection, "execute_fetchall", counted_all)
    listener = lambda *args: statements.append(args[2])  # noqa: E731
    event.listen(services.engine.sync_engine, "before_cursor_execute", listener)
    try:
        claimed = await dispatcher(services, sender).claim()
    finally:
        event.remove(services.engine.sync_engine, "before_cursor_execute", listener)
    assert len(claimed) == 1
    # The window's subscriptions walked (claims.Ring); then, PostgreSQL: the subscriptions
    # locked, then the lease taken and read with what the attempts need (a data-modifying
    # CTE) in a statement whose snapshot follows the locks. SQLite, one writer and no
    # data-modifying CTE: the lease, then the read.
    assert len(statements) == 3
