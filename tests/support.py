"""Test helpers that are not fixtures: the injectable clock and resolver."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from ipaddress import IPv4Address, IPv6Address, ip_address

from hangar.webhooks.url_policy import ResolutionFailed

START = datetime(2026, 5, 4, 10, 0, 30, tzinfo=UTC)


class FakeClock:
    """A clock that moves only when a test moves it."""

    def __init__(self, now: datetime = START) -> None:
        self._now = now

    def now(self) -> datetime:
        return self._now

    def set(self, moment: datetime) -> None:
        self._now = moment

    def advance(self, **delta: float) -> None:
        self._now += timedelta(**delta)


class FakeResolver:
    """DNS for tests: names answer what the test says, and never touch the network."""

    def __init__(self, answers: dict[str, list[str]] | None = None) -> None:
        self.answers: dict[str, list[str]] = {
            "hooks.example.com": ["93.184.216.34"],
            "receiver.example.org": ["93.184.216.35", "2606:2800:220:1:248:1893:25c8:1946"],
            **(answers or {}),
        }
        self.asked: list[str] = []

    async def resolve(self, host: str, port: int) -> list[IPv4Address | IPv6Address]:
        self.asked.append(host)
        if host not in self.answers:
            raise ResolutionFailed(f"{host} does not resolve")
        return [ip_address(a) for a in self.answers[host]]
