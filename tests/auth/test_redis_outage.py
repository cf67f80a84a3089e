"""A hung Redis (stopped, not gone: it accepts connections and never answers) costs one
request a timeout per recheck interval, counted from the failure, while every other request
is limited in-process at once.

Real time at a small scale: the timeout and the recheck interval are what is measured. A
listening socket that never accepts is exactly what a SIGSTOPped Redis looks like to a client.
Probes are counted where they reach Redis, not guessed from how long a call took, so a busy
machine (which only slows calls down) cannot make the counts look better or worse.
"""

from __future__ import annotations

import asyncio
import itertools
import socket
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from redis.asyncio import Redis

from hangar.kit.ratelimit import API_LIMITS, RedisRateLimiter

TIMEOUT = 0.5
RECHECK = 1.0


@pytest.fixture
def hung_redis() -> Iterator[int]:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(256)
        yield int(listener.getsockname()[1])


def probes_of(limiter: RedisRateLimiter) -> list[float]:
    """When each call that the limiter sends to Redis began (the counting script's calls)."""
    started: list[float] = []
    script = limiter._script

    async def counted(*args: Any, **kwargs: Any) -> Any:
        started.append(time.monotonic())
        return await script(*args, **kwargs)

    limiter._script = counted  # type: ignore[assignment]
    return started


async def _hits(limiter: RedisRateLimiter, subject: str, until: float) -> int:
    calls = 0
    while time.monotonic() < until:
        # The caller's clock is the request's start, as the app passes it.
        refused = await limiter.hit(subject, API_LIMITS, datetime.now(UTC))
        assert refused is None or refused in API_LIMITS
        calls += 1
        await asyncio.sleep(0.01)
    return calls


async def test_the_fallback_holds_for_the_recheck_interval_from_the_failure(
    hung_redis: int,
) -> None:
    redis = Redis(host="127.0.0.1", port=hung_redis)
    limiter = RedisRateLimiter(redis, "outage", timeout=TIMEOUT, recheck=RECHECK)
    probes = probes_of(limiter)
    try:
        calls = await _hits(limiter, "one-client", time.monotonic() + 3.6)
    finally:
        await redis.aclose(close_connection_pool=True)
    assert len(probes) >= 2, "Redis was probed again"
    assert calls > 5 * len(probes), "the other requests were answered by the fallback"
    for before, after in itertools.pairwise(probes):
        # A probe waits out the timeout; the next comes a full recheck interval after that
        # failure (counting from the request's start would leave only RECHECK - TIMEOUT).
        assert after - before >= (TIMEOUT + RECHECK) * 0.95


async def test_only_one_request_probes_a_redis_that_is_still_down(hung_redis: int) -> None:
    redis = Redis(host="127.0.0.1", port=hung_redis, max_connections=64)
    limiter = RedisRateLimiter(redis, "outage", timeout=TIMEOUT, recheck=RECHECK)
    probes = probes_of(limiter)
    try:
        # The outage is found first; then twenty clients keep calling through two rechecks.
        assert await limiter.hit("first", API_LIMITS, datetime.now(UTC)) is None
        found = time.monotonic()
        until = found + 2 * (RECHECK + TIMEOUT) + 0.3
        calls = await asyncio.gather(*(_hits(limiter, f"client-{i}", until) for i in range(20)))
        ended = time.monotonic()
    finally:
        await redis.aclose(close_connection_pool=True)
    later = probes[1:]
    # One probe per recheck window at most, however many clients call meanwhile.
    windows = int((ended - found) / RECHECK) + 1
    assert 1 <= len(later) <= windows, [round(p - found, 2) for p in later]
    assert sum(calls) > 10 * windows
