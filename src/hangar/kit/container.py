"""What a running hangar holds: settings, database, clock, counters. Built once per process
by hangar/wiring/container.py (the process wiring); every layer receives it, none builds it."""

from __future__ import annotations

from dataclasses import dataclass, field

from redis.asyncio import Redis
from sqlalchemy.ext.asyncio import AsyncEngine

from hangar.db.reads import close_reads
from hangar.foundation.clock import Clock
from hangar.foundation.config import Settings
from hangar.foundation.crypto import SecretBox
from hangar.kit.ratelimit import RateLimiter
from hangar.kit.resolver import Resolver, SystemResolver

# The purpose under which webhook signing secrets are sealed; changing it would leave every
# stored secret unreadable.
WEBHOOK_SECRETS = "webhook-secrets"


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
        self.secret_box = SecretBox(self.settings.secret_key, WEBHOOK_SECRETS)

    async def close(self) -> None:
        await close_reads(self.engine)
        await self.engine.dispose()
        if self.redis is not None:
            await self.redis.aclose()
