"""Reads of the fleet for the public API."""

from __future__ import annotations

import functools

from hangar.db.reads import Read, ReadConnection
from hangar.fleet.models import Aircraft
from hangar.fleet.schemas import Aircraft as AircraftOut
from hangar.fleet.schemas import AircraftRow
from hangar.kit.schemas import field_names
from hangar.kit.scoping import KeyContext, rows, scoped

COLUMNS = [getattr(Aircraft, name) for name in field_names(AircraftOut)]


@functools.cache
def _fleet() -> Read[AircraftRow]:
    # Built at the first request, once every model (and so every column type) is declared.
    stmt = scoped(Aircraft, *COLUMNS).order_by(Aircraft.tail_number, Aircraft.id)
    return Read(stmt, AircraftRow)


async def fleet(conn: ReadConnection, key: KeyContext) -> list[AircraftRow]:
    return await rows(conn, _fleet(), key)
