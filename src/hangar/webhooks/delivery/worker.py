"""The webhook half of the worker process (hangar.wiring.worker.Worker): the dispatcher, and what
wakes it.

The dispatcher wakes at once on new work: LISTEN/NOTIFY on PostgreSQL (the NOTIFY is sent by the
transaction that recorded the event, and arrives only if it commits); on SQLite, the
connection that recorded deliveries kicks it when it goes back to the pool, after commit.
Either names the subscriptions given new work, which the dispatcher claims for first.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

import asyncpg
from sqlalchemy import event

from hangar.db.engine import CONNECT_TIMEOUT_S
from hangar.kit.container import Services
from hangar.kit.tasks import ended
from hangar.webhooks.delivery.dispatcher import Dispatcher
from hangar.webhooks.delivery.sender import Sender
from hangar.webhooks.events.outbox import NOTIFY_CHANNEL, WAKE_FLAG, woken_subscriptions

log = logging.getLogger("hangar.worker")

LISTEN_RETRY_MIN = 1.0
LISTEN_RETRY_MAX = 30.0


class DeliveryWorker:
    def __init__(self, services: Services, sender: Sender | None = None) -> None:
        self._services = services
        # Its kept-alive connections are closed with the worker, when the sender is its own.
        self._own_sender: Sender | None = None
        if sender is None:
            sender = self._own_sender = Sender(services.resolver)
        self.dispatcher = Dispatcher(services.engine, services.clock, sender, services.secret_box)
        self._stop = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        # Set while a LISTEN connection is up (PostgreSQL): for tests and health.
        self.listening = asyncio.Event()

    async def start(self) -> None:
        self._tasks = [
            asyncio.create_task(self._listen()),
            asyncio.create_task(self.dispatcher.run(self._stop)),
        ]

    async def stop(self) -> None:
        self._stop.set()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._own_sender is not None:
            await self._own_sender.close()
        engine = self._services.engine
        if engine.dialect.name == "sqlite" and event.contains(
            engine.sync_engine.pool, "checkin", self._on_checkin
        ):
            event.remove(engine.sync_engine.pool, "checkin", self._on_checkin)

    def request_stop(self) -> None:
        self._stop.set()

    def failure(self) -> str | None:
        """Why this worker no longer delivers, if its dispatcher ended before it was asked
        to stop (the liveness probe's answer); None while it delivers, or once stopping."""
        if self._stop.is_set() or len(self._tasks) < 2:
            return None
        return ended("dispatcher", self._tasks[1])

    async def _listen(self) -> None:
        engine = self._services.engine
        if engine.dialect.name != "postgresql":
            event.listen(engine.sync_engine.pool, "checkin", self._on_checkin)
            return
        dsn = self._services.settings.database_url.replace("postgresql://", "postgres://", 1)
        backoff = LISTEN_RETRY_MIN
        # A LISTEN connection can be lost (restart, failover, idle cut): without this loop the
        # worker would silently fall back to polling for good.
        while not self._stop.is_set():
            if await self._listen_until_lost(dsn):
                backoff = LISTEN_RETRY_MIN
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), backoff)
            backoff = min(backoff * 2, LISTEN_RETRY_MAX)

    async def _listen_until_lost(self, dsn: str) -> bool:
        """LISTENs until the connection is lost or the worker stops; False if it never could."""
        lost = asyncio.Event()
        try:
            conn = await asyncpg.connect(dsn, timeout=CONNECT_TIMEOUT_S)
        except Exception as exc:
            log.warning("cannot LISTEN for new deliveries (%s); polling until it can", exc)
            return False
        try:
            conn.add_termination_listener(lambda _conn: lost.set())
            await conn.add_listener(NOTIFY_CHANNEL, self._on_notify)
            self.listening.set()
            self.dispatcher.kick()  # deliveries may have been recorded while we were deaf
            waits = [asyncio.ensure_future(lost.wait()), asyncio.ensure_future(self._stop.wait())]
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
            for w in waits:
                w.cancel()
            if lost.is_set():
                log.warning("lost the LISTEN connection; reconnecting")
            return True
        except Exception as exc:
            log.warning("LISTEN failed (%s); polling until it can", exc)
            return False
        finally:
            self.listening.clear()
            with contextlib.suppress(Exception):
                await conn.close()

    def _on_notify(self, _conn: Any, _pid: int, _channel: str, payload: str) -> None:
        self.dispatcher.kick(woken_subscriptions(payload))

    def _on_checkin(self, _dbapi: Any, record: Any) -> None:
        woken = record.info.pop(WAKE_FLAG, None)
        if woken is not None:
            self.dispatcher.kick(woken)
