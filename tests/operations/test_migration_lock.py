"""Two processes migrating one PostgreSQL database take turns (issue 40: concurrent migrators
were not serialised, and the loser exited with a misleading message): the second waits for
the first's advisory lock, says so, and then finds nothing left to do."""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from hangar.db.engine import make_engine
from hangar.db.migrate import MIGRATION_LOCK, code_revisions, database_revisions, upgrade_async
from tests.fixtures.environment import PG_URL, SECRET
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
                        return await _asking_for_the_lock(watcher) and any(
                            r.getMessage().startswith("waiting for another migration")
                            for r in caplog.records
                        )

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


async def _asking_for_the_lock(conn: AsyncConnection) -> bool:
    """Whether a migration asks for the lock now and then, holding no transaction between
    tries (never waiting inside pg_advisory_lock: see the deadlock test below)."""
    query = text(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
        "AND application_name LIKE 'hangar/%' AND query LIKE '%pg_try_advisory_lock%'"
    )
    return bool(await conn.scalar(query))


async def test_two_migrations_of_a_new_database_at_once_both_succeed(
    blank_database_url: str,
) -> None:
    # The whole schema twice at once, as `hangar serve` and `hangar worker` started together
    # do: one waited in pg_advisory_lock, holding a snapshot that the other's CREATE INDEX
    # CONCURRENTLY (migration 0016) waited for, and PostgreSQL ended it as a deadlock.
    # Two processes, as in production (Alembic's context is one per process).
    env = {k: v for k, v in os.environ.items() if not k.startswith("HANGAR_")}
    env |= {"HANGAR_DATABASE_URL": blank_database_url, "HANGAR_SECRET_KEY": SECRET}
    command = [str(Path(sys.executable).with_name("hangar")), "db", "upgrade"]
    both = [
        asyncio.create_subprocess_exec(*command, env=env, stderr=asyncio.subprocess.PIPE)
        for _ in range(2)
    ]
    for process in await asyncio.gather(*both):
        _, said = await asyncio.wait_for(process.communicate(), BOUND * 2)
        assert process.returncode == 0, said.decode()
    engine = make_engine(blank_database_url)
    try:
        async with engine.connect() as conn:
            assert await conn.run_sync(database_revisions) == code_revisions().heads
    finally:
        await engine.dispose()
