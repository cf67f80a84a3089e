"""The read path of the public API: reads on a pool of their own (SQLite) or straight on
asyncpg (PostgreSQL), and `Read`, a statement compiled once whose rows come back as the
dicts the responses serialize. Engines themselves: hangar.db.engine; asyncpg's pool of the
read path, and the connection a request reads on: hangar.db.read_pool."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, Generic, TypeAlias, TypeVar, cast, overload

import asyncpg
import orjson
from sqlalchemy import Dialect, Select, event
from sqlalchemy.dialects.postgresql.asyncpg import PGDialect_asyncpg
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine
from sqlalchemy.sql import sqltypes

from hangar.db.base import UTCDateTime
from hangar.db.engine import make_engine

_T = TypeVar("_T")

# The SQLite read pool. Each aiosqlite connection is a thread: the main pool's ten (shared with
# writes and the in-process dispatcher) contend for the GIL when reads fill them all, which on
# a 2-core machine cost the API a fifth of its throughput. Three keep reads flowing.
SQLITE_READ_POOL = 3


def per_engine(
    registry: dict[int, tuple[AsyncEngine, _T]], engine: AsyncEngine, build: Callable[[], _T]
) -> _T:
    """What `build` makes for `engine`, made once per engine (the identity check guards
    against a new engine reusing a disposed one's id)."""
    found = registry.get(id(engine))
    if found is not None and found[0] is engine:
        return found[1]
    made = build()
    registry[id(engine)] = (engine, made)
    return made


_READERS: dict[int, tuple[AsyncEngine, AsyncEngine]] = {}


def reader(engine: AsyncEngine) -> AsyncEngine:
    """The engine for reads that need no transaction of their own.

    - PostgreSQL: `engine`'s pool with its connections in autocommit, which spares the BEGIN
      and ROLLBACK round trips SQLAlchemy otherwise sends around every checkout.
    - SQLite (a file): a small pool of its own on the same file (SQLite's driver opens no
      transaction for a SELECT; WAL lets it read while the main pool writes). It is disposed
      with `engine`.
    - An in-memory SQLite database is only visible to its own connections: `engine` itself.
    """
    return per_engine(_READERS, engine, lambda: _make_reader(engine))


def _make_reader(engine: AsyncEngine) -> AsyncEngine:
    url = engine.url
    if engine.dialect.name == "postgresql":
        return engine.execution_options(isolation_level="AUTOCOMMIT")
    if engine.dialect.name != "sqlite" or url.database in (None, "", ":memory:"):
        return engine
    read = make_engine(url.render_as_string(hide_password=False), pool_size=SQLITE_READ_POOL)
    # engine.dispose() runs its listeners inside SQLAlchemy's greenlet, where the read
    # pool's own (synchronous) dispose can close its aiosqlite connections.
    event.listen(engine.sync_engine, "engine_disposed", lambda _: read.sync_engine.dispose())
    return read


# What the public read path holds for a request: asyncpg's connection on PostgreSQL,
# SQLAlchemy's on SQLite.
ReadConnection: TypeAlias = AsyncConnection | asyncpg.Connection


@asynccontextmanager
async def pg_transaction(engine: AsyncEngine) -> AsyncIterator[asyncpg.Connection]:
    """A transaction on asyncpg's own connection, checked out of `engine`'s pool (so counted
    with its connections), for statements run through `Read`: the dispatcher's claim is four
    round trips, and through SQLAlchemy each cost the worker more than the database did."""
    async with engine.connect() as conn:
        raw = await conn.get_raw_connection()
        driver: asyncpg.Connection = raw.driver_connection
        async with driver.transaction():
            yield driver


_PG_DIALECT = PGDialect_asyncpg()  # type: ignore[no-untyped-call]

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


@dataclass(frozen=True)
class _Compiled:
    sql: str
    names: tuple[str, ...]  # the parameters, in the order the SQL takes them
    fixed: Mapping[str, object]  # values fixed when the statement was built (a constant LIMIT)
    binds: tuple[Callable[[Any], Any] | None, ...]  # per parameter (SQLite only)
    # per column: SQLite, and PostgreSQL where a column is not decoded by asyncpg alone
    results: tuple[Callable[[Any], Any] | None, ...]


# The row type of a `Read`: a TypedDict naming exactly the columns its statement selects.
# Covariant: a read of rows with more keys (members with their contact fields) is a read of
# rows with fewer.
Row_co = TypeVar("Row_co", bound=Mapping[str, Any], covariant=True)


class Read(Generic[Row_co]):
    """A SELECT built once, with named bound parameters, and run as rows of plain dicts.

    `shape`, the rows' static type, is a TypedDict whose keys the statement selects, in its
    order: checked once, when the statement is built. The rows themselves stay the driver's
    values in plain dicts, never validated or converted on their way out. Without a shape the
    rows are plain `dict[str, Any]`.

    The SQL is compiled once per dialect and run on the driver's connection directly: the
    same SQL, without SQLAlchemy's per-execution work, which on a 500-row page costs more
    than the query.

    - PostgreSQL (an asyncpg connection from `read_connection`): when every column is of a
      type asyncpg already decodes to the value SQLAlchemy would return (UUIDs, aware UTC
      datetimes, text, numbers, booleans, dates), or is JSON (decoded here, as SQLAlchemy
      would), rows are taken as asyncpg gives them; otherwise the values go through the
      column types' result processors.
    - SQLite: parameters and values go through the column types' own bind and result
      processors, as SQLAlchemy would apply them, in one thread hop of aiosqlite.
    - Any other SQLAlchemy connection: through SQLAlchemy as usual.
    """

    @overload
    def __init__(self: Read[dict[str, Any]], stmt: Select[*tuple[Any, ...]]) -> None: ...

    @overload
    def __init__(self, stmt: Select[*tuple[Any, ...]], shape: type[Row_co]) -> None: ...

    def __init__(self, stmt: Select[*tuple[Any, ...]], shape: type[Row_co] | None = None) -> None:
        self.stmt = stmt
        self.keys: tuple[str, ...] = tuple(str(column.key) for column in stmt.selected_columns)
        if shape is not None and self.keys != tuple(shape.__annotations__):
            raise TypeError(
                f"{shape.__name__} names {', '.join(shape.__annotations__)}; "
                f"the statement selects {', '.join(self.keys)}"
            )
        self._json: tuple[int, ...] = ()
        self._pg_direct = False
        self._compiled: dict[str, _Compiled] = {}

    def _compile(self, dialect: Dialect) -> _Compiled:
        found = self._compiled.get(dialect.name)
        if found is not None:
            return found
        # The column types are read here, at the first run, not when the statement is built:
        # a foreign key column's type is NullType until the table it refers to is declared,
        # which may come after a module-level Read (then every row took the slow path).
        columns = list(self.stmt.selected_columns)
        self._json = tuple(i for i, c in enumerate(columns) if isinstance(c.type, sqltypes.JSON))
        self._pg_direct = all(i in self._json or _plain(c.type) for i, c in enumerate(columns))
        compiled = self.stmt.compile(dialect=dialect)
        names = tuple(compiled.positiontup or ())
        binds: tuple[Callable[[Any], Any] | None, ...] = ()
        results: tuple[Callable[[Any], Any] | None, ...] = ()
        if dialect.name == "sqlite":
            binds = tuple(
                compiled.binds[name].type.dialect_impl(dialect).bind_processor(dialect)
                for name in names
            )
        if dialect.name == "sqlite" or not self._pg_direct:
            results = tuple(
                column.type.dialect_impl(dialect).result_processor(dialect, None)
                for column in self.stmt.selected_columns
            )
        found = _Compiled(compiled.string, names, dict(compiled.params), binds, results)
        self._compiled[dialect.name] = found
        return found

    # The rows of whichever statement this is, by column key, as the driver gave them: `rows`
    # gives them their statement's type.

    def _from_pg(self, compiled: _Compiled, records: list[Any]) -> list[dict[str, Any]]:
        keys = self.keys
        if compiled.results:  # a column asyncpg does not decode as SQLAlchemy would
            return [
                {
                    key: value if process is None or value is None else process(value)
                    for key, value, process in zip(keys, record, compiled.results, strict=True)
                }
                for record in records
            ]
        rows = [dict(zip(keys, record, strict=True)) for record in records]
        for row in rows if self._json else ():
            for i in self._json:
                value = row[keys[i]]
                if isinstance(value, str | bytes):
                    row[keys[i]] = orjson.loads(value)
        return rows

    def _args(self, compiled: _Compiled, params: Mapping[str, object]) -> list[object]:
        return [params[name] if name in params else compiled.fixed[name] for name in compiled.names]

    async def rows(self, conn: ReadConnection, params: Mapping[str, object]) -> list[Row_co]:
        """The statement's rows for these parameter values (every bound name but the fixed)."""
        if isinstance(conn, AsyncConnection):
            found = await self._rows_on(conn, params)
        else:  # asyncpg's, from read_connection
            compiled = self._compile(_PG_DIALECT)
            records = await conn.fetch(compiled.sql, *self._args(compiled, params))
            found = self._from_pg(compiled, records)
        # The keys are the shape's (checked in __init__); the values are the columns' own.
        return cast("list[Row_co]", found)

    async def _rows_on(
        self, conn: AsyncConnection, params: Mapping[str, object]
    ) -> list[dict[str, Any]]:
        keys = self.keys
        dialect = conn.dialect.name
        compiled = self._compile(conn.dialect)
        if dialect == "sqlite":
            args = [
                value if bind is None or value is None else bind(value)
                for value, bind in zip(self._args(compiled, params), compiled.binds, strict=True)
            ]
            raw = await conn.get_raw_connection()
            fetched = await raw.driver_connection.execute_fetchall(  # type: ignore[union-attr]
                compiled.sql, args
            )
            results = compiled.results
            if not any(results):
                return [dict(zip(keys, row, strict=True)) for row in fetched]
            return [
                {
                    key: value if process is None else process(value)
                    for key, value, process in zip(keys, row, results, strict=True)
                }
                for row in fetched
            ]
        result = await conn.execute(self.stmt, params)
        return [dict(zip(keys, row, strict=True)) for row in result]
