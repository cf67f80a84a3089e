"""Reads of reservations for the public API: the keyset-paginated list and the calendar feed.

Order is newest start first, undated reservations last, ties broken by id (newest first).
The walk is two keyset runs over one index: the dated rows by (start_time, id), then the
undated rows by id. Each run is a plain range scan, whatever the depth. Each statement is
built once per combination of filters present, with the values as bound parameters.
"""

from __future__ import annotations

import functools
import operator
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypedDict

from sqlalchemy import Select, bindparam, select, tuple_

from hangar.db.reads import Read, ReadConnection
from hangar.kit.cursor import Position
from hangar.kit.schemas import field_names
from hangar.kit.scoping import ORG_PARAM, KeyContext, OfOrg, bound, scoped
from hangar.kit.scoping import rows as scoped_rows
from hangar.reservations.models import (
    ActivityType,
    Reservation,
    ReservationChanges,
    ReservationStatus,
)
from hangar.reservations.schemas import Reservation as ReservationOut
from hangar.reservations.schemas import ReservationRow

COLUMNS = [getattr(Reservation, name) for name in field_names(ReservationOut)]
CALENDAR_LIMIT = 500


class CalendarEntry(TypedDict):
    """A reservation as the calendar feed shows it: only dated ones are in it."""

    id: uuid.UUID
    aircraft_id: uuid.UUID | None
    activity_type: ActivityType
    start_time: datetime
    end_time: datetime
    status: ReservationStatus


@dataclass(frozen=True)
class Filters:
    aircraft_id: uuid.UUID | None = None
    pilot_id: uuid.UUID | None = None
    status: str | None = None
    start_after: datetime | None = None  # inclusive
    start_before: datetime | None = None  # exclusive

    @property
    def by_start(self) -> bool:
        """A start-time bound leaves no undated reservation in the result."""
        return self.start_after is not None or self.start_before is not None


@functools.cache
def _dated(shape: tuple[bool, ...], after: bool) -> Read[ReservationRow]:
    """The dated run of a page, for one combination of filters present."""
    stmt = _filtered(shape).where(Reservation.start_time.is_not(None))
    if after:
        stmt = stmt.where(
            tuple_(Reservation.start_time, Reservation.id)
            < tuple_(
                bound("after_start", Reservation.start_time), bound("after_id", Reservation.id)
            )
        )
    stmt = stmt.order_by(Reservation.start_time.desc(), Reservation.id.desc())
    return Read(stmt.limit(bindparam("limit")), ReservationRow)


@functools.cache
def _undated(shape: tuple[bool, ...], after: bool) -> Read[ReservationRow]:
    """The undated run of a page (no start-time bound can be in `shape`)."""
    stmt = _filtered(shape).where(Reservation.start_time.is_(None))
    if after:
        stmt = stmt.where(Reservation.id < bound("after_id", Reservation.id))
    stmt = stmt.order_by(Reservation.id.desc())
    return Read(stmt.limit(bindparam("limit")), ReservationRow)


# Each filter of `Filters`: its column and how it compares (start_after is inclusive).
_FILTER_COLUMNS: tuple[tuple[str, Any, Callable[[Any, Any], Any]], ...] = (
    ("aircraft_id", Reservation.aircraft_id, operator.eq),
    ("pilot_id", Reservation.pilot_id, operator.eq),
    ("status", Reservation.status, operator.eq),
    ("start_after", Reservation.start_time, operator.ge),
    ("start_before", Reservation.start_time, operator.lt),
)


def _filtered(shape: tuple[bool, ...]) -> Select[Any]:
    stmt = scoped(Reservation, *COLUMNS)
    for present, (name, column, op) in zip(shape, _FILTER_COLUMNS, strict=True):
        if present:
            stmt = stmt.where(op(column, bound(name, column)))
    return stmt


async def page(
    conn: ReadConnection,
    key: KeyContext,
    filters: Filters,
    after: Position | None,
    limit: int,
) -> list[ReservationRow]:
    values = {name: getattr(filters, name) for name, _, _ in _FILTER_COLUMNS}
    shape = tuple(value is not None for value in values.values())
    params = {name: value for name, value in values.items() if value is not None}
    rows: list[ReservationRow] = []
    if after is None or after.start_time is not None:
        if after is not None:
            params.update(after_start=after.start_time, after_id=after.id)
        rows = await scoped_rows(conn, _dated(shape, after is not None), key, **params, limit=limit)
    if len(rows) < limit and not filters.by_start:
        undated_after = after is not None and after.start_time is None
        params.pop("after_start", None)
        if after is not None and undated_after:
            params["after_id"] = after.id
        else:
            params.pop("after_id", None)
        rows += await scoped_rows(
            conn, _undated(shape, undated_after), key, **params, limit=limit - len(rows)
        )
    return rows


@functools.cache
def _calendar() -> Read[CalendarEntry]:
    # Built at the first request, once every column type is declared (see `scoped`).
    stmt = scoped(
        Reservation,
        Reservation.id,
        Reservation.aircraft_id,
        Reservation.activity_type,
        Reservation.start_time,
        Reservation.end_time,
        Reservation.status,
    )
    stmt = stmt.where(Reservation.start_time.is_not(None), Reservation.end_time.is_not(None))
    stmt = stmt.order_by(Reservation.start_time.desc(), Reservation.id.desc())
    return Read(stmt.limit(CALENDAR_LIMIT), CalendarEntry)


async def calendar(conn: ReadConnection, key: KeyContext) -> list[CalendarEntry]:
    return await scoped_rows(conn, _calendar(), key)


# The calendar feed's validators: the organization's count of reservation changes
# (reservations.changes counts them).


class Changes(TypedDict):
    version: int
    changed_at: datetime


@functools.cache
def _changes() -> Read[Changes]:
    # Built at the first request, once every column type is declared (see `scoped`).
    stmt = select(ReservationChanges.version, ReservationChanges.changed_at).where(
        ReservationChanges.org_id == bound(ORG_PARAM, ReservationChanges.org_id)
    )
    return Read(stmt, Changes)


async def changes(conn: ReadConnection, key: OfOrg) -> Changes | None:
    """The key's organization's count of changes, or None if none was ever counted."""
    found = await scoped_rows(conn, _changes(), key)
    return found[0] if found else None
