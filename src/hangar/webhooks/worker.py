"""The background half of hangar: the webhook dispatcher and the per-minute scheduler.

Runs inside `hangar serve` (unless --no-worker) and alone as `hangar worker`. The dispatcher
wakes at once on new work: LISTEN/NOTIFY on PostgreSQL (the NOTIFY is sent by the
transaction that recorded the event, and arrives only if it commits); on SQLite, the
connection that recorded deliveries kicks it when it goes back to the pool, after commit.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from typing import Any

import asyncpg
from sqlalchemy import event

from hangar.jobs.scheduler import run_every_minute
from hangar.services import Services
from hangar.webhooks.dispatcher import Dispatcher
from hangar.webhooks.outbox import NOTIFY_CHANNEL, WAKE_FLAG
from hangar.webhooks.sender import Sender

log = logging.getLogger("hangar.worker")


class Worker:
    def __init__(self, services: Services, sender: Sender | None = None) -> None:
        self._services = services
        self.dispatcher = Dispatcher(
            services.engine,
            services.clock,
            sender or Sender(services.resolver),
            services.secret_box,
        )
        self._stop = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._listener: Any = None

    async def start(self) -> None:
        await self._listen()
        self._tasks = [
            asyncio.create_task(self.dispatcher.run(self._stop)),
            asyncio.create_task(
                run_every_minute(self._services.engine, self._services.clock, self._stop)
            ),
        ]

    async def stop(self) -> None:
        self._stop.set()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._listener is not None:
            with contextlib.suppress(Exception):
                await self._listener.close()
        engine = self._services.engine
        if engine.dialect.name == "sqlite" and event.contains(
            engine.sync_engine.pool, "checkin", self._on_checkin
        ):
            event.remove(engine.sync_engine.pool, "checkin", self._on_checkin)

    def request_stop(self) -> None:
        self._stop.set()

    async def run_forever(self) -> None:
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, self.request_stop)
        await self.start()
        try:
            await self._stop.wait()
        finally:
            await self.stop()

    async def _listen(self) -> None:
        engine = self._services.engine
        if engine.dialect.name != "postgresql":
            event.listen(engine.sync_engine.pool, "checkin", self._on_checkin)
            return
        dsn = self._services.settings.database_url.replace("postgresql://", "postgres://", 1)
        try:
            self._listener = await asyncpg.connect(dsn)
            await self._listener.add_listener(NOTIFY_CHANNEL, self._on_notify)
        except Exception:
            # Without the listener the dispatcher still finds work on its own schedule.
            log.exception("cannot LISTEN for new deliveries; polling only")

    def _on_notify(self, *_: Any) -> None:
        self.dispatcher.kick()

    def _on_checkin(self, _dbapi: Any, record: Any) -> None:
        if record.info.pop(WAKE_FLAG, False):
            self.dispatcher.kick()
