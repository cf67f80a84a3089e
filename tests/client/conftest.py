"""Fixtures of the Python client's tests: the client with an organization's key, over the
test's app and clock (tests/fixtures/python_client.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from hangar.kit.container import Services
from hangar_client import AsyncClient
from tests.fixtures.factories import Org
from tests.fixtures.fakes import FakeClock
from tests.fixtures.python_client import Counting, Harness, asgi


@pytest.fixture
def harness(services: Services, clock: FakeClock) -> Harness:
    return Harness(clock, Counting(asgi(services)))


@pytest.fixture
async def api(harness: Harness, org: Org, other: Org) -> AsyncIterator[AsyncClient]:
    """The client with `org`'s key (every scope); `other` exists and must never show up."""
    async with harness.client(org.key) as client:
        yield client
