"""Async engines for both databases, from the plain URLs users write."""

from __future__ import annotations

from typing import Any

from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine


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
    # A database error's message leaves out the statement's parameters: they may be
    # credentials (a session's CSRF token, a key's hash) and the message may reach a log.
    if url.startswith("sqlite"):
        engine = create_async_engine(url, pool_size=pool_size, max_overflow=0, hide_parameters=True)
        event.listen(engine.sync_engine, "connect", _sqlite_pragmas)
        return engine
    return create_async_engine(
        url,
        pool_size=pool_size,
        max_overflow=pool_size,
        pool_pre_ping=False,
        hide_parameters=True,
    )
