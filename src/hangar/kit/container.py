"""What a running hangar holds: settings, database, clock, counters. Built once per process
by hangar/wiring/container.py (the process wiring); every layer receives it, none builds it."""

from __future__ import annotations

from dataclasses import dataclass, field

from redis.asyncio import Redis
from sqlalchemy.ext.asyncio import AsyncEngine

from hangar.db.read_pool import close_reads
from hangar.foundation.clock import Clock
from hangar.foundation.config import Settings
from hangar.foundation.crypto import SecretBox
from hangar.kit.cursor import CursorKeys
from hangar.kit.ratelimit import RateLimiter
from hangar.kit.resolver import Resolver, SystemResolver

# The purpose under which webhook signing secrets are sealed; changing it would leave every
# stored secret unreadable.
WEBHOOK_SECRETS = "webhook-secrets"


def webhook_secret_box(settings: Settings) -> SecretBox:
    """Seals webhook secrets with HANGAR_SECRET_KEY; opens what it or a previous key sealed."""
    return SecretBox(settings.secret_key, WEBHOOK_SECRETS, settings.previous_secret_keys)


@dataclass
class Services:
    settings: Settings
    engine: AsyncEngine
    clock: Clock
    limiter: RateLimiter
    redis: Redis | None
    # How webhook host names are resolved; tests inject a fake one. The address policy
    # itself is not injectable: no setting lets a webhook reach a private address.
    resolver: Resolver = field(default_factory=SystemResolver)
    # Both from the settings' keys, so that every process signs, seals, verifies and opens
    # with the same ones.
    secret_box: SecretBox = field(init=False, repr=False)
    cursor_keys: CursorKeys = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.secret_box = webhook_secret_box(self.settings)
        self.cursor_keys = CursorKeys.derive(
            self.settings.secret_key, self.settings.previous_secret_keys
        )

    async def close(self) -> None:
        await close_reads(self.engine)
        await self.engine.dispose()
        if self.redis is not None:
            await self.redis.aclose()
