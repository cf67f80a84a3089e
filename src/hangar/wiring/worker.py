"""The background process of hangar: the webhook dispatcher and the per-minute scheduler,
with the one list of scheduled jobs.

Runs inside `hangar serve` (unless --no-worker) and alone as `hangar worker`.
"""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import Mapping

from hangar import retention
from hangar.fleet.mel_expiry import expire_mel_items
from hangar.jobs.scheduler import Done, Job, JobRun, run_every_minute
from hangar.kit.container import Services
from hangar.kit.tasks import ended
from hangar.orgs import service as org_service
from hangar.webhooks.delivery import alerts
from hangar.webhooks.delivery.sender import Sender
from hangar.webhooks.delivery.worker import DeliveryWorker

log = logging.getLogger("hangar.worker")


async def mel_expiry(run: JobRun) -> Done:
    return {"expired": await expire_mel_items(run.services.engine, run.now)}


async def webhook_alerts(run: JobRun) -> Done:
    # Who an organization's admins are is orgs' to say; webhooks does not import it.
    return await alerts.send_due(run, org_service.admins_of)


# Every scheduled job, by the name `hangar jobs run` and the job_ticks table know it by, in
# the order a tick runs them: the product's own first, then the housekeeping.
JOBS: Mapping[str, Job] = {
    "mel-expiry": mel_expiry,
    "webhook-alerts": webhook_alerts,
    "retention": retention.prune,
}


class Worker:
    def __init__(
        self, services: Services, sender: Sender | None = None, jobs: Mapping[str, Job] = JOBS
    ) -> None:
        self._services = services
        self._jobs = jobs
        self.deliveries = DeliveryWorker(services, sender)
        self.dispatcher = self.deliveries.dispatcher
        # Set while a LISTEN connection is up (PostgreSQL): for tests and health.
        self.listening = self.deliveries.listening
        self._stop = asyncio.Event()
        self._scheduler: asyncio.Task[None] | None = None

    async def start(self) -> None:
        await self.deliveries.start()
        self._scheduler = asyncio.create_task(
            run_every_minute(self._services, self._stop, self._jobs)
        )

    async def stop(self) -> None:
        self._stop.set()
        self.deliveries.request_stop()
        scheduler = [self._scheduler] if self._scheduler is not None else []
        await asyncio.gather(self.deliveries.stop(), *scheduler, return_exceptions=True)

    def failure(self) -> str | None:
        """Why this worker is no longer alive: its dispatcher or its scheduler ended before
        it was asked to stop (GET /api/health/live answers 503 with it); None otherwise."""
        if self._stop.is_set():
            return None
        if self._scheduler is not None:
            why = ended("scheduler", self._scheduler)
            if why is not None:
                return why
        return self.deliveries.failure()

    def request_stop(self) -> None:
        """Stop soon (a signal): the scheduler and the dispatcher start nothing new from now
        on, while `stop` (or `run_forever`) waits for what is under way."""
        if not self._stop.is_set():
            log.info("stopping: claiming nothing more, finishing the attempts under way")
        self._stop.set()
        self.deliveries.request_stop()

    async def run_forever(self) -> None:
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, self.request_stop)
        await self.start()
        try:
            await self._stop.wait()
        finally:
            await self.stop()
