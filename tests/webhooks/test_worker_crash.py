"""A worker killed with SIGKILL mid-attempt loses nothing: after its lease the delivery is
attempted again, with the same delivery id."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from datetime import timedelta
from pathlib import Path

import trustme
from sqlalchemy import select

from hangar.services import Services
from hangar.webhooks.dispatcher import Dispatcher
from hangar.webhooks.models import Delivery
from hangar.webhooks.sender import Sender
from tests.conftest import SECRET
from tests.factories import Org
from tests.support import FakeClock
from tests.webhooks.conftest import Receiver
from tests.webhooks.test_dispatcher import deliveries, fire, subscribe


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
    ca_file = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    env = {
        **os.environ,
        "HANGAR_DATABASE_URL": services.settings.database_url,
        "HANGAR_SECRET_KEY": SECRET,
        "SSL_CERT_FILE": str(ca_file),
        "PYTHONPATH": str(repo_root),
    }
    env.pop("HANGAR_REDIS_URL", None)
    await fire(services, org)  # recorded before the worker starts: its first claim finds it
    worker = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.webhooks.worker_process",
        cwd=repo_root,
        env=env,
        stdout=asyncio.subprocess.PIPE,
    )
    try:
        assert worker.stdout is not None
        assert (await asyncio.wait_for(worker.stdout.readline(), 30)).strip() == b"worker ready"
        for _ in range(300):  # until the receiver holds the worker's request
            if receiver.requests:
                break
            await asyncio.sleep(0.05)
        assert len(receiver.requests) == 1
        worker.send_signal(signal.SIGKILL)
        await worker.wait()
    finally:
        if worker.returncode is None:
            worker.kill()
            await worker.wait()

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
