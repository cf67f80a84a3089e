"""A claim looks at the subscriptions with pending deliveries a window at a time, round a
ring in id order, so its statements cost what a window holds however many subscriptions have
work (bench G16). Here the window is two subscriptions wide: each claim goes on from where
the last stopped, passes over windows with nothing to take, and every subscription with
work is looked at once per turn of the ring."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta

import pytest
from sqlalchemy import update

from hangar.webhooks.delivery.dispatcher import RING_STEP_SECONDS, Dispatcher
from hangar.webhooks.delivery.ring import Ring, Turn
from hangar.webhooks.delivery.states import LEASE
from hangar.webhooks.delivery.worker import DeliveryWorker
from hangar.webhooks.events import catalogue
from hangar.webhooks.models import Delivery
from tests.fixtures.factories import Org
from tests.fixtures.subprocesses import eventually
from tests.fixtures.webhooks import Hooks, fire, subscribe

SUBSCRIPTIONS = 6


def narrow(hooks: Hooks, windows_per_claim: int = 4) -> Dispatcher:
    """A dispatcher whose ring's window is two subscriptions wide."""
    work = hooks.dispatcher()
    work._ring = Ring(window=2, windows_per_claim=windows_per_claim)
    return work


@pytest.fixture
async def ring(hooks: Hooks) -> list[uuid.UUID]:
    """Six subscriptions with one due delivery each, in the ring's order (their ids')."""
    subs = [
        await subscribe(hooks.services, hooks.org, hooks.receiver.url(f"/{n}"))
        for n in range(SUBSCRIPTIONS)
    ]
    await fire(hooks.services, hooks.org, catalogue.SQUAWK_CREATED)
    return sorted(subs)


async def lease_now(hooks: Hooks, subs: list[uuid.UUID]) -> None:
    """The deliveries of `subs` in flight: another worker holds them."""
    async with hooks.services.engine.begin() as conn:
        await conn.execute(
            update(Delivery)
            .where(Delivery.subscription_id.in_(subs))
            .values(lease_until=hooks.clock.now() + LEASE)
        )


async def taken(work: Dispatcher, slots: int = 50) -> list[uuid.UUID]:
    return sorted(d.subscription_id for d in await work.claim(slots))


async def test_each_claim_goes_on_round_the_ring_from_where_the_last_stopped(
    hooks: Hooks, ring: list[uuid.UUID]
) -> None:
    work = narrow(hooks, windows_per_claim=1)

    # One window a claim: two subscriptions each, in order, though there are slots for all.
    assert await taken(work) == ring[0:2]
    assert await taken(work) == ring[2:4]
    assert await taken(work) == ring[4:6]
    # Round again: everything is in flight now.
    assert await taken(work) == []


async def test_a_claim_passes_over_windows_with_nothing_to_take(
    hooks: Hooks, ring: list[uuid.UUID]
) -> None:
    await lease_now(hooks, ring[0:4])
    # The first two windows hold only attempts in flight: the claim walks on to the third.
    assert await taken(narrow(hooks)) == ring[4:6]


async def test_a_claim_stopped_at_its_windows_leaves_the_rest_to_the_next_claim(
    hooks: Hooks, ring: list[uuid.UUID]
) -> None:
    await lease_now(hooks, ring[0:4])
    work = narrow(hooks, windows_per_claim=2)

    assert await taken(work) == []
    # Said, so that the dispatcher claims again at once rather than sleeping.
    assert work._ring.unfinished
    # The next goes on with the same turn, to the end of the ring, where it began.
    assert await taken(work) == ring[4:6]
    assert not work._ring.unfinished  # round the whole ring: now the dispatcher may sleep
    # A new turn from the start finds nothing in two windows, and the next ends it.
    assert await taken(work) == []
    assert work._ring.unfinished
    assert await taken(work) == []
    assert not work._ring.unfinished


async def test_a_claim_that_began_mid_ring_goes_round_to_where_it_began_and_no_further(
    hooks: Hooks, ring: list[uuid.UUID]
) -> None:
    work = narrow(hooks)
    first = await taken(work, slots=1)  # one of the first window's two; the claim ends there
    assert len(first) == 1
    assert first[0] in ring[0:2]

    # From ring[2] to the end, then from the start up to ring[1]: each looked at once.
    assert await taken(work) == sorted(set(ring) - set(first))
    assert await taken(work) == []


@pytest.mark.parametrize(
    ("began", "windows", "looked_at"),
    [
        # From the start: done at the first window that is not full (the end).
        (None, [[1, 2], [3]], [[1, 2], [3]]),
        (None, [[]], [[]]),
        # From 3: to the end, then from the start up to 3 (inclusive: not yet looked at).
        (3, [[4, 5], [6], [1, 2], [3, 4]], [[4, 5], [6], [1, 2], [3]]),
        (3, [[4], [1, 2], [3, 4]], [[4], [1, 2], [3]]),
        # Fewer than a window in all: the walk from the start is short, so done there.
        (3, [[], [1]], [[], [1]]),
    ],
)
def test_a_turn_looks_at_each_subscription_once(
    began: int | None, windows: list[list[int]], looked_at: list[list[int]]
) -> None:
    ids = {n: uuid.UUID(int=n) for n in range(1, 7)}
    ring = Ring(window=2)
    ring.after = ids[began] if began is not None else None
    turn = Turn(ring)
    seen = []
    for window in windows:
        assert not turn.done
        seen.append([i.int for i in turn.clip([ids[n] for n in window])])
    assert turn.done
    assert seen == looked_at


async def newcomer(hooks: Hooks, other: Org, ring: list[uuid.UUID]) -> uuid.UUID:
    """Another organization's subscription, past the ring's others in id order (the ring
    reaches it last), with one delivery due."""
    sub_id = await hooks.subscribe("/newcomer", org=other)
    assert sub_id > max(ring)  # ids ascend: so a claim going round the ring comes to it last
    await hooks.fire(org=other)
    return sub_id


async def behind_a_busy_ring(
    hooks: Hooks, other: Org, ring: list[uuid.UUID]
) -> tuple[uuid.UUID, Dispatcher]:
    """The ring's deliveries all in flight, a newcomer's due, and a dispatcher looking at one
    window of two a claim."""
    await lease_now(hooks, ring)
    return await newcomer(hooks, other, ring), narrow(hooks, windows_per_claim=1)


async def test_the_subscriptions_a_wake_names_are_claimed_first(
    hooks: Hooks, ring: list[uuid.UUID], other: Org
) -> None:
    # The ring's windows hold nothing to take, and a claim looks at one: going round, it
    # would come to the new work three claims later. Named by the wake, it takes it now.
    sub_id, work = await behind_a_busy_ring(hooks, other, ring)
    assert await taken(work) == []  # unnamed: the first window, nothing in it

    work.kick([sub_id])
    assert await taken(work) == [sub_id]
    # Named once: the next claim goes on round the ring.
    assert await taken(work) == []


async def test_a_named_subscription_still_gets_no_more_than_its_share(
    hooks: Hooks, ring: list[uuid.UUID], other: Org
) -> None:
    sub_id, work = await behind_a_busy_ring(hooks, other, ring)
    # Its organization's share is what a reserve claim leaves it: only for organizations
    # with nothing in flight, one delivery each.
    work.kick([sub_id])
    assert [d.subscription_id for d in await work.claim(50, reserve_only=True)] == [sub_id]
    await hooks.fire(org=other)
    work.kick([sub_id])
    assert await work.claim(50, reserve_only=True) == []


async def test_a_new_event_wakes_a_worker_with_its_subscriptions_named(
    hooks: Hooks, other: Org
) -> None:
    """Through the wake a commit sends (NOTIFY on PostgreSQL, the connection's flag on
    SQLite): the worker's dispatcher hears which subscriptions have new work."""
    worker = DeliveryWorker(hooks.services, hooks.sender)
    heard: list[set[uuid.UUID]] = []
    kick = worker.dispatcher.kick

    def listening_kick(subscriptions: Iterable[uuid.UUID] = ()) -> None:
        heard.append(set(subscriptions))
        kick(subscriptions)

    worker.dispatcher.kick = listening_kick  # type: ignore[method-assign]
    await worker.start()
    try:
        # Listening (PostgreSQL), and asleep: it has looked for work, found none, and waits
        # for a wake.
        if hooks.services.engine.dialect.name == "postgresql":
            await asyncio.wait_for(worker.listening.wait(), 15)
        await asyncio.wait_for(worker.dispatcher.asleep.wait(), 15)
        sub_id = await hooks.subscribe("/named", org=other)
        await hooks.fire(org=other)
        await eventually(lambda: any(sub_id in named for named in heard), 15, "no wake named it")
    finally:
        await worker.stop()


async def test_a_claim_that_takes_named_work_ends_there_and_the_ring_is_next(
    hooks: Hooks, ring: list[uuid.UUID], other: Org
) -> None:
    # The named work's attempts start when its claim commits, not after the claim has also
    # walked the ring's windows; the dispatcher is kicked to claim those at once.
    sub_id = await newcomer(hooks, other, ring)
    work = narrow(hooks)
    work.kick([sub_id])
    work._wake.clear()
    assert await taken(work) == [sub_id]
    assert work._wake.is_set()
    assert await taken(work) == ring  # the ring's windows, by the next claim


async def test_a_claim_looks_at_a_windows_worth_of_named_subscriptions_at_most(
    hooks: Hooks, ring: list[uuid.UUID]
) -> None:
    # A transaction that gave work to more subscriptions than a window holds: the rest
    # are the next claim's, so no one claim's statements cost more than a window's.
    work = narrow(hooks)
    work.kick(ring[0:3])
    first = await taken(work)
    assert len(first) == 2
    assert set(first) < set(ring[0:3])
    assert await taken(work) == sorted(set(ring[0:3]) - set(first))


def an_attempt_under_way(work: Dispatcher) -> asyncio.Task[None]:
    """Makes `work` busy, as with an attempt that has not ended; cancel it when done."""

    async def never_ends() -> None:
        await asyncio.Event().wait()

    under_way = asyncio.create_task(never_ends())
    work._tasks.add(under_way)
    return under_way


async def test_a_busy_dispatchers_claim_looks_at_one_window(
    hooks: Hooks, ring: list[uuid.UUID]
) -> None:
    await lease_now(hooks, ring[0:4])
    work = narrow(hooks)  # four windows a claim, when idle
    under_way = an_attempt_under_way(work)
    try:
        # The refills of the attempts under way walk on round the ring: a claim that found
        # nothing in its window (a share full, say) walks no further.
        assert await taken(work) == []
        assert work._ring.unfinished
        assert await taken(work) == []
        assert await taken(work) == ring[4:6]
    finally:
        under_way.cancel()


def sleeping_until(hooks: Hooks, moment: datetime) -> Callable[[], bool]:
    return lambda: moment in hooks.clock.sleeping_until()


async def test_a_busy_dispatcher_that_found_nothing_walks_on_a_window_a_step(
    hooks: Hooks, ring: list[uuid.UUID]
) -> None:
    """Should every attempt under way be slow, no outcome walks the ring: the loop does, a
    window every RING_STEP_SECONDS, not at its idle 30 s."""
    await lease_now(hooks, ring[0:4])
    work = narrow(hooks)
    under_way = an_attempt_under_way(work)
    stop = asyncio.Event()
    running = asyncio.create_task(work.run(stop))
    step = timedelta(seconds=RING_STEP_SECONDS)
    try:
        began = hooks.clock.now()
        for n in (1, 2):  # the first two windows hold only attempts in flight
            await eventually(
                sleeping_until(hooks, began + n * step),
                10,
                f"the loop sleeping a step after window {n}",
            )
            assert work._ring.unfinished
            hooks.clock.advance(seconds=RING_STEP_SECONDS)
        # The third window's work (all there is to take) is claimed and delivered, though
        # no attempt under way has ended.
        await eventually(
            lambda: len(hooks.receiver.requests) == 2, 10, "the third window's deliveries"
        )
    finally:
        under_way.cancel()
        stop.set()
        work.kick()
        await asyncio.wait_for(running, 10)


async def test_a_refill_that_took_some_of_what_it_asked_leaves_the_loop_asleep(
    hooks: Hooks, ring: list[uuid.UUID]
) -> None:
    """Its shares or its window gave what they had: the next batch's refill walks on round
    the ring, and a loop claim now would mostly find what this one just filled."""
    work = narrow(hooks)
    one = await work.claim(1)
    started: list[object] = []
    work._start = started.append  # type: ignore[method-assign, assignment]
    work._ring.turn = Turn(work._ring)  # a turn under way
    work._wake.clear()

    work._refill_wanted = 5
    work._refilled(one)
    assert started == one
    assert not work._wake.is_set()
    # Nothing in its window: the loop walks on.
    work._refilled([])
    assert work._wake.is_set()
    # All it asked for: more may be due.
    work._wake.clear()
    work._refill_wanted = 1
    work._refilled(one)
    assert work._wake.is_set()
    # Could not refill (its batch failed): the loop claims.
    work._wake.clear()
    work._refilled(None)
    assert work._wake.is_set()
