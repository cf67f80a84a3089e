"""Time, injected: grace windows, rate-limit buckets, due dates and the waits until them are
tested by moving it."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Protocol


class Clock(Protocol):
    def now(self) -> datetime:
        """The current time, timezone-aware, in UTC."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Returns once `seconds` have passed on this clock: a wait for something due at a
        time this clock tells (a retry, a lease), so that a moved clock ends it too."""
        ...


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)
