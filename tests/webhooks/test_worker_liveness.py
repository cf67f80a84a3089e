"""A worker is alive while its dispatcher and scheduler run (issue 40: `hangar worker` had no
health endpoint): GET /api/health/live on its metrics port answers 200, and 503 with why once
either ended without being asked to stop. Stopping is not dying."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from hangar.kit.container import Services
from hangar.webhooks.delivery.sender import Sender
from hangar.wiring.worker import Worker
from hangar.wiring.worker_metrics import metrics_app
from tests.fixtures.subprocesses import eventually

BOUND = 15.0


async def live(services: Services, worker: Worker) -> httpx.Response:
    app = metrics_app(services, worker.failure)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://worker") as client:
        return await client.get("/api/health/live")


async def test_a_worker_whose_dispatcher_died_is_not_alive(
    services: Services, sender: Sender, monkeypatch: pytest.MonkeyPatch
) -> None:
    worker = Worker(services, sender)
    await worker.start()
    try:
        answer = await live(services, worker)
        assert answer.status_code == 200, answer.text
        assert answer.json() == {"status": "alive"}

        broken = Worker(services, sender)

        async def dies(stop: asyncio.Event) -> None:
            raise RuntimeError("the dispatcher's loop broke")

        monkeypatch.setattr(broken.dispatcher, "run", dies)
        await broken.start()
        await eventually(broken.failure, BOUND, "the dispatcher's end seen")
        answer = await live(services, broken)
        assert answer.status_code == 503, answer.text
        body = answer.json()
        assert body["code"] == "SERVICE_UNAVAILABLE"
        assert body["status"] == "not alive"
        assert body["detail"] == (
            'Not alive: the dispatcher stopped: RuntimeError("the dispatcher\'s loop broke")'
        )
        # Asked to stop, it is stopping, not dead.
        broken.request_stop()
        assert broken.failure() is None
        await broken.stop()
    finally:
        await worker.stop()
