"""Two processes migrating one PostgreSQL database take turns (issue 40: concurrent migrators
were not serialised, and the loser exited with a misleading message): the second waits for
the first's advisory lock, says so, and then finds nothing left to do."""

from __future__ import annotations

import asyncio
import logging

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from hangar.db.engine import make_engine
from hangar.db.migrate import MIGRATION_LOCK, code_revisions, database_revisions, upgrade_async
from tests.fixtures.environment import PG_URL
from tests.fixtures.subprocesses import eventually

pytestmark = pytest.mark.skipif(not PG_URL, reason="an advisory lock is PostgreSQL's")
BOUND = 30.0


async def test_a_second_migration_waits_for_the_first_then_finds_nothing_to_do(
    blank_database_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    engine = make_engine(blank_database_url)
    try:
        async with engine.connect() as holder:
            # Another process migrating: it holds the lock.
            await holder.execute(text("SELECT pg_advisory_lock(:k)"), {"k": MIGRATION_LOCK})
            await holder.commit()
            with caplog.at_level(logging.INFO, logger="hangar.db"):
                migrating = asyncio.ensure_future(upgrade_async(blank_database_url))
                async with engine.connect() as watcher:

                    async def waiting() -> bool:
                        assert not migrating.done(), migrating
                        return await _waiting_for_the_lock(watcher)

                    await eventually(waiting, BOUND, "the migration waiting for the lock")
                assert not migrating.done()
                await holder.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": MIGRATION_LOCK})
                await holder.commit()
                await asyncio.wait_for(migrating, BOUND)
        said = [r.getMessage() for r in caplog.records if r.name == "hangar.db"]
        assert said == [
            "waiting for another migration of this database to finish",
            "the other migration finished; going on",
        ]
        async with engine.connect() as conn:
            assert await conn.run_sync(database_revisions) == code_revisions().heads
            # Released with its connection: the next migration takes it at once.
            caplog.clear()
            await upgrade_async(blank_database_url)
            assert not [r for r in caplog.records if r.name == "hangar.db"]
    finally:
        await engine.dispose()


async def _waiting_for_the_lock(conn: AsyncConnection) -> bool:
    query = text(
        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted "
        "AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
    )
    return bool(await conn.scalar(query))
