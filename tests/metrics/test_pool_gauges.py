"""hangar_database_connections_in_use and _waiting (issue 40: no pool saturation metric): a
connection taken counts as in use until it is given back, and a checkout that finds none free
counts as waiting until it gets one."""

from __future__ import annotations

import asyncio

from prometheus_client import REGISTRY
from sqlalchemy import text

from hangar.db.engine import make_engine
from tests.fixtures.subprocesses import eventually

BOUND = 15.0


def gauge(name: str) -> float:
    return REGISTRY.get_sample_value(f"hangar_database_connections_{name}") or 0.0


async def test_a_full_pool_shows_in_use_and_waiting_until_a_connection_is_given_back(
    database_url: str,
) -> None:
    engine = make_engine(database_url, pool_size=1)
    in_use, waiting = gauge("in_use"), gauge("waiting")
    try:
        # On PostgreSQL the pool may open one more than its size (overflow): take them all.
        size = engine.pool.size() + max(engine.pool._max_overflow, 0)  # type: ignore[attr-defined]
        held = [await engine.connect() for _ in range(size)]
        for conn in held:
            await conn.execute(text("SELECT 1"))
        assert gauge("in_use") - in_use == size
        assert gauge("waiting") - waiting == 0

        async def one_more() -> None:
            async with engine.connect() as conn:
                await conn.execute(text("SELECT 1"))

        queued = asyncio.ensure_future(one_more())
        await eventually(lambda: gauge("waiting") - waiting >= 1, BOUND, "a checkout waiting")
        assert not queued.done()
        await held.pop().close()
        await asyncio.wait_for(queued, BOUND)
        assert gauge("waiting") - waiting == 0
        assert gauge("in_use") - in_use == size - 1
        for conn in held:
            await conn.close()
        assert gauge("in_use") - in_use == 0
    finally:
        await engine.dispose()
