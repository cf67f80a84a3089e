"""A hung Redis (stopped, not gone: it accepts connections and never answers) costs one
request a timeout per recheck interval, counted from the failure, while every other request
is limited in-process at once.

The Redis is real in the way that matters: a listening socket that never accepts is exactly
what a SIGSTOPped Redis looks like to a client, so each probe waits out the (short) timeout
for real. The recheck interval is time the limiter reads from its injected monotonic clock:
the test moves it, and never waits for it. Probes are counted where they reach Redis, not
guessed from how long a call took, so a busy machine cannot make the counts look better or
worse.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from redis.asyncio import Redis

from hangar.kit.ratelimit import API_LIMITS, RedisRateLimiter

TIMEOUT = 0.2  # real: what a probe of a hung Redis waits
RECHECK = 5.0  # on the injected clock


class Monotonic:
    """The limiter's monotonic clock, moved by the test."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def hung_redis() -> Iterator[Redis]:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(256)
        yield Redis(host="127.0.0.1", port=listener.getsockname()[1], max_connections=64)


class Probes(list[float]):
    """When (on the limiter's clock) each call that reached Redis began."""

    def __init__(self) -> None:
        super().__init__()
        self.begun = asyncio.Event()


def probes_of(limiter: RedisRateLimiter, clock: Monotonic) -> Probes:
    started = Probes()
    script = limiter._script

    async def counted(*args: Any, **kwargs: Any) -> Any:
        started.append(clock.now)
        started.begun.set()
        return await script(*args, **kwargs)

    limiter._script = counted  # type: ignore[assignment]
    return started


async def hit(limiter: RedisRateLimiter, subject: str) -> None:
    # The caller's clock is the request's start, as the app passes it.
    refused = await limiter.hit(subject, API_LIMITS, datetime.now(UTC))
    assert refused is None or refused in API_LIMITS


async def test_the_fallback_holds_for_the_recheck_interval_from_the_failure(
    hung_redis: Redis,
) -> None:
    clock = Monotonic()
    limiter = RedisRateLimiter(
        hung_redis, "outage", timeout=TIMEOUT, recheck=RECHECK, monotonic=clock
    )
    probes = probes_of(limiter, clock)
    try:
        # The first request finds the outage; its probe hangs for the whole timeout, during
        # which (on the limiter's clock) a second passes.
        first = asyncio.create_task(hit(limiter, "one-client"))
        await asyncio.wait_for(probes.begun.wait(), 5)
        clock.now += 1.0
        await first
        failed_at = clock.now
        # Until RECHECK after the failure (not after the request began), every request is
        # answered in-process at once: none reaches Redis.
        for step in range(1, 50):
            clock.now = failed_at + RECHECK * step / 50
            await asyncio.wait_for(hit(limiter, "one-client"), TIMEOUT / 2)
        assert len(probes) == 1
        # Then the next one probes again.
        clock.now = failed_at + RECHECK
        await hit(limiter, "one-client")
    finally:
        await hung_redis.aclose(close_connection_pool=True)
    assert probes == [failed_at - 1.0, failed_at + RECHECK]


async def test_only_one_request_probes_a_redis_that_is_still_down(hung_redis: Redis) -> None:
    clock = Monotonic()
    limiter = RedisRateLimiter(
        hung_redis, "outage", timeout=TIMEOUT, recheck=RECHECK, monotonic=clock
    )
    probes = probes_of(limiter, clock)
    try:
        await hit(limiter, "first")  # finds the outage
        for window in range(1, 3):
            # A recheck is due: twenty clients call at once, then keep calling while it
            # hangs. One of them probes; the others are answered in-process meanwhile.
            clock.now += RECHECK
            calls = [asyncio.create_task(hit(limiter, f"client-{i}")) for i in range(20)]
            done, waiting = await asyncio.wait(calls, timeout=TIMEOUT / 2)
            assert len(done) == 19
            assert len(waiting) == 1  # the probe, waiting out the timeout
            await asyncio.wait_for(hit(limiter, "another"), TIMEOUT / 2)
            await asyncio.gather(*waiting)
            assert len(probes) == 1 + window
    finally:
        await hung_redis.aclose(close_connection_pool=True)
