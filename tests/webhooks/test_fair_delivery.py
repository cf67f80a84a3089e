"""Fair delivery across tenants: a claim takes due work by turn across subscriptions, never more
than a subscription's cap in flight (counted from live leases, whichever worker holds them),
and only as much as the dispatcher has slots for. One organization's slow endpoint with a
backlog does not hold up another organization's deliveries, and is itself served in full."""

from __future__ import annotations

import asyncio
import dataclasses
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator
from datetime import datetime

import pytest
from sqlalchemy import func, select, update
from sqlalchemy.ext.asyncio import AsyncEngine

from hangar.db.engine import make_engine
from hangar.webhooks.delivery.claims import Claimed
from hangar.webhooks.delivery.dispatcher import Dispatcher
from hangar.webhooks.delivery.states import LEASE, MAX_IN_FLIGHT, is_in_flight
from hangar.webhooks.events import catalogue, outbox
from hangar.webhooks.models import Delivery
from hangar.wiring.worker import Worker
from tests.fixtures.environment import PG_URL
from tests.fixtures.factories import Org
from tests.fixtures.webhooks import DATA, Hooks, deliveries, subscribe

A, B, C = catalogue.SQUAWK_CREATED, catalogue.SQUAWK_RESOLVED, catalogue.AIRCRAFT_GROUNDED
BACKLOG = 300  # the slow endpoint's queue
BOUND = 10.0  # seconds any wait in these tests may take before it fails


async def queue(hooks: Hooks, org: Org, name: str, count: int) -> None:
    """`count` events `name` of `org`, one second apart (each delivery due when recorded)."""
    async with hooks.services.engine.begin() as conn:
        for _ in range(count):
            await outbox.record(conn, org.id, [name], DATA, hooks.clock.now())
            hooks.clock.advance(seconds=1)


async def in_flight(engine: AsyncEngine, sub_id: uuid.UUID, now: datetime) -> int:
    async with engine.connect() as conn:
        count = await conn.scalar(
            select(func.count())
            .select_from(Delivery)
            .where(Delivery.subscription_id == sub_id, is_in_flight(now))
        )
    return int(count or 0)


async def until(condition: object, why: str) -> None:
    """Waits (bounded, in real time) until `condition()` is true."""
    started = time.monotonic()
    while not condition():  # type: ignore[operator]
        assert time.monotonic() - started < BOUND, why
        await asyncio.sleep(0.01)


def by_subscription(claimed: list[Claimed]) -> Counter[uuid.UUID]:
    return Counter(c.subscription_id for c in claimed)


@pytest.fixture
async def three(hooks: Hooks, other: Org) -> tuple[uuid.UUID, uuid.UUID, uuid.UUID]:
    """Three subscriptions, each to one event, in two organizations: A has 2 deliveries more
    than its cap due, the oldest; then B has 2 and C has 1."""
    services, org = hooks.services, hooks.org
    subs = (
        await subscribe(services, org, hooks.receiver.url("/a"), [A]),
        await subscribe(services, org, hooks.receiver.url("/b"), [B]),
        await subscribe(services, other, hooks.receiver.url("/c"), [C]),
    )
    await queue(hooks, org, A, MAX_IN_FLIGHT + 2)
    await queue(hooks, org, B, 2)
    await queue(hooks, other, C, 1)
    return subs


async def test_a_claim_takes_turns_across_subscriptions_oldest_first_within_each(
    hooks: Hooks, three: tuple[uuid.UUID, uuid.UUID, uuid.UUID]
) -> None:
    a, b, c = three
    claimed = await hooks.dispatcher().claim(5)

    # Every subscription's oldest waiting delivery before anyone's second: A's backlog, the
    # oldest of all, does not take the five slots (one global FIFO would).
    assert by_subscription(claimed) == {a: 2, b: 2, c: 1}
    async with hooks.services.engine.connect() as conn:
        oldest = {
            sub: list(
                await conn.scalars(
                    select(Delivery.id)
                    .where(Delivery.subscription_id == sub)
                    .order_by(Delivery.next_attempt_at)
                    .limit(2)
                )
            )
            for sub in (a, b, c)
        }
    assert {d.id for d in claimed} == {*oldest[a], *oldest[b], oldest[c][0]}


async def test_a_subscription_never_has_more_than_its_cap_in_flight(
    hooks: Hooks, three: tuple[uuid.UUID, uuid.UUID, uuid.UUID]
) -> None:
    a, b, c = three
    work = hooks.dispatcher()

    first = await work.claim(50)
    assert by_subscription(first) == {a: MAX_IN_FLIGHT, b: 2, c: 1}
    # A has 2 more due, but its cap in flight: nothing until one of them ends.
    assert await work.claim(50) == []

    await work.attempt(next(d for d in first if d.subscription_id == a))
    assert by_subscription(await work.claim(50)) == {a: 1}
    assert await in_flight(hooks.services.engine, a, hooks.clock.now()) == MAX_IN_FLIGHT


async def test_leases_of_another_worker_count_and_dead_ones_do_not(
    hooks: Hooks, three: tuple[uuid.UUID, uuid.UUID, uuid.UUID]
) -> None:
    a, _, _ = three
    first, second = hooks.dispatcher(), hooks.dispatcher()

    assert by_subscription(await first.claim(50))[a] == MAX_IN_FLIGHT
    assert by_subscription(await second.claim(50))[a] == 0

    # The first worker died: once its leases run out they are nobody's, and A's oldest ones
    # (due since, and unattempted) are claimed again.
    hooks.clock.advance(seconds=LEASE.total_seconds())
    again = await second.claim(50)
    assert by_subscription(again)[a] == MAX_IN_FLIGHT


async def test_a_claim_takes_no_more_than_the_slots_it_is_given(
    hooks: Hooks, three: tuple[uuid.UUID, uuid.UUID, uuid.UUID]
) -> None:
    assert len(await hooks.dispatcher().claim(2)) == 2
    assert len(await hooks.dispatcher().claim(1)) == 1


@pytest.fixture
async def engines(database_url: str, engine: AsyncEngine) -> AsyncIterator[list[AsyncEngine]]:
    """Eight engines as on eight machines (PostgreSQL); SQLite has one process, one engine."""
    if not PG_URL:
        yield [engine] * 8
        return
    made = [make_engine(database_url, pool_size=1) for _ in range(8)]
    yield made
    for e in made:
        await e.dispose()


async def test_concurrent_claims_from_many_workers_never_pass_the_cap(
    hooks: Hooks, engines: list[AsyncEngine]
) -> None:
    services = hooks.services
    sub_id = await hooks.subscribe("/busy")
    await queue(hooks, hooks.org, A, 40)
    workers = [
        Dispatcher(engine, services.clock, hooks.sender, services.secret_box) for engine in engines
    ]
    for _ in range(5):
        # All at once: each claim sees the others' leases only if they serialize properly.
        claims = await asyncio.gather(*(w.claim(50) for w in workers))
        ids = [c.id for claim in claims for c in claim]
        assert len(ids) == len(set(ids)) == MAX_IN_FLIGHT
        assert await in_flight(services.engine, sub_id, services.clock.now()) == MAX_IN_FLIGHT
        hooks.clock.advance(seconds=LEASE.total_seconds())  # those workers die


async def test_a_dispatcher_leases_only_what_it_has_slots_for(hooks: Hooks) -> None:
    services, receiver = hooks.services, hooks.receiver
    release = asyncio.Event()
    subs = []
    for i in range(5):
        receiver.held_paths[f"/held/{i}"] = release
        subs.append(await hooks.subscribe(f"/held/{i}"))
    await hooks.fire()
    work = Dispatcher(
        services.engine, services.clock, hooks.sender, services.secret_box, concurrency=2
    )
    stop = asyncio.Event()
    running = asyncio.create_task(work.run(stop))
    try:
        await until(lambda: len(receiver.requests) == 2, "two attempts never started")
        # Asleep with both slots busy: it has claimed all it ever will until one frees.
        await asyncio.wait_for(work.asleep.wait(), BOUND)
        leased = [await in_flight(services.engine, s, services.clock.now()) for s in subs]
        assert sum(leased) == 2  # not the other three, waiting leased behind busy slots
        release.set()
        await until(lambda: len(receiver.requests) == 5, "the other three were never sent")
    finally:
        release.set()
        stop.set()
        await asyncio.wait_for(running, BOUND)
    for s in subs:
        assert await deliveries(services.engine, s) == [("succeeded", 1)]


async def slow_and_healthy(
    hooks: Hooks, other: Org, release: asyncio.Event
) -> tuple[uuid.UUID, uuid.UUID]:
    """Org S (the test's organization) subscribes an endpoint that answers only when `release`
    is set, with BACKLOG deliveries queued; org F (`other`) subscribes one that answers at
    once."""
    hooks.receiver.held_paths["/slow"] = release
    slow = await hooks.subscribe("/slow")
    healthy = await hooks.subscribe("/healthy", org=other)
    async with hooks.services.engine.begin() as conn:
        for _ in range(BACKLOG):
            await outbox.record(conn, hooks.org.id, [A], DATA, hooks.clock.now())
    return slow, healthy


async def fired_and_heard(hooks: Hooks, other: Org, count: int) -> None:
    """Fires `count` events of org F, one at a time, each heard before the next is fired.
    While the slow endpoint holds its attempts unanswered, that proves no delivery of F's
    waited behind its backlog; how soon each arrives is bench G13's (a p99 against quiet,
    which a loaded test machine would make a coin toss here)."""
    for _ in range(count):
        heard = len(hooks.receiver.heard("/healthy"))
        await hooks.fire(org=other)
        await until(
            lambda n=heard: len(hooks.receiver.heard("/healthy")) > n,
            "the healthy endpoint's delivery waited behind the slow one's backlog",
        )


async def test_a_slow_backlog_delays_no_other_organization_and_is_served_in_full(
    hooks: Hooks, other: Org
) -> None:
    receiver, services = hooks.receiver, hooks.services
    release = asyncio.Event()
    slow, healthy = await slow_and_healthy(hooks, other, release)
    worker = Worker(services, hooks.sender)
    await worker.start()
    try:
        await until(
            lambda: receiver.in_flight["/slow"] >= MAX_IN_FLIGHT, "the slow endpoint got nothing"
        )
        # Each arrives while the slow endpoint is still held: none waits for it.
        await fired_and_heard(hooks, other, 5)
        assert receiver.most_in_flight["/slow"] == MAX_IN_FLIGHT

        # The slow endpoint recovers: every delivery of its backlog still arrives, once.
        release.set()
        await until(
            lambda: len(receiver.heard("/slow")) == BACKLOG, "the slow backlog was not served"
        )
    finally:
        release.set()
        await worker.stop()
    heard = Counter(r.headers["X-Service-Delivery"] for r in receiver.heard("/slow"))
    assert len(heard) == BACKLOG
    assert set(heard.values()) == {1}
    assert set(await deliveries(services.engine, slow)) == {("succeeded", 1)}
    assert set(await deliveries(services.engine, healthy)) == {("succeeded", 1)}
    assert receiver.most_in_flight["/slow"] == MAX_IN_FLIGHT


@pytest.mark.skipif(
    not PG_URL,
    reason="several workers share the queue only on PostgreSQL; set "
    "HANGAR_TEST_DATABASE_URL to run this",
)
async def test_the_cap_holds_across_two_workers(
    hooks: Hooks, other: Org, database_url: str
) -> None:
    receiver = hooks.receiver
    release = asyncio.Event()
    slow, _ = await slow_and_healthy(hooks, other, release)
    engines = [make_engine(database_url), make_engine(database_url)]
    workers = [
        Worker(dataclasses.replace(hooks.services, engine=engine), hooks.sender)
        for engine in engines
    ]
    try:
        for w in workers:
            await w.start()
        await until(
            lambda: receiver.in_flight["/slow"] >= MAX_IN_FLIGHT, "the slow endpoint got nothing"
        )
        # Both workers have free slots and are kicked by every new event: neither may add
        # an attempt past the cap to the slow endpoint.
        await fired_and_heard(hooks, other, 5)
        assert receiver.most_in_flight["/slow"] == MAX_IN_FLIGHT
        release.set()
        await until(
            lambda: len(receiver.heard("/slow")) == BACKLOG, "the slow backlog was not served"
        )
    finally:
        release.set()
        for w in workers:
            await w.stop()
        for e in engines:
            await e.dispose()
    assert receiver.most_in_flight["/slow"] == MAX_IN_FLIGHT
    assert set(await deliveries(hooks.services.engine, slow)) == {("succeeded", 1)}


class Counting(Dispatcher):
    claims = 0

    async def claim(self, slots: int | None = None, *, reserve_only: bool = False) -> list[Claimed]:
        self.claims += 1
        return await super().claim(slots, reserve_only=reserve_only)


async def test_an_idle_dispatcher_waits_when_only_capped_work_is_due(hooks: Hooks) -> None:
    services = hooks.services
    sub_id = await hooks.subscribe("/capped")
    await queue(hooks, hooks.org, A, MAX_IN_FLIGHT + 1)
    # Another worker holds the cap; the last delivery's lease ran out (its worker died):
    # due, and held back by the cap until one of the live attempts ends.
    assert len(await hooks.dispatcher().claim()) == MAX_IN_FLIGHT
    async with services.engine.begin() as conn:
        await conn.execute(
            update(Delivery)
            .where(Delivery.subscription_id == sub_id, Delivery.lease_until.is_(None))
            .values(lease_until=hooks.clock.now() - LEASE)
        )
    idle = Counting(services.engine, services.clock, hooks.sender, services.secret_box)
    stop = asyncio.Event()
    running = asyncio.create_task(idle.run(stop))
    await asyncio.wait_for(idle.asleep.wait(), BOUND)
    # Asleep until a time to come: until then (or a kick) it claims nothing more.
    woken_at = hooks.clock.sleeping_until()
    stop.set()
    idle.kick()
    await asyncio.wait_for(running, BOUND)
    # It looked, found nothing it may take, and slept (not a claim per turn of the loop).
    assert woken_at
    assert min(woken_at) > hooks.clock.now()
    assert 1 <= idle.claims <= 2
    assert hooks.receiver.requests == []
