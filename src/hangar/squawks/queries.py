"""Reads of squawks for the public API: the 500 most recent, newest first."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from hangar.auth.apikey import KeyContext
from hangar.external.schemas import Squawk as SquawkOut
from hangar.external.schemas import field_names
from hangar.external.scoping import as_dicts, visible
from hangar.squawks.models import Squawk

COLUMNS = [getattr(Squawk, name) for name in field_names(SquawkOut)]
RECENT_LIMIT = 500


async def recent(
    conn: AsyncConnection,
    key: KeyContext,
    *,
    status: str | None,
    aircraft_id: uuid.UUID | None,
    is_grounding: bool | None,
) -> list[dict[str, Any]]:
    stmt = visible(Squawk, key, *COLUMNS)
    if status is not None:
        stmt = stmt.where(Squawk.status == status)
    if aircraft_id is not None:
        stmt = stmt.where(Squawk.aircraft_id == aircraft_id)
    if is_grounding is not None:
        stmt = stmt.where(Squawk.is_grounding.is_(is_grounding))
    stmt = stmt.order_by(Squawk.created_at.desc().nulls_last(), Squawk.id.desc())
    return as_dicts(await conn.execute(stmt.limit(RECENT_LIMIT)))
