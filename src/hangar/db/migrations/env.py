"""Alembic environment: runs migrations over the async engine of either database.

The migrations are explicit operations and need no model: the environment imports nothing of
hangar's features (it sits with the database, below them). A caller that compares the models
with a database (autogenerate) hands their metadata in, as
`config.attributes["target_metadata"] = hangar.wiring.tables.Base.metadata`.
"""

from __future__ import annotations

import asyncio
import logging
import time

from alembic import context
from sqlalchemy import text
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import create_async_engine

from hangar.db.engine import pg_connect_args
from hangar.db.migrate import (
    MIGRATION_LOCK,
    code_revisions,
    database_revisions,
    oldest_compatible_head,
)

target_metadata = context.config.attributes.get("target_metadata")
log = logging.getLogger("hangar.db")
LOCK_POLL_S = 0.2  # how often a migration waiting for another asks for the lock again


def _run(connection: Connection) -> None:
    if connection.dialect.name == "postgresql":
        _serialised(connection)
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=connection.dialect.name == "sqlite",
    )
    with context.begin_transaction():
        context.run_migrations()
        # At this code's head: which older releases still work on the schema, for their
        # readiness (they cannot read this code's scripts).
        if database_revisions(connection) == code_revisions().heads:
            connection.execute(text("DELETE FROM schema_compatibility"))
            connection.execute(
                text("INSERT INTO schema_compatibility (id, oldest_head) VALUES (1, :head)"),
                {"head": oldest_compatible_head()},
            )


def _serialised(connection: Connection) -> None:
    waited = False
    lock = text("SELECT pg_try_advisory_lock(:key)")
    while not connection.execute(lock, {"key": MIGRATION_LOCK}).scalar():
        if not waited:
            log.warning("waiting for another migration of this database to finish")
            waited = True
        # Asked again and again, never waited for in pg_advisory_lock: a session waiting
        # there holds a snapshot, and the other migration's CREATE INDEX CONCURRENTLY waits
        # for every older snapshot to end, so each would wait for the other (PostgreSQL
        # ends it as a deadlock). Between tries this session holds no transaction at all.
        connection.commit()
        time.sleep(LOCK_POLL_S)
    if waited:
        log.info("the other migration finished; going on")
    # The lock outlives this commit; the migrations then begin their transaction as before.
    connection.commit()


async def _main() -> None:
    url = context.config.get_main_option("sqlalchemy.url") or ""
    # PostgreSQL: the connect deadline and the application name of every other connection;
    # no statement deadline (an index may rightly take minutes).
    args = pg_connect_args(None) if url.startswith("postgresql") else {}
    engine = create_async_engine(url, connect_args=args)
    try:
        async with engine.connect() as connection:
            await connection.run_sync(_run)
            await connection.commit()
    finally:
        await engine.dispose()


asyncio.run(_main())
