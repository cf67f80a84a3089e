"""A database hung at start fails a command within seconds, not asyncpg's 60 (issue 40), and
every connection hangar opens names itself in pg_stat_activity."""

from __future__ import annotations

import asyncio
import time

import pytest
from sqlalchemy import text

from hangar.db import engine as engines
from hangar.db.engine import APPLICATION_NAME, make_engine
from hangar.db.migrate import upgrade_async
from tests.fixtures.environment import PG_URL


async def test_migrating_a_database_that_never_answers_fails_at_the_connect_deadline(
    silent_port: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The deadline shortened so the test waits a fraction of a second, not CONNECT_TIMEOUT_S.
    assert engines.CONNECT_TIMEOUT_S <= 10
    monkeypatch.setattr(engines, "CONNECT_TIMEOUT_S", 0.3)
    started = time.monotonic()
    with pytest.raises((TimeoutError, OSError)):
        # The test's own bound turns a migration that hangs into a failure.
        await asyncio.wait_for(
            upgrade_async(f"postgresql://hangar@127.0.0.1:{silent_port}/hangar"), 10
        )
    assert time.monotonic() - started < 5


@pytest.mark.skipif(not PG_URL, reason="application_name is PostgreSQL's")
async def test_every_connection_names_itself(database_url: str) -> None:
    engine = make_engine(database_url)
    try:
        async with engine.connect() as conn:
            assert await conn.scalar(text("SHOW application_name")) == APPLICATION_NAME
    finally:
        await engine.dispose()
