"""A 429 waits for the next calendar bucket, a 503 backs off; both bounded, neither sleeps
for real (the client's sleep moves the test's clock, which the server's limiter reads)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
from sqlalchemy import select

from hangar.db.engine import make_engine
from hangar.keys.models import ApiKey
from hangar.kit.container import Services
from hangar.kit.ratelimit import API_LIMITS
from hangar_client import RateLimited, RetryPolicy, ServiceUnavailable
from tests.fixtures.factories import Org
from tests.fixtures.fakes import START
from tests.fixtures.python_client import Counting, Harness, asgi

HOUR = next(limit for limit in API_LIMITS if limit.seconds == 3600)


async def use_up_the_hour(services: Services, org: Org) -> None:
    """The key's hour budget spent (counting a thousand real requests would be slow)."""
    async with org.engine.connect() as conn:
        key_id = await conn.scalar(select(ApiKey.id).where(ApiKey.org_id == org.id))
    for _ in range(HOUR.count):
        await services.limiter.hit(f"key:{key_id}", (HOUR,), services.clock.now())


async def test_a_429_waits_for_the_next_minute_then_succeeds(
    harness: Harness, org: Org, other: Org
) -> None:
    assert START.second == 30
    async with harness.client(org.key) as api:
        for _ in range(60):
            await api.aircraft()
        assert harness.slept == []
        await api.aircraft()  # the 61st of this minute
    assert harness.slept == [30.5]  # to the top of the minute, and half the 1 s jitter
    assert harness.clock.now() == datetime(2026, 5, 4, 10, 1, 0, 500000, tzinfo=UTC)
    assert len(harness.transport.sent) == 62  # the refused request, then once more


async def test_an_hourly_429_beyond_the_bound_raises_without_waiting(
    harness: Harness, services: Services, org: Org
) -> None:
    await use_up_the_hour(services, org)
    async with harness.client(org.key) as api:
        with pytest.raises(RateLimited) as refused:
            await api.aircraft()
    assert refused.value.code == "RATE_LIMITED"
    assert "1000/hour" in refused.value.detail
    assert harness.slept == []


async def test_an_hourly_429_within_the_bound_waits_for_the_next_hour(
    harness: Harness, services: Services, org: Org
) -> None:
    await use_up_the_hour(services, org)
    async with harness.client(org.key, RetryPolicy(max_rate_limit_wait=3600)) as api:
        assert await api.aircraft() == []
    assert harness.slept == [60 * 59 + 30 + 0.5]
    assert harness.clock.now() == datetime(2026, 5, 4, 11, 0, 0, 500000, tzinfo=UTC)


async def test_429_retries_are_bounded(harness: Harness, org: Org) -> None:
    async with harness.client(org.key, RetryPolicy(max_rate_limit_retries=0)) as api:
        for _ in range(60):
            await api.aircraft()
        with pytest.raises(RateLimited) as refused:
            await api.aircraft()
    assert "60/min" in refused.value.detail
    assert harness.slept == []


@dataclass
class Outage(httpx.AsyncBaseTransport):
    """The first `failures` requests go to a hangar whose database is unreachable (it
    answers its real 503), the rest to the healthy one."""

    down: httpx.AsyncBaseTransport
    up: httpx.AsyncBaseTransport
    failures: int

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if self.failures > 0:
            self.failures -= 1
            return await self.down.handle_async_request(request)
        return await self.up.handle_async_request(request)


@pytest.fixture
async def dead(services: Services, tmp_path: Path) -> AsyncIterator[Services]:
    engine = make_engine(f"sqlite:///{tmp_path / 'no' / 'such' / 'hangar.db'}")
    yield replace(services, engine=engine)
    await engine.dispose()


async def test_a_503_is_retried_with_backoff(
    harness: Harness, services: Services, dead: Services, org: Org
) -> None:
    harness.transport = Counting(Outage(asgi(dead), asgi(services), failures=2))
    async with harness.client(org.key) as api:
        assert await api.aircraft() == []
    # Equal jitter at random 0.5: three quarters of 0.5 s, then of 1 s.
    assert harness.slept == [0.375, 0.75]
    assert len(harness.transport.sent) == 3


async def test_a_lasting_503_raises_after_the_bounded_retries(
    harness: Harness, dead: Services, org: Org
) -> None:
    harness.transport = Counting(asgi(dead))
    policy = RetryPolicy(max_unavailable_retries=5, backoff_cap=2.0)
    async with harness.client(org.key, policy) as api:
        with pytest.raises(ServiceUnavailable) as refused:
            await api.aircraft()
    assert refused.value.code == "SERVICE_UNAVAILABLE"
    assert refused.value.status == 503
    assert harness.slept == [0.375, 0.75, 1.5, 1.5, 1.5]
