"""On PostgreSQL a read connection goes back to its pool without a round trip
(hangar.db.read_pool): the read path leaves nothing to undo, so a request pays for no reset;
one that did leave a transaction open is still rolled back."""

from __future__ import annotations

import uuid
from typing import cast

import asyncpg
import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from hangar.db.read_pool import READ_POOL_NAME, read_connection


async def _last_statements(engine: AsyncEngine) -> dict[int, tuple[str, str]]:
    """Each read-pool backend's state and last statement, as PostgreSQL shows them."""
    async with engine.connect() as conn:
        rows = await conn.execute(
            text(
                "SELECT pid, state, query FROM pg_stat_activity"
                " WHERE datname = current_database() AND application_name = :name"
            ),
            {"name": READ_POOL_NAME},
        )
        return {pid: (state, query) for pid, state, query in rows}


async def test_a_postgresql_read_connection_goes_back_without_a_reset_statement(
    engine: AsyncEngine,
) -> None:
    if engine.dialect.name != "postgresql":
        pytest.skip("PostgreSQL only: the public reads' own asyncpg pool")
    marker = f"SELECT 'read {uuid.uuid4()}'"
    async with read_connection(engine) as read:
        conn = cast(asyncpg.Connection, read)  # PostgreSQL's read path: asyncpg's own
        pid = await conn.fetchval("SELECT pg_backend_pid()")
        await conn.fetchval(marker)
    # asyncpg's default reset (RESET ALL, UNLISTEN *, CLOSE ALL, ...) would be the last
    # statement of the backend now, one round trip after every request.
    assert (await _last_statements(engine))[pid] == ("idle", marker)


async def test_a_postgresql_read_connection_left_in_a_transaction_is_rolled_back(
    engine: AsyncEngine,
) -> None:
    if engine.dialect.name != "postgresql":
        pytest.skip("PostgreSQL only: the public reads' own asyncpg pool")
    async with read_connection(engine) as read:
        conn = cast(asyncpg.Connection, read)
        pid = await conn.fetchval("SELECT pg_backend_pid()")
        await conn.execute("BEGIN")
        assert conn.is_in_transaction()
    state, query = (await _last_statements(engine))[pid]
    assert (state, query) == ("idle", "ROLLBACK")
    async with read_connection(engine) as again:
        assert not cast(asyncpg.Connection, again).is_in_transaction()
