"""Async engines for both databases, from the plain URLs users write, and the deadlines of
every call to PostgreSQL.

A database that hangs (stopped, not gone: it accepts connections and never answers) must
cost a request a bounded wait and a JSON 503, not a hang, and one that restarted must cost
no request at all:

- connecting: CONNECT_TIMEOUT_S;
- waiting for a pooled connection when all are in use: POOL_TIMEOUT_S;
- each statement: STATEMENT_TIMEOUT_S (the public API's reads, on a pool of their own in
  hangar.db.read_pool: READ_STATEMENT_TIMEOUT_S), enforced by the server (statement_timeout),
  and by the client STATEMENT_GRACE_S later in case the server cannot even say so;
- each connection taken from SQLAlchemy's pool is checked first: one the server closed (a
  restart) or that fails the check is replaced without a word; one that gives no answer
  within PING_TIMEOUT_S fails the request at once (a new connection would wait too).

SQLite waits up to 10 s for the writer (busy_timeout). `hangar db upgrade` runs on an engine
of its own (hangar.db.migrations.env), with the same connect deadline, so that a database
hung at start fails a command in seconds, not asyncpg's 60; it and the operator's commands
ask for no statement deadline (`statement_timeout_s=None`,
hangar.cli.common.run_in_transaction): a migration's index or a bulk seed's COPY may rightly
take minutes.
"""

from __future__ import annotations

from typing import Any

import asyncpg
from sqlalchemy import event
from sqlalchemy.exc import DisconnectionError
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from sqlalchemy.pool import AsyncAdaptedQueuePool, ConnectionPoolEntry
from sqlalchemy.util.concurrency import await_

from hangar import __version__
from hangar.foundation.metrics import DB_CONNECTIONS_IN_USE, DB_CONNECTIONS_WAITING

CONNECT_TIMEOUT_S = 5.0
POOL_TIMEOUT_S = 5.0
STATEMENT_TIMEOUT_S = 15.0
# The public API's reads are single indexed statements of milliseconds (a calendar feed of
# a busy organization, tens): a statement still running after 5 s is a database in trouble.
READ_STATEMENT_TIMEOUT_S = 5.0
STATEMENT_GRACE_S = 1.0
PING_TIMEOUT_S = 2.0
# What pg_stat_activity (and a PgBouncer's SHOW CLIENTS) names every connection of hangar's,
# with the release, so that `hangar db status` can say which releases use a database.
APPLICATION_NAME = f"hangar/{__version__}"


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


def pg_connect_args(statement_timeout_s: float | None = STATEMENT_TIMEOUT_S) -> dict[str, Any]:
    """asyncpg's connect arguments for the deadlines above (module docstring): SQLAlchemy's
    pool and asyncpg's own pool of the read path (hangar.db.read_pool) take the same."""
    # Always sent, 0 (none) included: hangar's connections hold session state (LISTEN, session
    # locks, this setting), and a connection pooler such as PgBouncer refuses a parameter at
    # start, so every one of them, a migration's too, is refused there before it does
    # anything (hangar.cli.common.unreachable says why).
    timeout_ms = 0 if statement_timeout_s is None else int(statement_timeout_s * 1000)
    settings = {"application_name": APPLICATION_NAME, "statement_timeout": str(timeout_ms)}
    args: dict[str, Any] = {"timeout": CONNECT_TIMEOUT_S, "server_settings": settings}
    if statement_timeout_s is not None:
        args["command_timeout"] = statement_timeout_s + STATEMENT_GRACE_S
    return args


def _closed_out(dbapi_connection: Any, _record: Any, _proxy: Any) -> None:
    # A connection the server closed (a restart: asyncpg has seen its socket close) is
    # replaced at no cost: a DisconnectionError makes the pool take another and go on.
    driver: asyncpg.Connection = dbapi_connection.driver_connection
    if driver.is_closed():
        raise DisconnectionError("the server closed the connection")


def _checked_out(dbapi_connection: Any, record: Any, proxy: Any) -> None:
    # SQLAlchemy's own pool_pre_ping would send BEGIN, a ping and ROLLBACK, each waiting as
    # long as any statement: one round trip with its own short deadline does (about 55 us
    # a checkout on loopback).
    # A DisconnectionError makes the pool replace the connection and go on; a TimeoutError
    # (hangar.kit.errors: a 503) ends the request, and the pool drops the connection.
    _closed_out(dbapi_connection, record, proxy)
    driver: asyncpg.Connection = dbapi_connection.driver_connection
    try:
        await_(_ping(driver))
    except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
        if isinstance(exc, TimeoutError):
            raise
        raise DisconnectionError(f"the connection failed its check: {exc!r}") from exc


async def _ping(driver: asyncpg.Connection) -> None:
    try:
        await driver.execute("SELECT 1", timeout=PING_TIMEOUT_S)
    except TimeoutError:
        # Closed at once, not left to wait for the server to confirm the cancelled ping
        # (the pool drops it either way).
        driver.terminate()
        raise TimeoutError(f"the database gave no answer within {PING_TIMEOUT_S:g} s") from None


def make_engine(
    database_url: str,
    *,
    pool_size: int = 10,
    statement_timeout_s: float | None = STATEMENT_TIMEOUT_S,
    ping_at_checkout: bool = True,
) -> AsyncEngine:
    """`statement_timeout_s`: PostgreSQL's deadline for each statement; None for none.
    `ping_at_checkout`: check each pooled connection by a round trip before use, so that a
    hung database fails a request within PING_TIMEOUT_S; a process that answers no client
    (`hangar worker`) spares the round trip and waits out the statement deadline instead
    (a connection the server closed is replaced either way)."""
    url = async_url(database_url)
    # A database error's message leaves out the statement's parameters: they may be
    # credentials (a session's CSRF token, a key's hash) and the message may reach a log.
    if url.startswith("sqlite"):
        engine = create_async_engine(
            url, pool_size=pool_size, max_overflow=0, hide_parameters=True, poolclass=_Counted
        )
        event.listen(engine.sync_engine, "connect", _sqlite_pragmas)
    else:
        engine = create_async_engine(
            url,
            pool_size=pool_size,
            max_overflow=pool_size,
            pool_timeout=POOL_TIMEOUT_S,
            connect_args=pg_connect_args(statement_timeout_s),
            hide_parameters=True,
            poolclass=_Counted,
        )
        check = _checked_out if ping_at_checkout else _closed_out
        event.listen(engine.sync_engine, "checkout", check)
    event.listen(engine.sync_engine, "checkout", _in_use)
    event.listen(engine.sync_engine, "checkin", _returned)
    return engine


class _Counted(AsyncAdaptedQueuePool):
    """SQLAlchemy's pool, counting who waits for a connection (every checkout passes here;
    one that finds a connection free leaves at once): a scrape that sees some waiting sees a
    pool too small for its load, or a database too slow to give connections back."""

    # Logs as SQLAlchemy's own pool (a library: warnings only), not under `hangar`, where its
    # checkouts would fill a debug log and its disposals a command's stderr.
    _sqla_logger_namespace = "sqlalchemy.pool.impl.AsyncAdaptedQueuePool"

    def _do_get(self) -> ConnectionPoolEntry:
        DB_CONNECTIONS_WAITING.inc()
        try:
            return super()._do_get()
        finally:
            DB_CONNECTIONS_WAITING.dec()


def _in_use(_dbapi_connection: Any, _record: Any, _proxy: Any) -> None:
    DB_CONNECTIONS_IN_USE.inc()


def _returned(_dbapi_connection: Any, _record: Any) -> None:
    DB_CONNECTIONS_IN_USE.dec()
