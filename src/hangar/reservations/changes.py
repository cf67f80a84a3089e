"""Counting an organization's reservation changes, for the calendar feed's validators (read
by reservations.queries.changes).

Every reservation command calls `count_change` last, in its own transaction: the change and
its count commit together, so a calendar told "not modified" never misses a committed change.
"""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncConnection

from hangar.reservations.models import ReservationChanges


async def count_change(conn: AsyncConnection, org_id: uuid.UUID, now: datetime) -> None:
    """One more change to the organization's reservations, made at `now`."""
    # One statement (an upsert, spelled alike by both dialects), so two first changes of an
    # organization that has no row yet cannot both insert one.
    dialect_insert = postgresql.insert if conn.dialect.name == "postgresql" else sqlite.insert
    stmt = dialect_insert(ReservationChanges).values(org_id=org_id, version=1, changed_at=now)
    await conn.execute(
        stmt.on_conflict_do_update(
            index_elements=[ReservationChanges.org_id],
            set_={
                "version": ReservationChanges.version + 1,
                "changed_at": stmt.excluded.changed_at,
            },
        )
    )
