"""Reads of reservations for the public API: the keyset-paginated list and the calendar feed.

Order is newest start first, undated reservations last, ties broken by id (newest first).
The walk is two keyset runs over one index: the dated rows by (start_time, id), then the
undated rows by id. Each run is a plain range scan, whatever the depth.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Select, tuple_
from sqlalchemy.ext.asyncio import AsyncConnection

from hangar.auth.apikey import KeyContext
from hangar.external.cursor import Position
from hangar.external.schemas import Reservation as ReservationOut
from hangar.external.schemas import field_names
from hangar.external.scoping import as_dicts, visible
from hangar.reservations.models import Reservation

COLUMNS = [getattr(Reservation, name) for name in field_names(ReservationOut)]
CALENDAR_LIMIT = 500


@dataclass(frozen=True)
class Filters:
    aircraft_id: uuid.UUID | None = None
    pilot_id: uuid.UUID | None = None
    status: str | None = None
    start_after: datetime | None = None  # inclusive
    start_before: datetime | None = None  # exclusive

    def apply(self, stmt: Select[Any]) -> Select[Any]:
        if self.aircraft_id is not None:
            stmt = stmt.where(Reservation.aircraft_id == self.aircraft_id)
        if self.pilot_id is not None:
            stmt = stmt.where(Reservation.pilot_id == self.pilot_id)
        if self.status is not None:
            stmt = stmt.where(Reservation.status == self.status)
        if self.start_after is not None:
            stmt = stmt.where(Reservation.start_time >= self.start_after)
        if self.start_before is not None:
            stmt = stmt.where(Reservation.start_time < self.start_before)
        return stmt

    @property
    def by_start(self) -> bool:
        """A start-time bound leaves no undated reservation in the result."""
        return self.start_after is not None or self.start_before is not None


async def page(
    conn: AsyncConnection,
    key: KeyContext,
    filters: Filters,
    after: Position | None,
    limit: int,
) -> list[dict[str, Any]]:
    base = filters.apply(visible(Reservation, key, *COLUMNS))
    rows: list[dict[str, Any]] = []
    if after is None or after.start_time is not None:
        dated = base.where(Reservation.start_time.is_not(None))
        if after is not None:
            dated = dated.where(
                tuple_(Reservation.start_time, Reservation.id) < tuple_(after.start_time, after.id)
            )
        dated = dated.order_by(Reservation.start_time.desc(), Reservation.id.desc()).limit(limit)
        rows = as_dicts(await conn.execute(dated))
    if len(rows) < limit and not filters.by_start:
        undated = base.where(Reservation.start_time.is_(None))
        if after is not None and after.start_time is None:
            undated = undated.where(Reservation.id < after.id)
        undated = undated.order_by(Reservation.id.desc()).limit(limit - len(rows))
        rows += as_dicts(await conn.execute(undated))
    return rows


async def calendar(conn: AsyncConnection, key: KeyContext) -> list[dict[str, Any]]:
    stmt = (
        visible(
            Reservation,
            key,
            Reservation.id,
            Reservation.aircraft_id,
            Reservation.activity_type,
            Reservation.start_time,
            Reservation.end_time,
            Reservation.status,
        )
        .where(Reservation.start_time.is_not(None), Reservation.end_time.is_not(None))
        .order_by(Reservation.start_time.desc(), Reservation.id.desc())
        .limit(CALENDAR_LIMIT)
    )
    return as_dicts(await conn.execute(stmt))
