"""What a running hangar holds: settings, database, clock, counters. Built once per app."""

from __future__ import annotations

from dataclasses import dataclass, field

from redis.asyncio import Redis
from sqlalchemy.ext.asyncio import AsyncEngine

from hangar.auth.ratelimit import MemoryRateLimiter, RateLimiter, RedisRateLimiter
from hangar.clock import Clock, SystemClock
from hangar.config import Settings
from hangar.crypto import derive_key
from hangar.db.engine import close_reads, make_engine
from hangar.webhooks.secrets import SecretBox
from hangar.webhooks.url_policy import Resolver, SystemResolver


@dataclass
class Services:
    settings: Settings
    engine: AsyncEngine
    clock: Clock
    limiter: RateLimiter
    redis: Redis | None
    cursor_key: bytes = field(repr=False)
    # How webhook host names are resolved; tests inject a fake one. The address policy
    # itself is not injectable: no setting lets a webhook reach a private address.
    resolver: Resolver = field(default_factory=SystemResolver)
    secret_box: SecretBox = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.secret_box = SecretBox(self.settings.secret_key)

    async def close(self) -> None:
        await close_reads(self.engine)
        await self.engine.dispose()
        if self.redis is not None:
            await self.redis.aclose()


def build_services(
    settings: Settings,
    *,
    clock: Clock | None = None,
    engine: AsyncEngine | None = None,
) -> Services:
    # Bounded waits: a Redis that hangs must not hold requests (the limiter falls back).
    redis = (
        Redis.from_url(settings.redis_url, socket_connect_timeout=2, socket_timeout=3)
        if settings.redis_url
        else None
    )
    limiter: RateLimiter = (
        RedisRateLimiter(redis, settings.redis_prefix) if redis else MemoryRateLimiter()
    )
    return Services(
        settings=settings,
        engine=engine or make_engine(settings.database_url),
        clock=clock or SystemClock(),
        limiter=limiter,
        redis=redis,
        cursor_key=derive_key(settings.secret_key, "cursor"),
    )
