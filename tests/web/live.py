"""A real hangar server for browser tests: uvicorn on a loopback port in a thread of its own,
with the webhook worker running beside it as `hangar serve` runs it.

The server has its own event loop and engine (connections belong to one loop), on the test
run's database. Webhook URLs are saved through a fake resolver that answers a public address
(the save-time policy is production's), while the worker's Sender is injected, as in
tests/webhooks, with a resolver pointing the same host at 127.0.0.1 and an address rule that
admits only loopback. Production code has no such setting.
"""

from __future__ import annotations

import asyncio
import socket
import threading
from dataclasses import dataclass, field

import uvicorn

from hangar.app import create_app
from hangar.auth.ratelimit import MemoryRateLimiter
from hangar.clock import SystemClock
from hangar.config import Settings
from hangar.crypto import derive_key
from hangar.db.engine import make_engine
from hangar.services import Services
from hangar.webhooks.sender import Sender
from hangar.webhooks.worker import Worker
from tests.conftest import SECRET
from tests.support import FakeResolver


@dataclass
class LiveServer:
    database_url: str
    sender: Sender
    resolver: FakeResolver
    port: int = 0
    _server: uvicorn.Server | None = None
    _thread: threading.Thread | None = None
    _failed: list[BaseException] = field(default_factory=list)
    _ready: threading.Event = field(default_factory=threading.Event)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        # Listening before the thread runs: early connections wait in the backlog, so there
        # is nothing to poll for.
        sock.listen(128)
        self.port = sock.getsockname()[1]
        settings = Settings(
            database_url=self.database_url,
            secret_key=SECRET,
            public_url=self.url,
            service_domain="127.0.0.1",
        )
        self._thread = threading.Thread(
            target=self._run, args=(settings, sock), name="hangar-live", daemon=True
        )
        self._thread.start()

    def _run(self, settings: Settings, sock: socket.socket) -> None:
        try:
            asyncio.run(self._main(settings, sock))
        except BaseException as exc:  # reported by stop(), not lost in the thread
            self._failed.append(exc)

    async def _main(self, settings: Settings, sock: socket.socket) -> None:
        services = Services(
            settings=settings,
            engine=make_engine(settings.database_url),
            clock=SystemClock(),
            limiter=MemoryRateLimiter(),
            redis=None,
            cursor_key=derive_key(settings.secret_key, "cursor"),
            resolver=self.resolver,
        )
        worker = Worker(services, self.sender)
        await worker.start()
        config = uvicorn.Config(
            create_app(services), lifespan="off", log_level="warning", access_log=False
        )
        self._server = uvicorn.Server(config)
        self._ready.set()
        try:
            await self._server.serve(sockets=[sock])
        finally:
            await worker.stop()
            await services.engine.dispose()

    def stop(self) -> None:
        self._ready.wait(timeout=15)
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=15)
        if self._failed:
            raise self._failed[0]
