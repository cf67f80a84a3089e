"""Fixtures of the Python client's tests: the client with an organization's key, over the
test's app and clock (tests/fixtures/python_client.py), and a plain-http receiver on
loopback for `hangar-client listen` (which forwards to the developer's own machine)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest
from aiohttp import web

from hangar.db.engine import make_engine
from hangar.kit.container import Services
from hangar_client import AsyncClient
from tests.fixtures.factories import Org
from tests.fixtures.fakes import FakeClock
from tests.fixtures.python_client import Counting, Harness, asgi
from tests.fixtures.receivers import Receiver


@pytest.fixture
def harness(services: Services, clock: FakeClock) -> Harness:
    return Harness(clock, Counting(asgi(services)))


@pytest.fixture
async def api(harness: Harness, org: Org, other: Org) -> AsyncIterator[AsyncClient]:
    """The client with `org`'s key (every scope); `other` exists and must never show up."""
    async with harness.client(org.key) as client:
        yield client


@pytest.fixture
async def loopback() -> AsyncIterator[Receiver]:
    """A receiver at http://127.0.0.1:{port}, recording what it is sent."""
    state = Receiver(port=0)
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", state.handle)
    runner = web.AppRunner(app, access_log=None, handler_cancellation=True)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    state.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield state
    finally:
        await runner.cleanup()


@pytest.fixture
async def dead(services: Services, tmp_path: Path) -> AsyncIterator[Services]:
    """The app's services with a database that cannot be reached: hangar answers its 503."""
    engine = make_engine(f"sqlite:///{tmp_path / 'no' / 'such' / 'hangar.db'}")
    yield replace(services, engine=engine)
    await engine.dispose()
