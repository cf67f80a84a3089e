"""Async engines for both databases, from the plain URLs users write."""

from __future__ import annotations

from typing import Any

import orjson
from sqlalchemy import Select, event
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine
from sqlalchemy.sql import sqltypes

from hangar.db.base import UTCDateTime


def async_url(database_url: str) -> str:
    """sqlite:///x → sqlite+aiosqlite:///x; postgresql://… → postgresql+asyncpg://…"""
    if database_url.startswith("sqlite:///"):
        return "sqlite+aiosqlite:///" + database_url.removeprefix("sqlite:///")
    for scheme in ("postgresql://", "postgres://"):
        if database_url.startswith(scheme):
            return "postgresql+asyncpg://" + database_url.removeprefix(scheme)
    return database_url


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    # WAL lets the API read while the dispatcher or a seed writes; foreign keys are off by
    # default in SQLite; busy_timeout waits for a writer instead of failing with "locked".
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA busy_timeout=10000")
    cursor.close()


def make_engine(database_url: str, *, pool_size: int = 10) -> AsyncEngine:
    url = async_url(database_url)
    if url.startswith("sqlite"):
        engine = create_async_engine(url, pool_size=pool_size, max_overflow=0)
        event.listen(engine.sync_engine, "connect", _sqlite_pragmas)
        return engine
    return create_async_engine(
        url, pool_size=pool_size, max_overflow=pool_size, pool_pre_ping=False
    )


# --- reads ---------------------------------------------------------------------------------

_READERS: dict[int, tuple[AsyncEngine, AsyncEngine]] = {}


def reader(engine: AsyncEngine) -> AsyncEngine:
    """The engine for reads that need no transaction of their own.

    On PostgreSQL its connections are in autocommit, which spares the BEGIN and ROLLBACK
    round trips SQLAlchemy otherwise sends around every checkout. SQLite's driver opens no
    transaction for a SELECT anyway, so there it is `engine` itself.
    """
    if engine.dialect.name != "postgresql":
        return engine
    found = _READERS.get(id(engine))
    if found is None or found[0] is not engine:
        found = (engine, engine.execution_options(isolation_level="AUTOCOMMIT"))
        _READERS[id(engine)] = found
    return found[1]


# Column types whose values asyncpg returns exactly as SQLAlchemy would hand them on.
_PLAIN_TYPES: tuple[type[Any], ...] = (
    sqltypes.String,
    sqltypes.Boolean,
    sqltypes.Integer,
    sqltypes.Date,
    sqltypes.Uuid,
    UTCDateTime,
)


def _plain(column_type: Any) -> bool:
    if isinstance(column_type, sqltypes.Float):
        return not column_type.asdecimal
    return isinstance(column_type, _PLAIN_TYPES)


class Read:
    """A SELECT built once, with named bound parameters, and run as rows of plain dicts.

    On PostgreSQL, when every selected column is of a type asyncpg already decodes to the
    value SQLAlchemy would return (UUIDs, aware UTC datetimes, text, numbers, booleans,
    dates) or is JSON (decoded here, as SQLAlchemy would), the SQL is compiled once and run
    on the asyncpg connection directly: the same SQL, without SQLAlchemy's per-statement and
    per-row work, which on a 500-row page costs more than the query. Anywhere else it runs
    through SQLAlchemy as usual.
    """

    def __init__(self, stmt: Select[*tuple[Any, ...]]) -> None:
        self.stmt = stmt
        self.keys: tuple[str, ...] = tuple(str(column.key) for column in stmt.selected_columns)
        columns = list(stmt.selected_columns)
        self._json = tuple(i for i, c in enumerate(columns) if isinstance(c.type, sqltypes.JSON))
        self._direct = all(i in self._json or _plain(c.type) for i, c in enumerate(columns))
        self._compiled: tuple[str, tuple[str, ...], dict[str, Any]] | None = None

    async def rows(self, conn: AsyncConnection, params: dict[str, Any]) -> list[dict[str, Any]]:
        keys = self.keys
        if not self._direct or conn.dialect.name != "postgresql":
            result = await conn.execute(self.stmt, params)
            return [dict(zip(keys, row, strict=True)) for row in result]
        if self._compiled is None:
            compiled = self.stmt.compile(dialect=conn.dialect)
            # Values fixed when the statement was built (e.g. a constant LIMIT) come along.
            self._compiled = (compiled.string, tuple(compiled.positiontup or ()), compiled.params)
        sql, names, fixed = self._compiled
        args = [params[name] if name in params else fixed[name] for name in names]
        raw = await conn.get_raw_connection()
        records = await raw.driver_connection.fetch(sql, *args)  # type: ignore[union-attr]
        if not self._json:
            return [dict(zip(keys, record, strict=True)) for record in records]
        rows = [dict(zip(keys, record, strict=True)) for record in records]
        for row in rows:
            for i in self._json:
                value = row[keys[i]]
                if isinstance(value, str | bytes):
                    row[keys[i]] = orjson.loads(value)
        return rows
