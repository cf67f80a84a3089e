"""A worker killed with SIGKILL mid-attempt loses nothing: after its lease the delivery is
attempted again, with the same delivery id."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import trustme
from sqlalchemy import select

from hangar.kit.services import Services
from hangar.webhooks.dispatcher import Dispatcher
from hangar.webhooks.models import Delivery
from hangar.webhooks.sender import Sender
from tests.fixtures.factories import Org
from tests.fixtures.fakes import FakeClock
from tests.fixtures.receivers import Receiver
from tests.fixtures.webhooks import deliveries, fire, subscribe
from tests.fixtures.worker_process import kill_when, worker_process


async def test_sigkill_mid_attempt_leaves_the_delivery_to_be_retried(
    services: Services,
    org: Org,
    receiver: Receiver,
    sender: Sender,
    ca: trustme.CA,
    clock: FakeClock,
    repo_root: Path,
    tmp_path: Path,
) -> None:
    receiver.delay = 30.0  # the first attempt hangs until the worker dies
    sub_id = await subscribe(services, org, receiver.url())
    await fire(services, org)  # recorded before the worker starts: its first claim finds it
    async with worker_process(services.settings.database_url, ca, tmp_path, repo_root) as worker:
        await kill_when(worker, lambda: len(receiver.requests) == 1)

    assert await deliveries(services.engine, sub_id) == [("pending", 0)]
    async with services.engine.connect() as conn:
        lease = await conn.scalar(
            select(Delivery.lease_until).where(Delivery.subscription_id == sub_id)
        )
    assert lease is not None
    # Before the lease runs out nobody else may take it; after, another worker does.
    receiver.delay = 0.0
    clock.set(lease - timedelta(seconds=1))
    survivor = Dispatcher(services.engine, clock, sender, services.secret_box)
    assert await survivor.run_once() == 0
    clock.set(lease)
    assert await survivor.run_once() == 1
    assert len(receiver.requests) == 2
    first, second = receiver.requests
    assert first.headers["X-Service-Delivery"] == second.headers["X-Service-Delivery"]
    assert first.body != b""
    assert await deliveries(services.engine, sub_id) == [("succeeded", 1)]
