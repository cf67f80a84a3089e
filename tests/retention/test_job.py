"""The retention job as the scheduler runs it: registered, run once a minute across workers,
one line logged for a minute that pruned something, none for a quiet one."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import re
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest

from hangar.db.engine import make_engine
from hangar.jobs import scheduler
from hangar.kit.container import Services
from hangar.retention import prune
from hangar.wiring.worker import JOBS
from tests.fixtures.factories import Org
from tests.fixtures.retention import delivery, kept, nothing_of, subscription

# This module's own minute: the claims of other tests' ticks are in other minutes.
MINUTE = datetime(2026, 5, 4, 17, 29, tzinfo=UTC)


@pytest.fixture
async def second(services: Services, database_url: str) -> AsyncIterator[Services]:
    """Another worker: an engine (a pool) of its own on the same database."""
    engine = make_engine(database_url)
    yield dataclasses.replace(services, engine=engine)
    await engine.dispose()


async def test_two_workers_run_retention_once_a_minute_and_log_one_line(
    services: Services, second: Services, org: Org, caplog: pytest.LogCaptureFixture
) -> None:
    assert JOBS["retention"] is prune
    sub = await subscription(services, org)
    old = MINUTE - timedelta(days=31)
    made = [await delivery(services, org, sub, finished=old, attempts=2) for _ in range(3)]
    now = MINUTE + timedelta(seconds=3)

    with caplog.at_level(logging.INFO, logger="hangar.scheduler"):
        ran = await asyncio.gather(
            scheduler.run_tick(services, now, JOBS), scheduler.run_tick(second, now, JOBS)
        )
        assert [job for by_one in ran for job in by_one].count("retention") == 1
        for m in made:
            assert await kept(services.engine, m) == nothing_of(m)
        assert await scheduler.run_tick(second, now + timedelta(seconds=30), JOBS) == []

    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("job retention")]
    assert len(lines) == 1
    tables = (
        "webhook_deliveries",
        "webhook_attempts",
        "webhook_redeliveries",
        "events",
        "webhook_previous_secrets",
        "webhook_recoveries",
    )
    counted = ", ".join(
        rf"{t} \d+"
        for t in (*tables, "sessions", "invitations", "audit_entries", "idempotency_keys")
    )
    assert re.fullmatch(rf"job retention: {counted} in \d+\.\d s", lines[0]), lines[0]

    # The next minute, with nothing left to prune: it runs, and says nothing.
    caplog.clear()
    retention_only = {"retention": JOBS["retention"]}
    with caplog.at_level(logging.INFO, logger="hangar.scheduler"):
        later = now + timedelta(minutes=1)
        assert await scheduler.run_tick(services, later, retention_only) == ["retention"]
    assert [r.getMessage() for r in caplog.records] == []
