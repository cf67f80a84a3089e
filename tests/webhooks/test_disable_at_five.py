"""Five consecutive failed deliveries disable a subscription, and its counter stops there
(issue 28): deliveries still in flight when the fifth failure disables it, in the same batch
of outcomes, a later one, or another worker's, fail without counting. So the API and the
screens say 5 however many more were failing at once.

What those late deliveries become: their attempt is recorded, and a delivery whose attempts
are used up is `failed`; one that would be retried is skipped when its retry comes due, as
every pending delivery of a disabled subscription is (the dispatcher's rule). While disabled,
nothing but Enable and Test changes the counter: not a late failure, not a late success.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from datetime import datetime, timedelta
from typing import cast

import httpx
import pytest
from prometheus_client import REGISTRY
from sqlalchemy import select, text, update
from sqlalchemy.ext.asyncio import AsyncEngine

from hangar.db.engine import make_engine
from hangar.foundation.ids import new_id
from hangar.web.webhooks import status_words
from hangar.webhooks.delivery.claims import Claimed
from hangar.webhooks.delivery.dispatcher import Dispatcher
from hangar.webhooks.delivery.outcomes import Outcome, Recorder
from hangar.webhooks.models import Delivery, DeliveryStatus, Subscription
from hangar.webhooks.subscriptions.manage import SubscriptionView
from tests.fixtures.environment import PG_URL
from tests.fixtures.factories import Org
from tests.fixtures.webhooks import Hooks, deliveries, subscription

AT_ONCE = 8  # deliveries failing together: more than the five that disable
ROUNDS = 3
BOUND = 15.0  # seconds any wait in these tests may take before it fails
SAYS_FIVE = "Disabled after 5 consecutive failed deliveries"


def disabled_so_far() -> float:
    return REGISTRY.get_sample_value("hangar_webhook_subscriptions_auto_disabled_total") or 0.0


async def until(check: Callable[[], Awaitable[bool]], why: str) -> None:
    """Waits (bounded, in real time) until `check()` is true."""
    started = time.monotonic()
    while not await check():
        assert time.monotonic() - started < BOUND, why
        await asyncio.sleep(0.02)


async def round_of(engine: AsyncEngine, sub_id: uuid.UUID) -> list[tuple[str, int]]:
    """This round's deliveries: the last `AT_ONCE` made."""
    return (await deliveries(engine, sub_id))[-AT_ONCE:]


async def assert_says_five(
    hooks: Hooks, admin: httpx.AsyncClient, sub_id: uuid.UUID, other_name: str
) -> None:
    """The stored counter, the API's view, the list screen and the delivery log's header."""
    enabled, failures, disabled_at = await subscription(hooks.services.engine, sub_id)
    assert (enabled, failures) == (False, 5)
    assert disabled_at is not None
    org = hooks.org.id
    view = (await admin.get(f"/api/orgs/{org}/webhooks/{sub_id}")).json()
    assert (view["enabled"], view["consecutive_failures"]) == (False, 5)
    listed = await admin.get(f"/settings/{org}/webhooks")
    assert listed.status_code == 200
    assert SAYS_FIVE in listed.text
    assert other_name not in listed.text  # the other organization's never shows up
    log = await admin.get(f"/settings/{org}/webhooks/{sub_id}/deliveries")
    assert log.status_code == 200
    assert SAYS_FIVE in log.text


async def enable(admin: httpx.AsyncClient, org: Org, sub_id: uuid.UUID) -> None:
    enabled = await admin.post(f"/api/orgs/{org.id}/webhooks/{sub_id}/enable")
    assert enabled.status_code == 200, enabled.text
    assert enabled.json()["consecutive_failures"] == 0


async def other_receiver(hooks: Hooks, other: Org) -> tuple[uuid.UUID, str]:
    """The other organization's subscription, two failures into a run: untouched by ours."""
    name = "Other Aero Club receiver"
    return await hooks.subscribe("/other", org=other, name=name, consecutive_failures=2), name


async def test_deliveries_failing_together_disable_at_exactly_five(
    hooks: Hooks, admin: httpx.AsyncClient, other: Org
) -> None:
    hooks.receiver.statuses = [500]
    sub_id = await hooks.subscribe()
    other_id, other_name = await other_receiver(hooks, other)
    for _ in range(ROUNDS):
        for _ in range(AT_ONCE):
            await hooks.fire()
        before = disabled_so_far()
        # One dispatcher attempts all of them at once, three times: their last attempts'
        # outcomes are recorded together, in one batch or a few.
        await hooks.run_all_attempts()

        assert await round_of(hooks.services.engine, sub_id) == [("failed", 3)] * AT_ONCE
        await assert_says_five(hooks, admin, sub_id, other_name)
        assert disabled_so_far() == before + 1  # disabled once, by the fifth
        await enable(admin, hooks.org, sub_id)
    assert len(hooks.receiver.requests) == ROUNDS * AT_ONCE * 3
    assert await subscription(hooks.services.engine, other_id) == (True, 2, None)


class Machine(Dispatcher):
    """A production dispatcher that also counts the attempts it made."""

    attempted = 0

    async def attempt(self, delivery: Claimed) -> None:
        self.attempted += 1
        await super().attempt(delivery)


@pytest.fixture
async def machines(hooks: Hooks, database_url: str) -> AsyncIterator[list[Machine]]:
    """Two dispatchers of four slots each, so neither can take all the work: on PostgreSQL
    with an engine each (two machines), on SQLite (one machine) sharing the run's."""
    engines = [make_engine(database_url) for _ in range(2)] if PG_URL else []
    yield [
        Machine(
            engine,
            hooks.clock,
            hooks.sender,
            hooks.services.secret_box,
            batch=4,
            concurrency=4,
        )
        for engine in engines or [hooks.services.engine] * 2
    ]
    for engine in engines:
        await engine.dispose()


async def test_two_workers_failing_together_disable_at_exactly_five(
    hooks: Hooks, admin: httpx.AsyncClient, other: Org, machines: list[Machine]
) -> None:
    hooks.receiver.statuses = [500]
    # Answers that take a moment: both workers hold attempts at once, and their outcomes
    # are recorded in several batches.
    hooks.receiver.delay = 0.03
    sub_id = await hooks.subscribe()
    _, other_name = await other_receiver(hooks, other)
    engine = hooks.services.engine
    stop = asyncio.Event()
    running = [asyncio.create_task(m.run(stop)) for m in machines]

    async def all_at(state: tuple[str, int]) -> bool:
        for m in machines:
            m.kick()  # as the NOTIFY of a commit, or a due retry, would
        return await round_of(engine, sub_id) == [state] * AT_ONCE

    try:
        for _ in range(ROUNDS):
            before = disabled_so_far()
            heard = len(hooks.receiver.requests)
            for _ in range(AT_ONCE):
                await hooks.fire()
            await until(lambda: all_at(("pending", 1)), "the first attempts")
            hooks.clock.advance(seconds=2)
            await until(lambda: all_at(("pending", 2)), "the second attempts")
            hooks.clock.advance(seconds=8)
            await until(lambda: all_at(("failed", 3)), "the last attempts")

            assert len(hooks.receiver.requests) - heard == AT_ONCE * 3
            await assert_says_five(hooks, admin, sub_id, other_name)
            assert disabled_so_far() == before + 1
            await enable(admin, hooks.org, sub_id)
    finally:
        stop.set()
        for m in machines:
            m.kick()
        await asyncio.wait_for(asyncio.gather(*running), BOUND)
    # Both workers attempted some: the failures really came from two places.
    assert all(m.attempted for m in machines)


# --- the recorder: what one batch of outcomes, or two racing, does to the counter -----------


async def leased(hooks: Hooks, count: int) -> list[Claimed]:
    for _ in range(count):
        await hooks.fire()
    got = await hooks.dispatcher().claim(count)
    assert len(got) == count
    return got


def failed(c: Claimed, at: datetime, status: DeliveryStatus = "failed") -> Outcome:
    made = c.attempts_made + 1
    return Outcome(
        delivery_id=c.id,
        subscription_id=c.subscription_id,
        lease_until=c.lease_until,
        status=status,
        attempts_made=made,
        next_attempt_at=None,
        completed_at=at,
        attempt={
            "id": new_id(),
            "delivery_id": c.id,
            "number": made,
            "started_at": at,
            "duration_ms": 3,
            "status_code": 200 if status == "succeeded" else 500,
            "error": None,
            "response_body": "ok",
        },
        counts="success" if status == "succeeded" else "failure",
    )


@asynccontextmanager
async def subscription_locked(engine: AsyncEngine, sub_id: uuid.UUID) -> AsyncIterator[int]:
    """Holds the subscription's row lock (PostgreSQL) until the block ends, so what queues
    behind it meets there and races once it is released; yields the holder's backend pid."""
    async with engine.begin() as conn:
        await conn.execute(
            select(Subscription.id).where(Subscription.id == sub_id).with_for_update()
        )
        yield int(await conn.scalar(text("SELECT pg_backend_pid()")) or 0)


async def blocked_by(engine: AsyncEngine, pid: int) -> int:
    """How many backends wait for `pid`, directly or behind another waiter (the second in a
    row lock's queue waits for the first)."""
    async with engine.connect() as conn:
        count = await conn.scalar(
            text(
                "WITH RECURSIVE waiting(pid) AS ("
                " SELECT pid FROM pg_stat_activity WHERE :pid = ANY(pg_blocking_pids(pid))"
                " UNION SELECT a.pid FROM pg_stat_activity AS a"
                " JOIN waiting AS w ON w.pid = ANY(pg_blocking_pids(a.pid)))"
                " SELECT count(*) FROM waiting"
            ),
            {"pid": pid},
        )
    return int(count or 0)


@pytest.mark.skipif(not PG_URL, reason="row locks and two machines: PostgreSQL's")
async def test_two_recorders_racing_disable_at_exactly_five(
    hooks: Hooks, database_url: str
) -> None:
    # Three failures in: each recorder has four more, and both are held at the
    # subscription's row until both are there, so they settle as close together as can be.
    engine = hooks.services.engine
    sub_id = await hooks.subscribe(consecutive_failures=3)
    claims = await leased(hooks, 8)
    t0 = hooks.clock.now()
    firsts = [failed(c, t0 + timedelta(seconds=i)) for i, c in enumerate(claims[:4], start=1)]
    seconds = [failed(c, t0 + timedelta(seconds=i)) for i, c in enumerate(claims[4:], start=5)]
    engines = [make_engine(database_url) for _ in range(2)]
    recorders: list[Recorder[Claimed]] = [Recorder(e) for e in engines]
    before = disabled_so_far()
    try:
        async with subscription_locked(engine, sub_id) as holder:
            writes = [
                asyncio.gather(*(recorder.write(o) for o in batch))
                for recorder, batch in zip(recorders, (firsts, seconds), strict=True)
            ]
            racing = asyncio.gather(*writes)

            async def both_wait() -> bool:
                return await blocked_by(engine, holder) == 2

            await until(both_wait, "both recorders reach the subscription's row")
        held = await asyncio.wait_for(racing, BOUND)
    finally:
        for e in engines:
            await e.dispose()

    assert [list(h) for h in held] == [[True] * 4, [True] * 4]
    enabled, failures, disabled_at = await subscription(engine, sub_id)
    assert (enabled, failures) == (False, 5)
    # When the fifth failed: the second of whichever batch went first.
    assert disabled_at in (t0 + timedelta(seconds=2), t0 + timedelta(seconds=6))
    assert disabled_so_far() == before + 1
    assert await deliveries(engine, sub_id) == [("failed", 1)] * 8


@pytest.mark.parametrize(
    ("start", "statuses", "expected"),
    [
        (2, ["failed"] * 6, 5),  # 2 + 6 capped: the fifth disables, the rest do not count
        (0, ["succeeded", *["failed"] * 7], 5),  # a success first, then more than enough
        (4, ["failed", "succeeded"], 5),  # the fifth disables; the late success changes nothing
    ],
)
async def test_one_batch_counts_up_to_five_and_stops(
    hooks: Hooks, start: int, statuses: list[DeliveryStatus], expected: int
) -> None:
    sub_id = await hooks.subscribe(consecutive_failures=start)
    claims = await leased(hooks, len(statuses))
    t0 = hooks.clock.now()
    recorder: Recorder[Claimed] = Recorder(hooks.services.engine)
    before = disabled_so_far()
    outcomes = [
        failed(c, t0 + timedelta(seconds=i), s)
        for i, (c, s) in enumerate(zip(claims, statuses, strict=True), start=1)
    ]
    # Written as one batch: queued before the writer runs.
    await asyncio.gather(*(recorder.write(o) for o in outcomes))
    enabled, failures, disabled_at = await subscription(hooks.services.engine, sub_id)
    assert (enabled, failures) == (False, expected)
    # The fifth failure's time, not the last one's.
    fifth = [o for o in outcomes if o.status == "failed"][4 - start]
    assert disabled_at == fifth.completed_at
    assert disabled_so_far() == before + 1


async def test_outcomes_of_a_disabled_subscription_leave_its_counter_alone(
    hooks: Hooks, admin: httpx.AsyncClient, other: Org
) -> None:
    sub_id = await hooks.subscribe()
    _, other_name = await other_receiver(hooks, other)
    # Leased before it was disabled, as in-flight deliveries are: they still settle.
    claims = await leased(hooks, 3)
    disabled_at = hooks.clock.now() - timedelta(minutes=1)
    async with hooks.services.engine.begin() as conn:
        await conn.execute(
            update(Subscription)
            .where(Subscription.id == sub_id)
            .values(enabled=False, consecutive_failures=5, disabled_at=disabled_at)
        )
    t0 = hooks.clock.now()
    recorder: Recorder[Claimed] = Recorder(hooks.services.engine)
    before = disabled_so_far()
    trio: tuple[DeliveryStatus, ...] = ("failed", "succeeded", "failed")
    for c, status in zip(claims, trio, strict=True):
        assert await recorder.write(failed(c, t0, status))
    assert await subscription(hooks.services.engine, sub_id) == (False, 5, disabled_at)
    assert disabled_so_far() == before
    assert await deliveries(hooks.services.engine, sub_id) == [
        ("failed", 1),
        ("succeeded", 1),
        ("failed", 1),
    ]
    await assert_says_five(hooks, admin, sub_id, other_name)


async def test_a_retry_in_flight_when_disabled_is_skipped_when_due(hooks: Hooks) -> None:
    hooks.receiver.statuses = [500]
    sub_id = await hooks.subscribe(consecutive_failures=4)
    await hooks.fire()
    await hooks.fire()
    # The first delivery is on its last attempt, the second on its first.
    engine = hooks.services.engine
    async with engine.begin() as conn:
        first = await conn.scalar(
            select(Delivery.id)
            .where(Delivery.subscription_id == sub_id)
            .order_by(Delivery.created_at, Delivery.id)
            .limit(1)
        )
        await conn.execute(update(Delivery).where(Delivery.id == first).values(attempts_made=2))
    work = hooks.dispatcher()
    assert await work.run_once() == 2  # both fail: the fifth failed delivery disables
    assert await subscription(engine, sub_id) == (False, 5, hooks.clock.now())
    assert sorted(await deliveries(engine, sub_id)) == [("failed", 3), ("pending", 1)]

    hooks.clock.advance(seconds=2)
    assert await work.run_once() == 1
    # Not attempted again: skipped, as every pending delivery of a disabled subscription.
    assert len(hooks.receiver.requests) == 2
    assert sorted(await deliveries(engine, sub_id)) == [("failed", 3), ("skipped", 1)]
    assert (await subscription(engine, sub_id))[:2] == (False, 5)


@pytest.mark.parametrize(
    ("enabled", "failures", "words"),
    [
        (False, 5, SAYS_FIVE),
        (False, 0, "Disabled"),  # after a Test
        (True, 1, "Enabled, 1 consecutive failed delivery"),
        (True, 4, "Enabled, 4 consecutive failed deliveries"),
        (True, 0, "Enabled"),
    ],
)
def test_the_status_says_the_run_in_words(enabled: bool, failures: int, words: str) -> None:
    sub = cast(SubscriptionView, {"enabled": enabled, "consecutive_failures": failures})
    assert status_words(sub) == words
