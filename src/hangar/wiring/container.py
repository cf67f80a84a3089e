"""Building the services a process holds (hangar.kit.container.Services) from its settings."""

from __future__ import annotations

from redis.asyncio import Redis
from sqlalchemy.ext.asyncio import AsyncEngine

from hangar.db.engine import make_engine
from hangar.foundation.clock import Clock, SystemClock
from hangar.foundation.config import Settings
from hangar.kit.container import Services
from hangar.kit.ratelimit import MemoryRateLimiter, RateLimiter, RedisRateLimiter


def build_services(
    settings: Settings,
    *,
    clock: Clock | None = None,
    engine: AsyncEngine | None = None,
    answers_clients: bool = True,
) -> Services:
    """`answers_clients`: False for `hangar worker`, whose database calls need no fast
    failure, only a deadline (hangar.db.engine, ping_at_checkout)."""
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
        engine=engine
        or make_engine(
            settings.database_url,
            pool_size=settings.db_pool_size,
            ping_at_checkout=answers_clients,
        ),
        clock=clock or SystemClock(),
        limiter=limiter,
        redis=redis,
    )
