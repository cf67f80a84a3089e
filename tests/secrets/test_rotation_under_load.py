"""A rotation under load: events keep coming while the workers restart, one at a time, with the
new key (as docs/operators/rotate.md's steps do), and every delivery arrives exactly once,
signed with the same subscription secret as before, including the secret of a subscription a
restarted process created (sealed with the new key).

On PostgreSQL two workers share the queue, so the restart is rolled in
docs/operators/rotate.md's two steps: first every worker also accepts the new key, then each
swaps to it; at every moment both kinds run at once. On SQLite one process delivers: it
stops and starts again with the new key, and what was pending when it stopped is delivered
by the restarted one.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager

from gidgethub.sansio import validate_event
from sqlalchemy import func, select

from hangar.db.engine import make_engine
from hangar.kit.container import Services
from hangar.webhooks.delivery.dispatcher import Dispatcher
from hangar.webhooks.delivery.sender import Sender
from hangar.webhooks.models import Delivery
from hangar.webhooks.subscriptions.signing_secrets import new_secret
from tests.fixtures.environment import PG_URL
from tests.fixtures.factories import Org
from tests.fixtures.key_rotation import NEW_KEY, OLD_KEY, holding
from tests.fixtures.receivers import Receiver
from tests.fixtures.webhooks import fire, subscribe

# The keys of each worker process, step by step (current key first).
Keys = tuple[str, ...]
OLD: Keys = (OLD_KEY,)
ACCEPTS_NEW: Keys = (OLD_KEY, NEW_KEY)
ROTATED: Keys = (NEW_KEY, OLD_KEY)
TWO_WORKERS: list[list[Keys]] = [
    [OLD, OLD],
    [OLD, ACCEPTS_NEW],
    [ACCEPTS_NEW, ACCEPTS_NEW],
    [ACCEPTS_NEW, ROTATED],
    [ROTATED, ROTATED],
]
ONE_WORKER: list[list[Keys]] = [[OLD], [ROTATED]]
EVENTS_PER_STEP = 6
BOUND_SECONDS = 30.0


@asynccontextmanager
async def worker(services: Services, sender: Sender, keys: Keys) -> AsyncIterator[Dispatcher]:
    """One worker process holding `keys`, with its own connections, delivering until the
    block ends; then it stops as on SIGTERM (what it holds in flight is finished)."""
    engine = make_engine(services.settings.database_url)
    held = holding(services, *keys, engine=engine)
    dispatcher = Dispatcher(engine, held.clock, sender, held.secret_box)
    stop = asyncio.Event()
    running = asyncio.create_task(dispatcher.run(stop))
    try:
        yield dispatcher
    finally:
        stop.set()
        dispatcher.kick()
        await asyncio.wait_for(running, BOUND_SECONDS)
        await engine.dispose()


async def test_a_rolling_rotation_loses_no_delivery_and_keeps_every_secret(
    services: Services, org: Org, receiver: Receiver, sender: Sender
) -> None:
    secrets: dict[str, str] = {}  # by the receiver's path
    subs: list[uuid.UUID] = []

    async def subscribed(path: str, by: Services) -> None:
        secrets[path] = new_secret()
        sealed = by.secret_box.seal(secrets[path])
        url = receiver.url(path)
        subs.append(await subscribe(services, org, url, secret_encrypted=sealed, secret_prefix="x"))

    for n in range(3):
        await subscribed(f"/before-{n}", holding(services, *OLD))
    steps = TWO_WORKERS if PG_URL else ONE_WORKER
    started = time.monotonic()
    pending_at_restarts: list[int] = []
    for number, step in enumerate(steps):
        async with AsyncExitStack() as processes:
            workers = [
                await processes.enter_async_context(worker(services, sender, keys)) for keys in step
            ]
            if step[-1] == ROTATED and not any(p.startswith("/during") for p in secrets):
                # An admin adds a subscription on a process that has restarted with the new key.
                await subscribed("/during", holding(services, *ROTATED))
            for _ in range(EVENTS_PER_STEP):
                await fire(services, org)
                for w in workers:
                    w.kick()
            if number == len(steps) - 1:
                await delivered(services, subs, receiver, started)
            else:
                # The step ends (its workers stop) with deliveries still pending: the next
                # step's workers take them over.
                pending_at_restarts.append(await pending(services, subs))

    arrived = Counter(r.headers["X-Service-Delivery"] for r in receiver.requests)
    async with services.engine.connect() as conn:
        rows = (
            await conn.execute(
                select(Delivery.id, Delivery.status).where(Delivery.subscription_id.in_(subs))
            )
        ).all()
    assert sum(pending_at_restarts) > 0  # the keys changed mid-stream
    assert {str(r.id) for r in rows} == set(arrived)
    assert set(arrived.values()) == {1}
    assert {r.status for r in rows} == {"succeeded"}
    # Every step's events reached every subscription that existed then (the one added during
    # the rotation joins midway).
    assert len(rows) > len(steps) * EVENTS_PER_STEP * 3
    for got in receiver.requests:
        validate_event(
            got.body, signature=got.headers["X-Service-Signature"], secret=secrets[got.path]
        )


async def pending(services: Services, subs: list[uuid.UUID]) -> int:
    async with services.engine.connect() as conn:
        found = await conn.scalar(
            select(func.count())
            .select_from(Delivery)
            .where(Delivery.subscription_id.in_(subs), Delivery.status == "pending")
        )
    return found or 0


async def delivered(
    services: Services, subs: list[uuid.UUID], receiver: Receiver, started: float
) -> None:
    """Until every delivery to `subs` has finished (bounded)."""
    while await pending(services, subs):
        assert time.monotonic() - started < BOUND_SECONDS, (
            f"{len(receiver.requests)} delivered; some are still pending"
        )
        await asyncio.sleep(0.02)
