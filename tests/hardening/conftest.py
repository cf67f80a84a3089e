"""Fixtures of the hardening tests: tripwire listeners, a cheaply signed-in admin, and the
delivery fixtures of tests/webhooks (real loopback HTTPS receivers with trustme)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import httpx
import pytest

from hangar.kit.container import Services
from tests.fixtures.clients import signed_in_as
from tests.fixtures.factories import Org
from tests.fixtures.network import Listener, Tripwire
from tests.fixtures.receivers import ca, empty_queue, receiver, sender  # noqa: F401


@pytest.fixture
async def admin(services: Services, org: Org) -> AsyncIterator[httpx.AsyncClient]:
    """The organization's own admin (made by make_org), signed in cheaply."""
    async with signed_in_as(services, org.admin_id) as client:
        yield client


@pytest.fixture
async def listener() -> AsyncIterator[Listener]:
    state = Listener()
    await state.start()
    yield state
    await state.stop()


@pytest.fixture
async def tripwire(listener: Listener, monkeypatch: pytest.MonkeyPatch) -> Tripwire:
    loop = asyncio.get_running_loop()
    wire = Tripwire(listener, loop.sock_connect)
    monkeypatch.setattr(loop, "sock_connect", wire.sock_connect)
    return wire
