"""A real HTTPS receiver on loopback for delivery tests, with a trustme certificate.

The dispatcher reaches it through the injected resolver (hooks.example.com → 127.0.0.1) and
an address rule that admits loopback: injected by the test, never a setting.
"""

from __future__ import annotations

import asyncio
import ipaddress
import ssl
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import pytest
import trustme
from aiohttp import web
from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncEngine

from hangar.webhooks.models import Delivery
from hangar.webhooks.sender import Sender
from hangar.webhooks.url_policy import IPAddress
from tests.support import FakeResolver

HOST = "hooks.example.com"


@dataclass
class Received:
    headers: dict[str, str]
    body: bytes
    path: str


@dataclass
class Receiver:
    port: int
    requests: list[Received] = field(default_factory=list)
    # What to answer, in order; the last one repeats.
    statuses: list[int] = field(default_factory=lambda: [200])
    delay: float = 0.0
    slow_paths: dict[str, float] = field(default_factory=dict)
    body: bytes = b"ok"
    location: str | None = None

    def url(self, path: str = "/hook") -> str:
        return f"https://{HOST}:{self.port}{path}"

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self.requests.append(Received(dict(request.headers), await request.read(), request.path))
        delay = self.slow_paths.get(request.path, self.delay)
        if delay:
            await asyncio.sleep(delay)
        status = self.statuses[min(len(self.requests), len(self.statuses)) - 1]
        headers = {"Location": self.location} if self.location else {}
        return web.Response(status=status, body=self.body, headers=headers)


def loopback_only(ip: IPAddress) -> bool:
    return ip == ipaddress.ip_address("127.0.0.1")


@pytest.fixture(autouse=True)
async def empty_queue(engine: AsyncEngine) -> None:
    """The run shares one database: a dispatcher here must see only this test's deliveries,
    not those other tests left pending."""
    async with engine.begin() as conn:
        await conn.execute(
            update(Delivery).where(Delivery.status == "pending").values(status="skipped")
        )


@pytest.fixture(scope="session")
def ca() -> trustme.CA:
    return trustme.CA()


@asynccontextmanager
async def https_receiver(ca: trustme.CA) -> AsyncIterator[Receiver]:
    """A real HTTPS endpoint on 127.0.0.1 for HOST, with a certificate from `ca`."""
    server_ssl = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert(HOST).configure_cert(server_ssl)
    state = Receiver(port=0)
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", state.handle)
    # Cancel a handler whose client went away (a killed worker, a timed-out attempt).
    runner = web.AppRunner(app, access_log=None, handler_cancellation=True)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=server_ssl)
    await site.start()
    state.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield state
    finally:
        await runner.cleanup()


@pytest.fixture
async def receiver(ca: trustme.CA) -> AsyncIterator[Receiver]:
    async with https_receiver(ca) as state:
        yield state


@pytest.fixture
def sender(ca: trustme.CA, resolver: FakeResolver) -> Sender:
    resolver.answers[HOST] = ["127.0.0.1"]
    client_ssl = ssl.create_default_context()
    ca.configure_trust(client_ssl)
    return Sender(resolver, ssl_context=client_ssl, is_allowed=loopback_only)
