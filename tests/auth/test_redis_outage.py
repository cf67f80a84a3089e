"""A hung Redis (stopped, not gone: it accepts connections and never answers) costs one
request a timeout per recheck interval, counted from the failure, while every other request
is limited in-process at once.

Real time at a small scale: the timeout and the recheck interval are what is measured. A
listening socket that never accepts is exactly what a SIGSTOPped Redis looks like to a client.
"""

from __future__ import annotations

import asyncio
import itertools
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime

import pytest
from redis.asyncio import Redis

from hangar.auth.ratelimit import API_LIMITS, RedisRateLimiter

TIMEOUT = 0.5
RECHECK = 1.0
WAITED = TIMEOUT * 0.8  # a call this slow waited for Redis; the fallback answers in microseconds


@pytest.fixture
def hung_redis() -> Iterator[int]:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(256)
        yield int(listener.getsockname()[1])


@dataclass
class Call:
    started: float
    ended: float

    @property
    def waited(self) -> bool:
        return self.ended - self.started >= WAITED


async def _hits(limiter: RedisRateLimiter, subject: str, until: float) -> list[Call]:
    calls = []
    while time.monotonic() < until:
        started = time.monotonic()
        # The caller's clock is the request's start, as the app passes it.
        refused = await limiter.hit(subject, API_LIMITS, datetime.now(UTC))
        calls.append(Call(started, time.monotonic()))
        assert refused is None or refused in API_LIMITS
        await asyncio.sleep(0.01)
    return calls


async def test_the_fallback_holds_for_the_recheck_interval_from_the_failure(
    hung_redis: int,
) -> None:
    redis = Redis(host="127.0.0.1", port=hung_redis)
    limiter = RedisRateLimiter(redis, "outage", timeout=TIMEOUT, recheck=RECHECK)
    try:
        calls = await _hits(limiter, "one-client", time.monotonic() + 3.6)
    finally:
        await redis.aclose(close_connection_pool=True)
    waits = [c for c in calls if c.waited]
    assert len(waits) >= 2, "Redis was probed again"
    assert len(calls) > 10 * len(waits), "most requests were answered by the fallback at once"
    for before, after in itertools.pairwise(waits):
        # Counted from the failure (the end of the wait), not from the request's start.
        assert after.started - before.ended >= RECHECK * 0.95


async def test_only_one_request_probes_a_redis_that_is_still_down(hung_redis: int) -> None:
    redis = Redis(host="127.0.0.1", port=hung_redis, max_connections=64)
    limiter = RedisRateLimiter(redis, "outage", timeout=TIMEOUT, recheck=RECHECK)
    try:
        # The outage is found first; then twenty clients keep calling through two rechecks.
        first = await limiter.hit("first", API_LIMITS, datetime.now(UTC))
        assert first is None
        until = time.monotonic() + 2 * (RECHECK + TIMEOUT) + 0.3
        per_client = await asyncio.gather(
            *(_hits(limiter, f"client-{i}", until) for i in range(20))
        )
    finally:
        await redis.aclose(close_connection_pool=True)
    calls = [call for client in per_client for call in client]
    waits = sorted((c for c in calls if c.waited), key=lambda c: c.started)
    assert 1 <= len(waits) <= 2, [round(c.started - calls[0].started, 2) for c in waits]
    assert sum(1 for c in calls if not c.waited) > 200
