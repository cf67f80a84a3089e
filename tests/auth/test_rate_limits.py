"""Per-key limits: 60 per calendar minute, 1000 per calendar hour, 429 the only signal."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import httpx
import pytest
from redis.asyncio import Redis
from sqlalchemy import select

from hangar.foundation.crypto import token_digest
from hangar.keys.models import ApiKey
from hangar.kit.ratelimit import (
    API_LIMITS,
    Limit,
    MemoryRateLimiter,
    RateLimiter,
    RedisRateLimiter,
)
from tests.fixtures.environment import REDIS_URL
from tests.fixtures.factories import Org
from tests.fixtures.fakes import FakeClock

AIRCRAFT = "/api/v1/external/aircraft"
MINUTE, HOUR = API_LIMITS
QUOTA_HEADERS = ("x-ratelimit-remaining", "x-ratelimit-reset", "retry-after", "x-ratelimit-limit")


def at(hour: int, minute: int, second: int = 0) -> datetime:
    return datetime(2026, 5, 4, hour, minute, second, tzinfo=UTC)


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


async def spend_of_the_hour(
    limiter: RateLimiter, org: Org, key: str, now: datetime, uses: int
) -> None:
    """`uses` of `key`'s hour at `now`, counted straight into the limiter, none refused."""
    async with org.engine.connect() as conn:
        key_id = await conn.scalar(select(ApiKey.id).where(ApiKey.key_hash == token_digest(key)))
    for _ in range(uses):
        assert await limiter.hit(f"key:{key_id}", (HOUR,), now) is None


def assert_429(response: httpx.Response, label: str) -> None:
    assert response.status_code == 429, response.text
    body = response.json()
    assert set(body) == {"detail", "code"}
    assert body["code"] == "RATE_LIMITED"
    assert label in body["detail"]
    assert_no_quota_headers(response)


def assert_no_quota_headers(response: httpx.Response) -> None:
    for header in QUOTA_HEADERS:
        assert header not in response.headers, header


async def burst(client: httpx.AsyncClient, key: str, n: int) -> list[int]:
    return [(await client.get(AIRCRAFT, headers=bearer(key))).status_code for _ in range(n)]


# Through the API, with the app's limiter (Redis when configured, else in memory).


async def test_the_61st_request_of_a_minute_is_429_until_the_top_of_the_next(
    client: httpx.AsyncClient, org: Org, clock: FakeClock
) -> None:
    key = await org.key_with("read:aircraft")
    clock.set(at(10, 0, 0))
    assert await burst(client, key, 30) == [200] * 30
    clock.set(at(10, 0, 59))
    ok = await client.get(AIRCRAFT, headers=bearer(key))
    assert ok.status_code == 200
    assert_no_quota_headers(ok)
    assert await burst(client, key, 29) == [200] * 29

    assert_429(await client.get(AIRCRAFT, headers=bearer(key)), "60/min")
    assert_429(await client.get(AIRCRAFT, headers=bearer(key)), "60/min")

    clock.set(at(10, 1, 0))
    assert await burst(client, key, 60) == [200] * 60
    assert_429(await client.get(AIRCRAFT, headers=bearer(key)), "60/min")


async def test_the_1001st_request_of_an_hour_is_429_until_the_top_of_the_next(
    client: httpx.AsyncClient, org: Org, clock: FakeClock, limiter: RateLimiter
) -> None:
    key = await org.key_with("read:aircraft")
    clock.set(at(10, 30, 0))
    await spend_of_the_hour(limiter, org, key, clock.now(), 999)  # the hour's first 999 uses

    assert (await client.get(AIRCRAFT, headers=bearer(key))).status_code == 200
    assert_429(await client.get(AIRCRAFT, headers=bearer(key)), "1000/hour")
    clock.set(at(10, 59, 59))  # a fresh minute does not help
    assert_429(await client.get(AIRCRAFT, headers=bearer(key)), "1000/hour")

    clock.set(at(11, 0, 0))
    assert (await client.get(AIRCRAFT, headers=bearer(key))).status_code == 200


async def test_requests_refused_by_the_minute_limit_do_not_spend_the_hour(
    client: httpx.AsyncClient, org: Org, clock: FakeClock, limiter: RateLimiter
) -> None:
    key = await org.key_with("read:aircraft")
    clock.set(at(10, 0, 10))
    assert await burst(client, key, 60) == [200] * 60
    assert await burst(client, key, 40) == [429] * 40  # refused: not counted

    clock.set(at(10, 1, 0))
    await spend_of_the_hour(limiter, org, key, clock.now(), 1000 - 60 - 1)
    assert (await client.get(AIRCRAFT, headers=bearer(key))).status_code == 200
    assert_429(await client.get(AIRCRAFT, headers=bearer(key)), "1000/hour")


async def test_each_key_has_its_own_budget(
    client: httpx.AsyncClient, org: Org, other: Org, clock: FakeClock
) -> None:
    one = await org.key_with("read:aircraft")
    two = await org.key_with("read:aircraft")
    assert await burst(client, one, 60) == [200] * 60
    assert_429(await client.get(AIRCRAFT, headers=bearer(one)), "60/min")

    assert await burst(client, two, 60) == [200] * 60
    assert_429(await client.get(AIRCRAFT, headers=bearer(two)), "60/min")
    assert (await client.get(AIRCRAFT, headers=org.auth)).status_code == 200
    assert (await client.get(AIRCRAFT, headers=other.auth)).status_code == 200


async def test_every_operation_shares_the_keys_budget(
    client: httpx.AsyncClient, org: Org, clock: FakeClock
) -> None:
    paths = [
        "/api/v1/external/reservations",
        AIRCRAFT,
        "/api/v1/external/squawks",
        "/api/v1/external/members",
        "/api/v1/external/maintenance-logs",
        "/api/v1/external/work-orders",
    ]
    for i in range(60):
        path = paths[i % len(paths)]
        assert (await client.get(path, headers=org.auth)).status_code == 200, path
    feed = await client.get("/api/v1/external/reservations.ics", params={"token": org.key})
    assert_429(feed, "60/min")
    for path in paths:
        assert_429(await client.get(path, headers=org.auth), "60/min")


async def test_concurrent_requests_get_exactly_the_limit(
    client: httpx.AsyncClient, org: Org, clock: FakeClock
) -> None:
    key = await org.key_with("read:aircraft")
    responses = await asyncio.gather(
        *(client.get(AIRCRAFT, headers=bearer(key)) for _ in range(90))
    )
    codes = sorted(r.status_code for r in responses)
    assert codes == [200] * 60 + [429] * 30


# The limiters themselves, both kinds.


@pytest.fixture(params=["memory", "redis"])
async def any_limiter(request: pytest.FixtureRequest) -> AsyncIterator[RateLimiter]:
    if request.param == "memory":
        yield MemoryRateLimiter()
        return
    if not REDIS_URL:
        pytest.skip("HANGAR_TEST_REDIS_URL is not set")
    # Room for 200 connections at once, so that every hit below is truly in flight together.
    client = Redis.from_url(REDIS_URL, max_connections=256)
    yield RedisRateLimiter(client, f"hangar-test-{uuid.uuid4().hex[:12]}")
    await client.aclose()


def fresh_subject() -> str:
    return f"key:{uuid.uuid4()}"


async def test_limiter_minute_window_is_the_calendar_minute(any_limiter: RateLimiter) -> None:
    subject = fresh_subject()
    for _ in range(60):
        assert await any_limiter.hit(subject, API_LIMITS, at(10, 0, 59)) is None
    refused = await any_limiter.hit(subject, API_LIMITS, at(10, 0, 59))
    assert refused == MINUTE
    assert refused.label == "60/min"
    assert await any_limiter.hit(subject, API_LIMITS, at(10, 1, 0)) is None


async def test_limiter_minute_window_does_not_slide(any_limiter: RateLimiter) -> None:
    subject = fresh_subject()
    for _ in range(60):
        assert await any_limiter.hit(subject, API_LIMITS, at(10, 0, 0)) is None
    assert await any_limiter.hit(subject, API_LIMITS, at(10, 0, 59)) == MINUTE


async def test_limiter_hour_allows_1000_then_resets_at_the_top_of_the_hour(
    any_limiter: RateLimiter,
) -> None:
    subject = fresh_subject()
    allowed = 0
    refused: list[Limit] = []
    for minute in range(17):
        for _ in range(61):
            outcome = await any_limiter.hit(subject, API_LIMITS, at(10, minute, 30))
            if outcome is None:
                allowed += 1
            else:
                refused.append(outcome)
    assert allowed == 1000
    assert refused[-1] == HOUR
    assert refused[-1].label == "1000/hour"
    assert await any_limiter.hit(subject, API_LIMITS, at(10, 59, 59)) == HOUR
    assert await any_limiter.hit(subject, API_LIMITS, at(11, 0, 0)) is None


async def test_limiter_counts_nothing_it_refuses(any_limiter: RateLimiter) -> None:
    subject = fresh_subject()
    limits = (Limit(2, 60, "2/min"), Limit(5, 3600, "5/hour"))
    results = [await any_limiter.hit(subject, limits, at(10, 0, 5)) for _ in range(10)]
    assert results == [None, None] + [limits[0]] * 8
    results = [await any_limiter.hit(subject, limits, at(10, 1, 5)) for _ in range(3)]
    assert results == [None, None, limits[0]]
    results = [await any_limiter.hit(subject, limits, at(10, 2, 5)) for _ in range(2)]
    assert results == [None, limits[1]]


async def test_limiter_subjects_are_independent(any_limiter: RateLimiter) -> None:
    one, two = fresh_subject(), fresh_subject()
    for _ in range(60):
        assert await any_limiter.hit(one, API_LIMITS, at(10, 0, 0)) is None
    assert await any_limiter.hit(one, API_LIMITS, at(10, 0, 0)) == MINUTE
    assert await any_limiter.hit(two, API_LIMITS, at(10, 0, 0)) is None


async def test_limiter_is_atomic_under_concurrency(any_limiter: RateLimiter) -> None:
    subject = fresh_subject()
    outcomes = await asyncio.gather(
        *(any_limiter.hit(subject, API_LIMITS, at(10, 0, 0)) for _ in range(200))
    )
    assert sum(o is None for o in outcomes) == 60
    assert all(o in (None, MINUTE) for o in outcomes)


@pytest.mark.skipif(not REDIS_URL, reason="HANGAR_TEST_REDIS_URL is not set")
async def test_redis_limiters_on_separate_clients_share_one_budget() -> None:
    assert REDIS_URL
    prefix = f"hangar-test-{uuid.uuid4().hex[:12]}"
    clients = [Redis.from_url(REDIS_URL) for _ in range(4)]
    try:
        limiters = [RedisRateLimiter(c, prefix) for c in clients]
        subject = fresh_subject()
        outcomes = await asyncio.gather(
            *(limiters[i % 4].hit(subject, API_LIMITS, at(10, 0, 0)) for i in range(200))
        )
        assert sum(o is None for o in outcomes) == 60
        # The hour is shared too: 60 a minute from alternating processes stops at 1000.
        allowed = 60
        for minute in range(1, 17):
            for i in range(60):
                if await limiters[i % 2].hit(subject, API_LIMITS, at(10, minute, 0)) is None:
                    allowed += 1
        assert allowed == 1000
        assert await limiters[3].hit(subject, API_LIMITS, at(10, 59, 0)) == HOUR
    finally:
        for c in clients:
            await c.aclose()


@pytest.mark.skipif(not REDIS_URL, reason="HANGAR_TEST_REDIS_URL is not set")
async def test_redis_counters_expire_after_their_window() -> None:
    assert REDIS_URL
    client = Redis.from_url(REDIS_URL)
    prefix = f"hangar-test-{uuid.uuid4().hex[:12]}"
    try:
        await RedisRateLimiter(client, prefix).hit(fresh_subject(), API_LIMITS, at(10, 0, 0))
        keys = [k async for k in client.scan_iter(match=f"{prefix}:*")]
        assert len(keys) == 2
        ttls = sorted([await client.ttl(k) for k in keys])
        assert 60 < ttls[0] <= 120
        assert 3600 < ttls[1] <= 3660
    finally:
        await client.aclose()
