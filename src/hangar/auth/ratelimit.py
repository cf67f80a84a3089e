"""Fixed calendar-window counters: API rate limits now, and any per-thing budget later.

A window is aligned to the epoch (the top of the minute, the top of the hour), so a bucket
resets at a known instant. A request is counted only if every limit still has room: a
client refused by the minute limit does not burn its hour budget.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from redis.asyncio import Redis


@dataclass(frozen=True)
class Limit:
    count: int
    seconds: int
    label: str  # how the limit is named to clients, e.g. "60/min"


API_LIMITS = (Limit(60, 60, "60/min"), Limit(1000, 3600, "1000/hour"))


class RateLimiter(Protocol):
    async def hit(self, subject: str, limits: tuple[Limit, ...], now: datetime) -> Limit | None:
        """Count one use of `subject`; return the limit that refuses it, or None if allowed."""
        ...

    async def exceeded(
        self, subject: str, limits: tuple[Limit, ...], now: datetime
    ) -> Limit | None:
        """The limit `subject` has used up, without counting a use (budgets spent by failures)."""
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


class RedisRateLimiter:
    """Shared by every process that serves the API."""

    def __init__(self, redis: Redis, prefix: str) -> None:
        self._redis = redis
        self._prefix = prefix
        self._script = redis.register_script(_HIT_SCRIPT)

    def _keys(self, subject: str, limits: tuple[Limit, ...], now: datetime) -> list[str]:
        return [f"{self._prefix}:rl:{subject}:{lim.seconds}:{_window(lim, now)}" for lim in limits]

    async def hit(self, subject: str, limits: tuple[Limit, ...], now: datetime) -> Limit | None:
        keys = self._keys(subject, limits, now)
        args: list[int] = []
        for limit in limits:
            args += [limit.count, limit.seconds + 60]
        refused = int(await self._script(keys=keys, args=args))
        return limits[refused - 1] if refused else None

    async def exceeded(
        self, subject: str, limits: tuple[Limit, ...], now: datetime
    ) -> Limit | None:
        used = await self._redis.mget(self._keys(subject, limits, now))
        for limit, count in zip(limits, used, strict=True):
            if count is not None and int(count) >= limit.count:
                return limit
        return None
