"""Reads of the fleet for the public API."""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from hangar.auth.apikey import KeyContext
from hangar.external.schemas import Aircraft as AircraftOut
from hangar.external.schemas import field_names
from hangar.external.scoping import as_dicts, visible
from hangar.fleet.models import Aircraft

COLUMNS = [getattr(Aircraft, name) for name in field_names(AircraftOut)]


async def fleet(conn: AsyncConnection, key: KeyContext) -> list[dict[str, Any]]:
    stmt = visible(Aircraft, key, *COLUMNS).order_by(Aircraft.tail_number, Aircraft.id)
    return as_dicts(await conn.execute(stmt))
