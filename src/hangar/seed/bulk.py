"""Writing generated rows in bulk, the fastest way each database offers, inside the caller's
transaction."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

from sqlalchemy import insert, select
from sqlalchemy.ext.asyncio import AsyncConnection

from hangar.seed import binary_copy, producer
from hangar.seed.common import Generated, Row, batched
from hangar.wiring.tables import Base

# Large enough that per-batch overhead vanishes, small enough that memory stays flat.
BATCH = 25_000


class BulkWriter(Protocol):
    async def write(self, table: str, columns: Sequence[str], rows: Sequence[Row]) -> None: ...

    async def write_generated(
        self, table: str, columns: Sequence[str], rows: Generated, advance: Callable[[int], None]
    ) -> None:
        """Makes and writes all of `rows`, calling `advance` with the count of each part
        written."""

    async def analyze(self, tables: Sequence[str]) -> None: ...


class CopyWriter:
    """PostgreSQL: binary COPY through asyncpg, an order of magnitude faster than INSERT."""

    def __init__(self, driver: Any) -> None:
        self._driver = driver  # the asyncpg connection

    async def write(self, table: str, columns: Sequence[str], rows: Sequence[Row]) -> None:
        await self._driver.copy_records_to_table(table, records=rows, columns=list(columns))

    async def write_generated(
        self, table: str, columns: Sequence[str], rows: Generated, advance: Callable[[int], None]
    ) -> None:
        # Made and encoded in a second process, while this one's COPY keeps the database busy.
        encoders = binary_copy.encoders(Base.metadata.tables[table], columns)
        job = producer.Job(rows, encoders)
        await producer.copy_generated(self._driver, table, columns, job, advance)

    async def analyze(self, tables: Sequence[str]) -> None:
        # Fresh statistics right away: until autovacuum gets to it, the planner would take a
        # million new rows for an empty table.
        for name in tables:
            await self._driver.execute(f'ANALYZE "{name}"')


class InsertWriter:
    """SQLite: executemany through SQLAlchemy, whose column types write UUIDs, datetimes and
    dates exactly as every other query of the application reads them."""

    def __init__(self, conn: AsyncConnection) -> None:
        self._conn = conn

    async def write(self, table: str, columns: Sequence[str], rows: Sequence[Row]) -> None:
        stmt = insert(Base.metadata.tables[table])
        await self._conn.execute(stmt, [dict(zip(columns, row, strict=True)) for row in rows])

    async def write_generated(
        self, table: str, columns: Sequence[str], rows: Generated, advance: Callable[[int], None]
    ) -> None:
        for batch in batched(rows.rows(), BATCH):
            await self.write(table, columns, batch)
            advance(len(batch))

    async def analyze(self, tables: Sequence[str]) -> None:
        """SQLite plans without statistics unless asked; the schema's indexes suffice."""


async def writer_for(conn: AsyncConnection) -> BulkWriter:
    """A writer inside `conn`'s transaction."""
    if conn.dialect.name != "postgresql":
        return InsertWriter(conn)
    # SQLAlchemy sends BEGIN only with its first statement; COPY on the raw driver
    # connection before that would run outside the transaction and commit on its own.
    await conn.execute(select(1))
    raw = await conn.get_raw_connection()
    return CopyWriter(raw.driver_connection)
