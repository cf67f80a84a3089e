"""The scheduled MEL-expiry job: deferred items due before today (UTC) expire.

Each item is expired in its own transaction with its events, so one bad row cannot hold
back the rest and a crash loses nothing already committed. Runners may overlap (every worker
runs the scheduler): the conditional UPDATE ... WHERE status = 'deferred' lets exactly one of
them expire a given item, and only that one records its events.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from hangar.fleet.models import Aircraft, MelItem
from hangar.kit.rows import written
from hangar.webhooks.events import catalogue, outbox


async def expire_mel_items(engine: AsyncEngine, now: datetime) -> int:
    """Expires every overdue deferred item; returns how many this run expired."""
    today = now.astimezone(UTC).date()
    async with engine.connect() as conn:
        due = (
            await conn.scalars(
                select(MelItem.id)
                .where(MelItem.status == "deferred", MelItem.due_date < today)
                .order_by(MelItem.due_date, MelItem.id)
            )
        ).all()
    expired = 0
    for item_id in due:
        async with engine.begin() as conn:
            expired += await _expire(conn, item_id, now)
    return expired


async def _expire(conn: AsyncConnection, item_id: uuid.UUID, now: datetime) -> int:
    item = await written(
        conn,
        update(MelItem)
        .where(MelItem.id == item_id, MelItem.status == "deferred")
        .values(status="expired", expired_at=now),
    )
    if item is None:
        return 0  # another runner expired it first
    # Conditional too: of two items expiring on one aircraft, only one grounds it.
    aircraft = await written(
        conn,
        update(Aircraft)
        .where(
            Aircraft.id == item["aircraft_id"],
            Aircraft.is_active.is_(True),
            Aircraft.deleted_at.is_(None),
        )
        .values(is_active=False),
    )
    org_id = item["org_id"]
    grounded = aircraft is not None
    await outbox.record(
        conn,
        org_id,
        [catalogue.MEL_EXPIRED],
        catalogue.mel_expired(item, auto_grounded=grounded),
        now,
    )
    if aircraft is not None:
        data = catalogue.aircraft_grounded(aircraft, reason="mel_expired")
        await outbox.record(conn, org_id, [catalogue.AIRCRAFT_GROUNDED], data, now)
    return 1
