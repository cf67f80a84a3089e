"""Against hangar itself: a 429 waits for the next calendar bucket and says which one, a 503
waits for its Retry-After; both bounded, neither sleeps for real (the client's sleep moves
the test's clock, which the server's limiter reads)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from sqlalchemy import select

from hangar.keys.models import ApiKey
from hangar.kit.container import Services
from hangar.kit.ratelimit import API_LIMITS
from hangar_client import RateLimited, RetryPolicy, ServerError, ServiceUnavailable
from tests.fixtures.client_transports import Outage
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
    assert refused.value.bucket == "hour"
    assert refused.value.resets_at == datetime(2026, 5, 4, 11, 0, tzinfo=UTC)
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
    assert refused.value.bucket == "minute"
    assert refused.value.resets_at == datetime(2026, 5, 4, 10, 1, tzinfo=UTC)
    assert harness.slept == []


async def test_a_503_is_retried_after_the_retry_after_it_asks_for(
    harness: Harness, services: Services, dead: Services, org: Org
) -> None:
    harness.transport = Counting(Outage(asgi(dead), asgi(services), failures=2))
    async with harness.client(org.key) as api:
        assert await api.aircraft() == []
    # hangar's 503 says Retry-After: 5, longer than the backoff (0.375 s, then 0.75 s).
    assert harness.slept == [5.0, 5.0]
    assert len(harness.transport.sent) == 3


async def test_a_lasting_503_raises_after_the_bounded_retries(
    harness: Harness, dead: Services, org: Org
) -> None:
    harness.transport = Counting(asgi(dead))
    async with harness.client(org.key) as api:
        with pytest.raises(ServiceUnavailable) as refused:
            await api.aircraft()
    assert refused.value.code == "SERVICE_UNAVAILABLE"
    assert refused.value.status == 503
    assert isinstance(refused.value, ServerError)
    assert harness.slept == [5.0, 5.0]  # max_retries=2 by default: three attempts
    assert len(harness.transport.sent) == 3


async def test_1_2s_max_unavailable_retries_still_bounds_them_and_the_cap_binds(
    harness: Harness, dead: Services, org: Org
) -> None:
    harness.transport = Counting(asgi(dead))
    policy = RetryPolicy(max_unavailable_retries=5, backoff_cap=2.0)
    async with harness.client(org.key, policy) as api:
        with pytest.raises(ServiceUnavailable):
            await api.aircraft()
    assert harness.slept == [2.0] * 5  # Retry-After: 5, but never past backoff_cap
    assert len(harness.transport.sent) == 6
