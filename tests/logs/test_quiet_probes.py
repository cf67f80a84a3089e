"""Probes and scrapes log nothing while they succeed, in either format: no access line, and
none of the two lines Alembic logs each time the readiness probe reads the revisions; one
that fails is logged."""

from __future__ import annotations

import logging
from dataclasses import replace

import httpx
import pytest
from alembic.runtime.migration import MigrationContext
from sqlalchemy.ext.asyncio import AsyncEngine

from hangar.app import create_app
from hangar.db.engine import make_engine
from hangar.db.migrate import database_revisions
from hangar.foundation.config import LOG_FORMATS, LogFormat, LogLevel
from hangar.kit.container import Services
from tests.fixtures.logs import captured_logs, served
from tests.fixtures.metrics import TOKEN

QUIET = (
    "/api/health",
    "/api/health/live",
    "/api/health/ready",
    "/api/health/ready?verbose=1",
    "/metrics",
)
# What the test's own uvicorn server logs as it starts and stops, in every test.
LIFECYCLE = ("Started server process", "Shutting down", "Finished server process")


def logged(text: str) -> list[str]:
    return [line for line in text.splitlines() if not any(s in line for s in LIFECYCLE)]


@pytest.mark.parametrize("fmt", LOG_FORMATS)
@pytest.mark.parametrize("level", ["debug", "info"])
async def test_probes_and_scrapes_that_succeed_log_nothing(
    services: Services, fmt: LogFormat, level: LogLevel
) -> None:
    scraped = replace(services, settings=replace(services.settings, metrics_token=TOKEN))
    bearer = {"Authorization": f"Bearer {TOKEN}"}
    with captured_logs(fmt, "serve", level) as output:
        async with served(create_app(scraped)) as base, httpx.AsyncClient(base_url=base) as c:
            for path in QUIET:
                assert (await c.get(path, headers=bearer)).status_code == 200, path
    assert logged(output.getvalue()) == []


@pytest.mark.parametrize("fmt", LOG_FORMATS)
async def test_a_probe_or_scrape_that_fails_is_logged(
    services: Services, blank_database_url: str, fmt: LogFormat
) -> None:
    behind = make_engine(blank_database_url)  # never migrated: not ready
    unready = replace(services, engine=behind)
    scraped = replace(services, settings=replace(services.settings, metrics_token=TOKEN))
    try:
        with captured_logs(fmt, "serve") as output:
            async with (
                served(create_app(unready)) as base,
                httpx.AsyncClient(base_url=base) as client,
            ):
                assert (await client.get("/api/health/ready")).status_code == 503
            async with (
                served(create_app(scraped)) as base,
                httpx.AsyncClient(base_url=base) as client,
            ):
                assert (await client.get("/metrics")).status_code == 401
    finally:
        await behind.dispose()
    # The two access lines. Besides them, on a loaded machine, the probe's own warning when
    # the database took longer than its bound, and what cutting that probe off leaves in the
    # pool's log: logged too, by design, and not what this test is about.
    lines = [x for x in logged(output.getvalue()) if "HTTP/1.1" in x]
    assert len(lines) == 2, output.getvalue()
    ready, scrape = lines
    assert "/api/health/ready HTTP/1.1" in ready
    assert "503" in ready
    assert "/metrics HTTP/1.1" in scrape
    assert "401" in scrape


async def test_reading_the_revisions_logs_nothing_where_alembic_would(
    engine: AsyncEngine, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="alembic")
    async with engine.connect() as conn:
        await conn.run_sync(database_revisions)
        quiet = [r.getMessage() for r in caplog.records if r.name.startswith("alembic")]
        await conn.run_sync(MigrationContext.configure)
    said = [r.getMessage() for r in caplog.records if r.name.startswith("alembic")]
    assert quiet == []
    assert said[0].startswith("Context impl ")  # what the probe no longer logs
