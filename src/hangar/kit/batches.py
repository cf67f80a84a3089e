"""Deleting in batches: short transactions, each a range of an index, oldest first, so a
housekeeping job never holds up the writes around it. The retention job (hangar.retention)
takes turns between the batches each feature makes of its own tables."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from sqlalchemy import ColumnElement, Delete, Select, and_, delete, literal, select
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlalchemy.orm import InstrumentedAttribute


@dataclass(frozen=True)
class Batch:
    deleted: dict[str, int]  # rows, by table
    more: bool  # the batch was full: there may be more to delete


def written(n: int) -> Any:
    # Written into the SQL, not bound: a prepared statement's plan is then made for it.
    return literal(n, literal_execute=True)


class Batches(Protocol):
    """One kind of row to delete: each run is one batch, in its own transaction."""

    async def run(self, engine: AsyncEngine) -> Batch: ...


@dataclass
class Oldest:
    """Rows of `model` whose `column` (indexed) is before `before`, oldest first. A batch is
    a range of the index: up to the time of its `size`th row, read by OFFSET from the index.
    It deletes `size` rows, more only when several share that last time."""

    model: type[Any]  # a mapped table
    column: InstrumentedAttribute[datetime]
    before: datetime
    size: int
    after: datetime | None = None  # where the last batch ended

    def _range(self) -> ColumnElement[bool]:
        rows = self.column < self.before
        return rows if self.after is None else and_(rows, self.column > self.after)

    def end_of_batch(self) -> Select[datetime]:
        return (
            select(self.column)
            .where(self._range())
            .order_by(self.column)
            .offset(written(self.size - 1))
            .limit(written(1))
        )

    def deleted(self, end: datetime | None) -> Delete:
        """The batch that ends at `end` (None: all that is left before `before`)."""
        rows = self._range()
        if end is not None:
            rows = and_(rows, self.column <= end)
        return delete(self.model).where(rows)

    async def run(self, engine: AsyncEngine) -> Batch:
        async with engine.begin() as conn:
            end = await conn.scalar(self.end_of_batch())
            gone = await conn.execute(self.deleted(end))
        self.after = end
        return Batch({self.model.__tablename__: gone.rowcount}, more=end is not None)
