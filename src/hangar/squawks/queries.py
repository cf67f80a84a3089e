"""Reads of squawks for the public API: the 500 most recent, newest first."""

from __future__ import annotations

import functools
import uuid

from hangar.db.reads import Read, ReadConnection
from hangar.kit.schemas import field_names
from hangar.kit.scoping import KeyContext, bound, rows, scoped
from hangar.squawks.models import Squawk
from hangar.squawks.schemas import Squawk as SquawkOut
from hangar.squawks.schemas import SquawkRow

COLUMNS = [getattr(Squawk, name) for name in field_names(SquawkOut)]
RECENT_LIMIT = 500


@functools.cache
def _recent(status: bool, aircraft: bool, is_grounding: bool | None) -> Read[SquawkRow]:
    """One statement per combination of filters present (values are bound parameters;
    is_grounding, a boolean, is written into the SQL as before: IS true / IS false)."""
    stmt = scoped(Squawk, *COLUMNS)
    if status:
        stmt = stmt.where(Squawk.status == bound("status", Squawk.status))
    if aircraft:
        stmt = stmt.where(Squawk.aircraft_id == bound("aircraft_id", Squawk.aircraft_id))
    if is_grounding is not None:
        stmt = stmt.where(Squawk.is_grounding.is_(is_grounding))
    stmt = stmt.order_by(Squawk.created_at.desc().nulls_last(), Squawk.id.desc())
    return Read(stmt.limit(RECENT_LIMIT), SquawkRow)


async def recent(
    conn: ReadConnection,
    key: KeyContext,
    *,
    status: str | None,
    aircraft_id: uuid.UUID | None,
    is_grounding: bool | None,
) -> list[SquawkRow]:
    read = _recent(status is not None, aircraft_id is not None, is_grounding)
    params = {"status": status, "aircraft_id": aircraft_id}
    return await rows(conn, read, key, **{k: v for k, v in params.items() if v is not None})
