"""The public read path's connections: on PostgreSQL a pool of asyncpg's own, as big as the
engine's, which `Read` runs its statements on directly; on SQLite the reader engine's
(hangar.db.reads.reader). Opened at the first read, closed with the services."""

from __future__ import annotations

import asyncio
from contextlib import AbstractAsyncContextManager
from types import TracebackType
from typing import Any

import asyncpg
from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine

from hangar import __version__
from hangar.db.engine import READ_STATEMENT_TIMEOUT_S, pg_connect_args
from hangar.db.reads import ReadConnection, per_engine, reader


async def _nothing_to_reset(_connection: asyncpg.Connection) -> None:
    """The read pool's reset, before a connection goes back to it. asyncpg's default sends
    `SELECT pg_advisory_unlock_all(); CLOSE ALL; UNLISTEN *; RESET ALL` at every return: a
    round trip for each request, to undo what the read path never does (it runs single
    statements in autocommit: no lock, cursor, LISTEN or SET outlives one). An open
    transaction asyncpg still rolls back itself, before this is called."""


READ_POOL_NAME = f"hangar-read/{__version__}"


class _PgReads:
    """asyncpg's own pool for the public read path on PostgreSQL, as big as `engine`'s.

    The statements of `Read` need nothing of SQLAlchemy at run time; its pool did cost a
    request four greenlet hops (checkout, two raw-connection lookups, return) and the
    checkout's bookkeeping: /aircraft served 0.65x of the bare baseline's requests per
    second through it, 0.83-0.86x on this pool. A process holds up to this many
    connections besides `engine`'s own.
    """

    def __init__(self, engine: AsyncEngine) -> None:
        self._url = engine.url.set(drivername="postgresql").render_as_string(hide_password=False)
        self._size = max(engine.sync_engine.pool.size(), 1)  # type: ignore[attr-defined]
        self._pool: asyncpg.Pool | None = None
        self._opening = asyncio.Lock()

    async def pool(self) -> asyncpg.Pool:
        if self._pool is None:
            async with self._opening:
                if self._pool is None:
                    # The engine's deadlines (hangar.db.engine). A connection the server
                    # closed (a restart) asyncpg's pool replaces itself when handing it out.
                    args = pg_connect_args(READ_STATEMENT_TIMEOUT_S)
                    settings = args.pop("server_settings", {})
                    self._pool = await asyncpg.create_pool(
                        self._url,
                        min_size=1,
                        max_size=self._size,
                        # Named, so an operator can tell these apart in pg_stat_activity.
                        server_settings=settings | {"application_name": READ_POOL_NAME},
                        reset=_nothing_to_reset,
                        **args,
                    )
        return self._pool

    async def close(self) -> None:
        if self._pool is not None:
            pool, self._pool = self._pool, None
            await pool.close()

    def terminate(self) -> None:
        if self._pool is not None:
            pool, self._pool = self._pool, None
            pool.terminate()


class _PgReadConnection:
    """`async with`: a connection of the read pool, returned to it on exit."""

    __slots__ = ("_connection", "_held", "_reads")

    def __init__(self, reads: _PgReads) -> None:
        self._reads = reads
        self._held: Any = None
        self._connection: asyncpg.Connection | None = None

    async def __aenter__(self) -> asyncpg.Connection:
        self._held = (await self._reads.pool()).acquire()
        connection: asyncpg.Connection = await self._held.__aenter__()
        self._connection = connection
        return connection

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._connection is not None and isinstance(exc, TimeoutError):
            # A statement past its deadline: giving the connection back would reset it,
            # waiting as long again on a database that does not answer. The pool opens
            # another when one is needed.
            self._connection.terminate()
        await self._held.__aexit__(kind, exc, tb)


_PG_READS: dict[int, tuple[AsyncEngine, _PgReads]] = {}


def _pg_reads(engine: AsyncEngine) -> _PgReads:
    return per_engine(_PG_READS, engine, lambda: _make_pg_reads(engine))


def _make_pg_reads(engine: AsyncEngine) -> _PgReads:
    reads = _PgReads(engine)
    # A disposed engine takes its read pool with it (Services.close closes it gracefully
    # first; this covers an engine disposed on its own).
    event.listen(engine.sync_engine, "engine_disposed", lambda _: reads.terminate())
    return reads


def read_connection(engine: AsyncEngine) -> AbstractAsyncContextManager[ReadConnection]:
    """`async with read_connection(engine) as conn`: a connection for `Read.rows`."""
    if engine.dialect.name == "postgresql":
        return _PgReadConnection(_pg_reads(engine))
    return reader(engine).connect()


async def close_reads(engine: AsyncEngine) -> None:
    """Closes the read pool of `engine` (PostgreSQL), letting its connections say goodbye."""
    found = _PG_READS.pop(id(engine), None)
    if found is not None and found[0] is engine:
        await found[1].close()
