"""A worker killed with SIGKILL mid-attempt loses nothing: after its lease each delivery is
attempted again, with the same delivery id. Alone, or a whole batch in flight."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
import trustme
from sqlalchemy import select

from hangar.kit.container import Services
from hangar.webhooks.delivery.dispatcher import Dispatcher
from hangar.webhooks.delivery.sender import Sender
from hangar.webhooks.models import Delivery
from tests.fixtures.factories import Org
from tests.fixtures.fakes import FakeClock
from tests.fixtures.receivers import Receiver
from tests.fixtures.webhooks import deliveries, fire, subscribe
from tests.fixtures.worker_process import kill_when, worker_process


@pytest.mark.parametrize("batch", [1, 6], ids=["one delivery", "a batch of six"])
async def test_sigkill_mid_attempt_leaves_every_delivery_to_be_retried(
    services: Services,
    org: Org,
    receiver: Receiver,
    sender: Sender,
    ca: trustme.CA,
    clock: FakeClock,
    repo_root: Path,
    tmp_path: Path,
    batch: int,
) -> None:
    receiver.delay = 30.0  # every attempt hangs until the worker dies
    subs = [await subscribe(services, org, receiver.url(f"/hook/{i}")) for i in range(batch)]
    # One event, one delivery per subscription, recorded before the worker starts: its first
    # claim finds them all.
    await fire(services, org)
    async with worker_process(services.settings.database_url, ca, tmp_path, repo_root) as worker:
        # The whole batch is in flight when the worker dies.
        await kill_when(worker, lambda: len(receiver.requests) == batch)

    for sub_id in subs:
        assert await deliveries(services.engine, sub_id) == [("pending", 0)]
    async with services.engine.connect() as conn:
        leases = set(
            await conn.scalars(
                select(Delivery.lease_until).where(Delivery.subscription_id.in_(subs))
            )
        )
    [lease] = leases  # one claim took the whole batch, on the worker's own (real) clock
    assert lease is not None
    # Before the lease runs out nobody else may take them; after, another worker does.
    receiver.delay = 0.0
    clock.set(lease - timedelta(seconds=1))
    survivor = Dispatcher(services.engine, clock, sender, services.secret_box)
    assert await survivor.run_once() == 0
    clock.set(lease)
    assert await survivor.run_once() == batch
    for sub_id in subs:
        assert await deliveries(services.engine, sub_id) == [("succeeded", 1)]
    assert len(receiver.requests) == 2 * batch
    first, second = receiver.requests[:batch], receiver.requests[batch:]
    assert sorted(r.path for r in first) == sorted(r.path for r in second)
    assert {r.headers["X-Service-Delivery"] for r in first} == {
        r.headers["X-Service-Delivery"] for r in second
    }
    assert all(r.body != b"" for r in first)
