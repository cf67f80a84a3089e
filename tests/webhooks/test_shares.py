"""The claim's shares (hangar.webhooks.delivery.states): no organization waits for another, whatever
mix of slow endpoints the others have.

- one organization's endpoints that all hang hold at most ORG_MAX_IN_FLIGHT attempts;
- one destination that hangs, subscribed to by many organizations, holds at most
  DESTINATION_MAX_IN_FLIGHT;
- a subscription whose attempts time out has one in flight until one is answered, and the
  subscriptions timing out at one destination share DESTINATION_MAX_IN_FLIGHT_TIMING_OUT;
- a dispatcher's last slots go only to organizations with nothing in flight;

and meanwhile a healthy organization's delivery is claimed at the next claim. Endpoints that
hang are held unanswered by the receiver (no clock to wait on); timeouts are a sender's
injected, short one.
"""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Callable

import pytest
import trustme
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncEngine

from hangar.db.engine import make_engine
from hangar.kit.container import Services
from hangar.webhooks.delivery.dispatcher import Dispatcher
from hangar.webhooks.delivery.sender import Sender
from hangar.webhooks.delivery.states import (
    DESTINATION_MAX_IN_FLIGHT,
    DESTINATION_MAX_IN_FLIGHT_TIMING_OUT,
    MAX_IN_FLIGHT,
    ORG_MAX_IN_FLIGHT,
    is_in_flight,
)
from hangar.webhooks.events import outbox
from hangar.webhooks.models import Delivery, Subscription
from tests.fixtures.environment import PG_URL
from tests.fixtures.factories import Org, make_org
from tests.fixtures.fakes import FakeClock, FakeResolver
from tests.fixtures.receivers import HOST, Receiver, https_receiver, loopback_sender
from tests.fixtures.subprocesses import eventually
from tests.fixtures.webhooks import DATA, deliveries, subscribe

BOUND = 15.0  # seconds any wait here may take before it fails
CLAIM = 50  # the most one claim takes (Dispatcher's batch)
EVENT = "squawk.created"


async def until(condition: Callable[[], object], why: str) -> None:
    await eventually(condition, BOUND, why)


async def backlog(services: Services, orgs: list[Org], count: int) -> None:
    """`count` events of each organization, in one transaction."""
    async with services.engine.begin() as conn:
        for org in orgs:
            for _ in range(count):
                await outbox.record(conn, org.id, [EVENT], DATA, services.clock.now())


async def flying(engine: AsyncEngine, now: object, **where: object) -> int:
    """Attempts in flight (live leases), of an organization (org_id=) or to a destination."""
    async with engine.connect() as conn:
        stmt = (
            select(func.count())
            .select_from(Delivery)
            .join(Subscription, Subscription.id == Delivery.subscription_id)
            .where(is_in_flight(now))
        )
        if "org_id" in where:
            stmt = stmt.where(Delivery.org_id == where["org_id"])
        if "destination" in where:
            stmt = stmt.where(Subscription.destination == where["destination"])
        return int(await conn.scalar(stmt) or 0)


@pytest.fixture
async def healthy_receiver(ca: trustme.CA) -> AsyncIterator[Receiver]:
    """Another endpoint, on a port (so a destination) of its own."""
    async with https_receiver(ca) as state:
        yield state


class Running:
    """Production dispatchers running until the test ends: one, or one per machine."""

    def __init__(self, *dispatchers: Dispatcher) -> None:
        self.dispatchers = dispatchers
        self.stop = asyncio.Event()
        self.tasks = [asyncio.create_task(d.run(self.stop)) for d in dispatchers]

    def kick(self) -> None:
        """As a commit's NOTIFY (or SQLite's signal) wakes every worker."""
        for d in self.dispatchers:
            d.kick()

    async def asleep(self) -> None:
        for d in self.dispatchers:
            await asyncio.wait_for(d.asleep.wait(), BOUND)

    async def end(self, *releases: asyncio.Event) -> None:
        for release in releases:
            release.set()
        self.stop.set()
        self.kick()
        await asyncio.wait_for(asyncio.gather(*self.tasks), BOUND)


@pytest.fixture(params=[1, 2], ids=["one worker", "two workers"])
async def running(
    request: pytest.FixtureRequest,
    services: Services,
    sender: Sender,
    ca: trustme.CA,
    resolver: FakeResolver,
    closing: Callable[[Sender], Sender],
    database_url: str,
) -> AsyncIterator[Callable[[], Running]]:
    """Starts one production dispatcher, or two as on two machines, each with an engine and a
    sender of its own (PostgreSQL: SQLite's one process has one). Two workers' leases may pass
    a destination's share by a claim, and a sender's pool holds a destination's share of
    connections: shared, the pool would keep the attempts past it waiting for a connection."""
    if request.param == 2 and not PG_URL:
        pytest.skip("several workers share the queue on PostgreSQL only")
    engines = [services.engine, *(make_engine(database_url) for _ in range(request.param - 1))]
    senders = [sender, *(closing(loopback_sender(ca, resolver)) for _ in engines[1:])]
    try:
        yield lambda: Running(
            *(
                Dispatcher(e, services.clock, s, services.secret_box)
                for e, s in zip(engines, senders, strict=True)
            )
        )
    finally:
        for extra in engines[1:]:
            await extra.dispose()


async def healthy_delivery_arrives(
    services: Services, org: Org, receiver: Receiver, running: Running
) -> None:
    """Org's event, fired now, is delivered while the others' endpoints still hang."""
    await subscribe(services, org, receiver.url("/healthy"))
    async with services.engine.begin() as conn:
        await outbox.record(conn, org.id, [EVENT], DATA, services.clock.now())
    running.kick()
    await until(lambda: receiver.heard("/healthy"), "the healthy delivery waited")


async def test_one_organizations_hanging_endpoints_hold_at_most_its_share(
    services: Services, org: Org, other: Org, receiver: Receiver, healthy_receiver: Receiver,
    running: Callable[[], Running],
) -> None:  # fmt: skip
    # Case (a) of issue 39: 20 subscriptions, each with a backlog, that never answer.
    hang = asyncio.Event()
    for i in range(20):
        receiver.held_paths[f"/dead/{i}"] = hang
        await subscribe(services, org, receiver.url(f"/dead/{i}"))
    await backlog(services, [org], 2 * MAX_IN_FLIGHT)
    workers = running()
    try:
        await until(
            lambda: sum(receiver.in_flight.values()) >= ORG_MAX_IN_FLIGHT,
            "the organization never reached its share",
        )
        await workers.asleep()
        # Its share, not its 20 x 10: the dispatchers have slots left, and sleep. (Two
        # workers claim for its subscriptions under the same row locks: neither passes it.)
        assert await flying(services.engine, services.clock.now(), org_id=org.id) == (
            ORG_MAX_IN_FLIGHT
        )
        await healthy_delivery_arrives(services, other, healthy_receiver, workers)
        assert sum(receiver.in_flight.values()) == ORG_MAX_IN_FLIGHT
    finally:
        await workers.end(hang)


async def test_one_destination_that_hangs_holds_at_most_its_share_across_organizations(
    services: Services, other: Org, receiver: Receiver, healthy_receiver: Receiver,
    running: Callable[[], Running],
) -> None:  # fmt: skip
    # Case (b) of issue 39: 200 organizations, each subscribed once to the same partner,
    # whose endpoint hangs.
    hang = asyncio.Event()
    receiver.held_paths["/partner"] = hang
    orgs = [await make_org(services.engine, f"Club {n}") for n in range(200)]
    for org in orgs:
        await subscribe(services, org, receiver.url("/partner"))
    await backlog(services, orgs, 2)
    destination = f"{HOST}:{receiver.port}"
    workers = running()
    try:
        await until(
            lambda: receiver.in_flight["/partner"] >= DESTINATION_MAX_IN_FLIGHT,
            "the destination never reached its share",
        )
        await workers.asleep()
        # Two workers claiming at the same moment for different organizations each see the
        # other's leases only once committed: together they may pass the share by one claim.
        over = (len(workers.dispatchers) - 1) * CLAIM
        held = await flying(services.engine, services.clock.now(), destination=destination)
        assert DESTINATION_MAX_IN_FLIGHT <= held <= DESTINATION_MAX_IN_FLIGHT + over
        await healthy_delivery_arrives(services, other, healthy_receiver, workers)
        # Every leased attempt reaches the endpoint, none beyond: on a loaded machine the
        # second worker's fifty new TLS connections may still be opening as the healthy
        # delivery arrives.
        await until(
            lambda: receiver.in_flight["/partner"] == held, "a leased attempt never arrived"
        )
        assert receiver.most_in_flight["/partner"] == held
    finally:
        await workers.end(hang)


async def test_the_last_slots_go_to_organizations_with_nothing_in_flight(
    services: Services, org: Org, other: Org, receiver: Receiver, sender: Sender
) -> None:
    hang = asyncio.Event()
    late = [await make_org(services.engine, f"Late {n}") for n in range(2)]
    for owner in (org, other, *late):
        receiver.held_paths[f"/{owner.id}"] = hang
        await subscribe(services, owner, receiver.url(f"/{owner.id}"))
    await backlog(services, [org, other], 2 * MAX_IN_FLIGHT)
    # Eight slots, two of them the reserve: two busy organizations fill six, and leave two.
    small = Dispatcher(services.engine, services.clock, sender, services.secret_box, concurrency=8)
    assert small.reserve == 2
    small.concurrency = 2  # as the workers of tests/operations set theirs after construction
    assert small.reserve == 0  # a quarter of what it has, not of what it was built with
    small.concurrency = 8
    running = Running(small)
    try:
        await until(lambda: sum(receiver.in_flight.values()) == 6, "the first six never went")
        await asyncio.wait_for(small.asleep.wait(), BOUND)
        assert sum(receiver.in_flight.values()) == 6  # asleep with two free: the reserve

        # Each organization with nothing in flight gets one of them when its event comes.
        def more_than(count: int) -> Callable[[], bool]:
            return lambda: sum(receiver.in_flight.values()) > count

        for newcomer in late:
            before = sum(receiver.in_flight.values())
            await backlog(services, [newcomer], 2)
            small.kick()
            await until(more_than(before), "the reserve was not used")
        await asyncio.wait_for(small.asleep.wait(), BOUND)
        now = services.clock.now()
        by_org = [await flying(services.engine, now, org_id=o.id) for o in (org, other, *late)]
    finally:
        await running.end(hang)
    assert by_org == [3, 3, 1, 1]  # in turn across the busy two; one each for the newcomers


async def test_a_claim_takes_organizations_in_turn_before_their_subscriptions(
    services: Services, org: Org, other: Org, receiver: Receiver, sender: Sender
) -> None:
    # Org has three subscriptions, other one, each with a delivery due: a claim of two takes
    # one of each organization, not two of the one with more subscriptions.
    ours = [await subscribe(services, org, receiver.url(f"/ours/{i}")) for i in range(3)]
    theirs = await subscribe(services, other, receiver.url("/theirs"))
    await backlog(services, [org], 1)
    await backlog(services, [other], 1)
    dispatcher = Dispatcher(services.engine, services.clock, sender, services.secret_box)
    claimed = await dispatcher.claim(2)
    assert sorted(c.subscription_id in ours for c in claimed) == [False, True]
    assert theirs in {c.subscription_id for c in claimed}


@pytest.fixture
def impatient(
    ca: trustme.CA, resolver: FakeResolver, closing: Callable[[Sender], Sender]
) -> Sender:
    """A sender whose timeout is a tenth of a second (production's: 10 s)."""
    return closing(loopback_sender(ca, resolver, timeout=0.1))


async def timing_out_since(engine: AsyncEngine, sub_id: uuid.UUID) -> object:
    async with engine.connect() as conn:
        return await conn.scalar(
            select(Subscription.timing_out_since).where(Subscription.id == sub_id)
        )


async def test_a_subscription_that_times_out_has_one_attempt_in_flight_until_answered(
    services: Services, org: Org, receiver: Receiver, impatient: Sender, clock: FakeClock
) -> None:
    hang = asyncio.Event()
    receiver.held_paths["/slow"] = hang
    sub_id = await subscribe(services, org, receiver.url("/slow"))
    await backlog(services, [org], 3 * MAX_IN_FLIGHT)
    work = Dispatcher(services.engine, clock, impatient, services.secret_box)

    assert await work.run_once(50) == MAX_IN_FLIGHT  # not yet known to time out: ten
    assert await timing_out_since(services.engine, sub_id) == clock.now()
    clock.advance(seconds=2)  # their retries are due too
    for _ in range(3):
        assert await work.run_once(50) == 1  # a probe at a time
        clock.advance(seconds=1)

    hang.set()  # it answers again
    assert await work.run_once(50) == 1
    assert await timing_out_since(services.engine, sub_id) is None
    assert await work.run_once(50) == MAX_IN_FLIGHT  # and has its ten again
    assert ("succeeded", 1) in await deliveries(services.engine, sub_id)


async def test_subscriptions_timing_out_at_one_destination_share_a_few_attempts_in_flight(
    services: Services, other: Org, receiver: Receiver, impatient: Sender, clock: FakeClock
) -> None:
    # Case (b) of issue 39 once its subscriptions are known to time out: one probe each
    # would still be a burst of a hundred timeouts and new connections every 10 s, on the
    # event loop that serves every organization. Together they get a few; a subscription
    # at the same destination that answers is not held back by them.
    hang = asyncio.Event()
    orgs = [await make_org(services.engine, f"Club {n}") for n in range(15)]
    slow = []
    for n, owner in enumerate(orgs):
        receiver.held_paths[f"/partner/{n}"] = hang
        slow.append(await subscribe(services, owner, receiver.url(f"/partner/{n}")))
    await backlog(services, orgs, 2)
    work = Dispatcher(services.engine, clock, impatient, services.secret_box)
    try:
        assert await work.run_once(50) == 30  # not yet known to time out
        assert all([await timing_out_since(services.engine, s) for s in slow])
        healthy = await subscribe(services, other, receiver.url("/partner-ok"))
        await backlog(services, [other], 3)
        clock.advance(seconds=2)  # the retries are due

        first = await work.claim(50)
        by_subscription = Counter(c.subscription_id for c in first)
        assert by_subscription.pop(healthy) == 3  # its own cap, not the timing-out share
        assert sum(by_subscription.values()) == DESTINATION_MAX_IN_FLIGHT_TIMING_OUT
        assert set(by_subscription.values()) == {1}  # one probe each, in turn
        # The share is counted from live leases, as every worker's claim sees them.
        assert await work.claim(50) == []
        # And the timing-out subscriptions past it take no place of a claim's: the five
        # without a probe come first by turn, yet a claim of one takes the newcomer's.
        clock.advance(seconds=1)
        await backlog(services, [other], 1)
        assert [c.subscription_id for c in await work.claim(1)] == [healthy]
    finally:
        hang.set()
