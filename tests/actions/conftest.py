"""Signed-in clients of the roles the shared conftest does not provide."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from hangar.kit.services import Services
from tests.fixtures.clients import signed_in_client
from tests.fixtures.factories import Org


@pytest.fixture
async def instructor(services: Services, org: Org) -> AsyncIterator[httpx.AsyncClient]:
    async for c in signed_in_client(services, org, "instructor"):
        yield c


@pytest.fixture
async def mechanic(services: Services, org: Org) -> AsyncIterator[httpx.AsyncClient]:
    async for c in signed_in_client(services, org, "mechanic"):
        yield c
