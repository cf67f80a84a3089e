"""Alembic environment: runs migrations over the async engine of either database.

The migrations are explicit operations and need no model: the environment imports nothing of
hangar's features (it sits with the database, below them). A caller that compares the models
with a database (autogenerate) hands their metadata in, as
`config.attributes["target_metadata"] = hangar.wiring.tables.Base.metadata`.
"""

from __future__ import annotations

import asyncio

from alembic import context
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import create_async_engine

target_metadata = context.config.attributes.get("target_metadata")


def _run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=connection.dialect.name == "sqlite",
    )
    with context.begin_transaction():
        context.run_migrations()


async def _main() -> None:
    engine = create_async_engine(context.config.get_main_option("sqlalchemy.url") or "")
    try:
        async with engine.connect() as connection:
            await connection.run_sync(_run)
            await connection.commit()
    finally:
        await engine.dispose()


asyncio.run(_main())
