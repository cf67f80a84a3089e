"""Changing the fleet (fleet.manage): aircraft, their availability, MEL deferrals.

Each command changes state and records its events on the caller's connection, so both
commit or neither does. Callers own the transaction.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from pydantic import Field, model_validator
from sqlalchemy import func, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from hangar.fleet.models import Aircraft, MelCategory, MelItem
from hangar.fleet.schemas import AircraftRow, MelItemRow
from hangar.kit.bodies import BodyDate, BodyId, RequestBody
from hangar.kit.errors import Conflict, invalid
from hangar.kit.rows import created, locked, moved, public, referenced, soft_delete
from hangar.orgs.actors import Actor
from hangar.webhooks.events import catalogue, outbox


class NewAircraftBody(RequestBody):
    tail_number: str = Field(min_length=1, max_length=20)
    aircraft_type: str = Field(min_length=1, max_length=100)
    display_name: str | None = Field(None, max_length=100)
    hobbs_current: float | None = Field(None, ge=0)
    tach_current: float | None = Field(None, ge=0)
    annual_due_date: BodyDate | None = None
    last_100hr_hobbs: float | None = Field(None, ge=0)


class NewMelItemBody(RequestBody):
    aircraft_id: BodyId
    item_description: str = Field(min_length=1, max_length=2000)
    mel_category: MelCategory
    due_date: BodyDate
    deferral_date: BodyDate | None = None

    @model_validator(mode="after")
    def _due_after_deferral(self) -> NewMelItemBody:
        if self.deferral_date is not None and self.due_date < self.deferral_date:
            raise ValueError("due_date must not be before deferral_date")
        return self


async def create_aircraft(
    conn: AsyncConnection, actor: Actor, body: NewAircraftBody, now: datetime
) -> AircraftRow:
    tail = body.tail_number.strip().upper()
    taken = await conn.scalar(
        select(Aircraft.id).where(
            Aircraft.org_id == actor.org_id,
            Aircraft.deleted_at.is_(None),
            func.upper(Aircraft.tail_number) == tail,
        )
    )
    if taken is not None:
        raise Conflict(f"{tail} is already in the fleet", "TAIL_NUMBER_TAKEN")
    values = body.model_dump() | {"tail_number": tail, "is_active": True}
    return public(await created(conn, Aircraft, actor.org_id, values, now), AircraftRow)


async def delete_aircraft(
    conn: AsyncConnection, actor: Actor, aircraft_id: uuid.UUID, now: datetime
) -> None:
    await soft_delete(conn, Aircraft, actor.org_id, aircraft_id, "aircraft", now)


async def deactivate(
    conn: AsyncConnection, actor: Actor, aircraft_id: uuid.UUID, now: datetime
) -> AircraftRow:
    """Grounds the aircraft by hand: aircraft.grounded with reason admin_deactivate."""
    return await _set_active(conn, actor, aircraft_id, False, now)


async def reactivate(
    conn: AsyncConnection, actor: Actor, aircraft_id: uuid.UUID, now: datetime
) -> AircraftRow:
    """aircraft.reactivated."""
    return await _set_active(conn, actor, aircraft_id, True, now)


async def _set_active(
    conn: AsyncConnection, actor: Actor, aircraft_id: uuid.UUID, active: bool, now: datetime
) -> AircraftRow:
    state, move = ("active", "reactivated") if active else ("inactive", "deactivated")
    current = await locked(conn, Aircraft, actor.org_id, aircraft_id, "aircraft")
    if current["is_active"] == active:
        raise Conflict(f"The aircraft is already {state}")
    row = await moved(
        conn,
        update(Aircraft)
        .where(Aircraft.id == aircraft_id, Aircraft.is_active.is_(not active))
        .values(is_active=active),
        f"The aircraft was {move} meanwhile",
    )
    data: catalogue.EventData
    if active:
        event, data = catalogue.AIRCRAFT_REACTIVATED, catalogue.aircraft_reactivated(row)
    else:
        event = catalogue.AIRCRAFT_GROUNDED
        data = catalogue.aircraft_grounded(row, reason="admin_deactivate")
    await outbox.record(conn, actor.org_id, [event], data, now)
    return public(row, AircraftRow)


async def create_mel_item(
    conn: AsyncConnection, actor: Actor, body: NewMelItemBody, now: datetime
) -> MelItemRow:
    """Defers an item onto the aircraft's MEL: mel.created."""
    await referenced(conn, Aircraft, actor.org_id, body.aircraft_id, "aircraft_id")
    today = now.astimezone(UTC).date()
    if body.due_date < today:
        # The expiry job would expire it within the minute; refuse the contradiction instead.
        raise invalid("due_date", "it is already past")
    values = body.model_dump() | {
        "status": "deferred",
        "deferral_date": body.deferral_date or today,
    }
    row = await created(conn, MelItem, actor.org_id, values, now)
    await outbox.record(
        conn, actor.org_id, [catalogue.MEL_CREATED], catalogue.mel_created(row), now
    )
    return public(row, MelItemRow)


# What the other features ask of the fleet: they meet it through these functions, never its
# tables.


async def require_aircraft(
    conn: AsyncConnection, org_id: uuid.UUID, aircraft_id: uuid.UUID, field: str
) -> None:
    """A body names a live aircraft of this organization, or 422 naming the field."""
    await referenced(conn, Aircraft, org_id, aircraft_id, field)


async def in_service(
    conn: AsyncConnection, org_id: uuid.UUID, aircraft_id: uuid.UUID
) -> bool | None:
    """Whether the aircraft is active; None when it is no longer in the fleet."""
    return await conn.scalar(
        select(Aircraft.is_active).where(
            Aircraft.id == aircraft_id, Aircraft.org_id == org_id, Aircraft.deleted_at.is_(None)
        )
    )


async def record_hobbs(
    conn: AsyncConnection, org_id: uuid.UUID, aircraft_id: uuid.UUID, hobbs: float
) -> None:
    """A completed flight moves the aircraft's Hobbs meter to where the flight ended."""
    await conn.execute(
        update(Aircraft)
        .where(Aircraft.id == aircraft_id, Aircraft.org_id == org_id)
        .values(hobbs_current=hobbs)
    )
