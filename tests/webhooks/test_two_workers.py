"""Two workers as on two machines: each dispatcher has its own engine (its own connection
pool), both run at once while events are committed to ten subscriptions, and every delivery
is attempted exactly once.

PostgreSQL only: claims rely on FOR UPDATE SKIP LOCKED, which is how several machines share
the queue; SQLite is a single-machine database.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

import pytest
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncEngine

from hangar.db.engine import make_engine
from hangar.kit.container import Services
from hangar.webhooks.delivery.claims import Claimed
from hangar.webhooks.delivery.dispatcher import Dispatcher
from hangar.webhooks.delivery.sender import Sender
from hangar.webhooks.events import catalogue, outbox
from hangar.webhooks.models import Attempt, Delivery
from tests.fixtures.environment import PG_URL
from tests.fixtures.factories import Org
from tests.fixtures.receivers import Receiver
from tests.fixtures.webhooks import DATA, subscribe

pytestmark = pytest.mark.skipif(
    not PG_URL,
    reason="several machines share the queue only on PostgreSQL (FOR UPDATE SKIP LOCKED); "
    "set HANGAR_TEST_DATABASE_URL to run this",
)

EVENTS = 20
SUBSCRIPTIONS = 10  # 200 deliveries
BOUND_SECONDS = 20.0


class Machine(Dispatcher):
    """A production dispatcher that also notes what it claimed (by the loop, or in a batch
    of outcomes refilling their slots)."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.claimed: list[uuid.UUID] = []

    async def claim_on(self, conn: Any, slots: int, **how: Any) -> list[Claimed]:
        got = await super().claim_on(conn, slots, **how)
        self.claimed.extend(c.id for c in got)
        return got


@pytest.fixture
async def engines(database_url: str) -> AsyncIterator[tuple[AsyncEngine, AsyncEngine]]:
    first, second = make_engine(database_url), make_engine(database_url)
    yield first, second
    await first.dispose()
    await second.dispose()


async def test_two_machines_attempt_each_delivery_exactly_once(
    services: Services,
    org: Org,
    receiver: Receiver,
    sender: Sender,
    engines: tuple[AsyncEngine, AsyncEngine],
) -> None:
    subs = [await subscribe(services, org, receiver.url(f"/{i}")) for i in range(SUBSCRIPTIONS)]
    # Eight slots each and answers that take 50 ms: neither machine can take all the work
    # (a machine that keeps up refills its slots as it records, and would).
    receiver.delay = 0.05
    machines = [
        Machine(engine, services.clock, sender, services.secret_box, batch=20, concurrency=8)
        for engine in engines
    ]
    stop = asyncio.Event()
    started = time.monotonic()
    running = [asyncio.create_task(m.run(stop)) for m in machines]
    try:
        # Events committed one by one while both machines run; after each, both are woken,
        # as the NOTIFY of the commit wakes every worker that LISTENs.
        for _ in range(EVENTS):
            async with services.engine.begin() as conn:
                await outbox.record(
                    conn, org.id, [catalogue.SQUAWK_CREATED], DATA, services.clock.now()
                )
            for m in machines:
                m.kick()
        async with services.engine.connect() as conn:
            queued = set(
                await conn.scalars(select(Delivery.id).where(Delivery.subscription_id.in_(subs)))
            )
        assert len(queued) == SUBSCRIPTIONS * EVENTS
        while len(receiver.requests) < len(queued):
            assert time.monotonic() - started < BOUND_SECONDS, (
                f"{len(receiver.requests)} of {len(queued)} delivered"
            )
            await asyncio.sleep(0.02)
    finally:
        stop.set()
        for m in machines:
            m.kick()
        # A loop returns once its in-flight attempts are recorded.
        await asyncio.wait_for(asyncio.gather(*running), BOUND_SECONDS)

    # The receiver heard each delivery once: by its delivery id, and nothing else.
    heard = Counter(r.headers["X-Service-Delivery"] for r in receiver.requests)
    assert len(receiver.requests) == len(queued)
    assert set(heard) == {str(d) for d in queued}
    assert set(heard.values()) == {1}
    assert Counter(r.path for r in receiver.requests) == {
        f"/{i}": EVENTS for i in range(SUBSCRIPTIONS)
    }
    # Both machines worked, and never on the same delivery.
    first, second = (set(m.claimed) for m in machines)
    assert first
    assert second
    assert not first & second
    assert first | second == queued
    # Every delivery succeeded, with exactly one attempt, numbered 1.
    async with services.engine.connect() as conn:
        rows = (
            await conn.execute(
                select(
                    Delivery.id,
                    Delivery.status,
                    Delivery.attempts_made,
                    func.count(Attempt.id),
                    func.min(Attempt.number),
                    func.min(Attempt.status_code),
                )
                .outerjoin(Attempt, Attempt.delivery_id == Delivery.id)
                .where(Delivery.subscription_id.in_(subs))
                .group_by(Delivery.id, Delivery.status, Delivery.attempts_made)
            )
        ).all()
    assert {r[0] for r in rows} == queued
    assert {tuple(r[1:]) for r in rows} == {("succeeded", 1, 1, 1, 200)}
