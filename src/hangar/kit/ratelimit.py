"""Fixed calendar-window counters: API rate limits now, and any per-thing budget later.

A window is aligned to the epoch (the top of the minute, the top of the hour), so a bucket
resets at a known instant. A request is counted only if every limit still has room: a
client refused by the minute limit does not burn its hour budget.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol, TypeVar

from redis.asyncio import Redis
from redis.exceptions import RedisError

from hangar.foundation.metrics import REDIS_ERRORS, REDIS_UP

log = logging.getLogger("hangar")
_T = TypeVar("_T")


@dataclass(frozen=True)
class Limit:
    count: int
    seconds: int
    label: str  # how the limit is named to clients, e.g. "60/min"

    def resets_in(self, now: datetime) -> int:
        """Seconds until this limit's current window ends (at least 1)."""
        return self.seconds - int(now.timestamp()) % self.seconds


API_LIMITS = (Limit(60, 60, "60/min"), Limit(1000, 3600, "1000/hour"))

# A subject and its limits: one thing's budget (a client address's sign-ins, a mailbox's mail).
Budget = tuple[str, tuple[Limit, ...]]


class RateLimiter(Protocol):
    async def hit(self, subject: str, limits: tuple[Limit, ...], now: datetime) -> Limit | None:
        """Count one use of `subject`; return the limit that refuses it, or None if allowed."""
        ...

    async def exceeded(
        self, subject: str, limits: tuple[Limit, ...], now: datetime
    ) -> Limit | None:
        """The limit `subject` has used up, without counting a use (budgets spent by failures)."""
        ...

    async def give_back(self, subject: str, limits: tuple[Limit, ...], now: datetime) -> None:
        """Uncount one use that `hit` counted at `now` (a try that turned out not to spend
        the budget), never below zero: budgets are taken before the work they bound, so
        that concurrent tries cannot all pass one check before any is counted."""
        ...


def _window(limit: Limit, now: datetime) -> int:
    return int(now.timestamp()) // limit.seconds


class MemoryRateLimiter:
    """For a single process. The check-and-count has no await in it, so it is atomic."""

    def __init__(self) -> None:
        self._counts: dict[tuple[str, int, int], int] = {}
        self._last_sweep = 0

    async def hit(self, subject: str, limits: tuple[Limit, ...], now: datetime) -> Limit | None:
        self._sweep(now)
        keys = [(subject, limit.seconds, _window(limit, now)) for limit in limits]
        for key, limit in zip(keys, limits, strict=True):
            if self._counts.get(key, 0) >= limit.count:
                return limit
        for key in keys:
            self._counts[key] = self._counts.get(key, 0) + 1
        return None

    async def exceeded(
        self, subject: str, limits: tuple[Limit, ...], now: datetime
    ) -> Limit | None:
        for limit in limits:
            if self._counts.get((subject, limit.seconds, _window(limit, now)), 0) >= limit.count:
                return limit
        return None

    async def give_back(self, subject: str, limits: tuple[Limit, ...], now: datetime) -> None:
        for limit in limits:
            key = (subject, limit.seconds, _window(limit, now))
            if self._counts.get(key, 0) > 0:
                self._counts[key] -= 1

    def _sweep(self, now: datetime) -> None:
        # Drop counters of windows that have closed, at most once a minute.
        minute = int(now.timestamp()) // 60
        if minute == self._last_sweep:
            return
        self._last_sweep = minute
        ts = int(now.timestamp())
        self._counts = {k: v for k, v in self._counts.items() if k[2] == ts // k[1]}


# Check every window first, then count in all of them: one round trip, atomic in Redis.
_HIT_SCRIPT = """
for i = 1, #KEYS do
  local used = tonumber(redis.call('GET', KEYS[i]) or '0')
  if used >= tonumber(ARGV[2 * i - 1]) then return i end
end
for i = 1, #KEYS do
  if redis.call('INCR', KEYS[i]) == 1 then redis.call('EXPIRE', KEYS[i], ARGV[2 * i]) end
end
return 0
"""


_GIVE_BACK_SCRIPT = """
for i = 1, #KEYS do
  if tonumber(redis.call('GET', KEYS[i]) or '0') > 0 then redis.call('DECR', KEYS[i]) end
end
return 0
"""


class RedisRateLimiter:
    """Shared by every process that serves the API.

    When Redis cannot be reached, or does not answer within `timeout` seconds (a bound for
    a Redis that hangs, generous enough that a burst queued on a busy one never meets it),
    the limits are still enforced, by in-process counters: per process rather than shared,
    so the API keeps answering instead of failing every request. Redis is tried again
    `recheck` seconds after the failure was seen (not after the failed request began: a
    hung Redis takes the whole timeout to fail), and then by one request only, while the
    others keep counting in-process until it answers; so a Redis that stays down costs one
    request per `recheck` a wait, not every request. /api/health reports Redis as down,
    /api/health/ready's checks and the hangar_redis_up gauge say so (the instance stays ready).
    """

    def __init__(
        self,
        redis: Redis,
        prefix: str,
        *,
        timeout: float = 3.0,
        recheck: float = 5.0,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._redis = redis
        self._prefix = prefix
        self._script = redis.register_script(_HIT_SCRIPT)
        self._give_back = redis.register_script(_GIVE_BACK_SCRIPT)
        self._timeout = timeout
        self._recheck = recheck
        # Outage bookkeeping runs on real elapsed time, not on the request clock the caller
        # passes in, which names the rate-limit window and stands still in tests.
        self._monotonic = monotonic
        self._fallback = MemoryRateLimiter()
        self._down_until: float | None = None
        self._probing = False
        REDIS_UP.set(1)  # until a call says otherwise

    def _keys(self, subject: str, limits: tuple[Limit, ...], now: datetime) -> list[str]:
        return [f"{self._prefix}:rl:{subject}:{lim.seconds}:{_window(lim, now)}" for lim in limits]

    async def _on_redis(self, call: Callable[[], Awaitable[_T]]) -> _T | None:
        """`call()` on Redis, or None when it is (still) down and the fallback must answer."""
        probe = False
        if self._down_until is not None:
            if self._probing or self._monotonic() < self._down_until:
                return None
            self._probing = probe = True
        try:
            async with asyncio.timeout(self._timeout):
                result = await call()
        except (RedisError, OSError, TimeoutError) as exc:
            REDIS_ERRORS.inc()
            REDIS_UP.set(0)
            if self._down_until is None:
                log.warning("rate limits: Redis unreachable (%r); counting in-process", exc)
            self._down_until = self._monotonic() + self._recheck
            return None
        finally:
            if probe:
                self._probing = False
        if self._down_until is not None:
            log.warning("rate limits: Redis answers again; counting in Redis")
            REDIS_UP.set(1)
            self._down_until = None
        return result

    async def hit(self, subject: str, limits: tuple[Limit, ...], now: datetime) -> Limit | None:
        keys = self._keys(subject, limits, now)
        args: list[int] = []
        for limit in limits:
            args += [limit.count, limit.seconds + 60]
        refused = await self._on_redis(lambda: self._script(keys=keys, args=args))
        if refused is None:
            return await self._fallback.hit(subject, limits, now)
        index = int(refused)
        return limits[index - 1] if index else None

    async def exceeded(
        self, subject: str, limits: tuple[Limit, ...], now: datetime
    ) -> Limit | None:
        used = await self._on_redis(lambda: self._redis.mget(self._keys(subject, limits, now)))
        if used is None:
            return await self._fallback.exceeded(subject, limits, now)
        for limit, count in zip(limits, used, strict=True):
            if count is not None and int(count) >= limit.count:
                return limit
        return None

    async def give_back(self, subject: str, limits: tuple[Limit, ...], now: datetime) -> None:
        keys = self._keys(subject, limits, now)
        if await self._on_redis(lambda: self._give_back(keys=keys)) is None:
            await self._fallback.give_back(subject, limits, now)


async def take(limiter: RateLimiter, budgets: Sequence[Budget], now: datetime) -> Limit | None:
    """One use counted in every budget, before the work they bound (each count atomic, so
    concurrent takers cannot all pass one check); or, when one is spent, none counted and
    the limit that refuses."""
    taken: list[Budget] = []
    for subject, limits in budgets:
        refused = await limiter.hit(subject, limits, now)
        if refused is not None:
            await give_back(limiter, taken, now)
            return refused
        taken.append((subject, limits))
    return None


async def give_back(limiter: RateLimiter, budgets: Sequence[Budget], now: datetime) -> None:
    """Uncount what `take` counted at `now`: the use turned out not to spend the budgets."""
    for subject, limits in budgets:
        await limiter.give_back(subject, limits, now)
