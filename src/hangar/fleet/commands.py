"""Changing the fleet (fleet.manage): aircraft, their availability, MEL deferrals.

Each command changes state and records its events on the caller's connection, so both
commit or neither does. Callers own the transaction.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import Field, model_validator
from sqlalchemy import func, insert, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from hangar.fleet.models import Aircraft, MelItem
from hangar.fleet.schemas import Aircraft as AircraftOut
from hangar.ids import new_id
from hangar.kit.bodies import BodyDate, BodyId, RequestBody
from hangar.kit.errors import Conflict, invalid
from hangar.kit.rows import inserted, locked, moved, public, referenced, soft_delete
from hangar.orgs.access import Actor
from hangar.webhooks import catalogue, outbox


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
    mel_category: Literal["a", "b", "c", "d"]
    due_date: BodyDate
    deferral_date: BodyDate | None = None

    @model_validator(mode="after")
    def _due_after_deferral(self) -> NewMelItemBody:
        if self.deferral_date is not None and self.due_date < self.deferral_date:
            raise ValueError("due_date must not be before deferral_date")
        return self


def mel_view(row: Any) -> dict[str, Any]:
    # MEL items have no public resource; this is the mel.created data plus the item's state.
    return {
        **catalogue.mel_created(row),
        "status": row["status"],
        "expired_at": row["expired_at"],
        "created_at": row["created_at"],
    }


async def create_aircraft(
    conn: AsyncConnection, actor: Actor, body: NewAircraftBody, now: datetime
) -> dict[str, Any]:
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
    values = body.model_dump() | {
        "id": new_id(),
        "org_id": actor.org_id,
        "tail_number": tail,
        "is_active": True,
        "created_at": now,
    }
    return public(await inserted(conn, insert(Aircraft).values(values)), AircraftOut)


async def delete_aircraft(
    conn: AsyncConnection, actor: Actor, aircraft_id: uuid.UUID, now: datetime
) -> None:
    await soft_delete(conn, Aircraft, actor.org_id, aircraft_id, "aircraft", now)


async def deactivate(
    conn: AsyncConnection, actor: Actor, aircraft_id: uuid.UUID, now: datetime
) -> dict[str, Any]:
    """Grounds the aircraft by hand: aircraft.grounded with reason admin_deactivate."""
    current = await locked(conn, Aircraft, actor.org_id, aircraft_id, "aircraft")
    if not current["is_active"]:
        raise Conflict("The aircraft is already inactive")
    row = await moved(
        conn,
        update(Aircraft)
        .where(Aircraft.id == aircraft_id, Aircraft.is_active.is_(True))
        .values(is_active=False),
        "The aircraft was deactivated meanwhile",
    )
    data = catalogue.aircraft_grounded(row, reason="admin_deactivate")
    await outbox.record(conn, actor.org_id, [catalogue.AIRCRAFT_GROUNDED], data, now)
    return public(row, AircraftOut)


async def reactivate(
    conn: AsyncConnection, actor: Actor, aircraft_id: uuid.UUID, now: datetime
) -> dict[str, Any]:
    current = await locked(conn, Aircraft, actor.org_id, aircraft_id, "aircraft")
    if current["is_active"]:
        raise Conflict("The aircraft is already active")
    row = await moved(
        conn,
        update(Aircraft)
        .where(Aircraft.id == aircraft_id, Aircraft.is_active.is_(False))
        .values(is_active=True),
        "The aircraft was reactivated meanwhile",
    )
    data = catalogue.aircraft_reactivated(row)
    await outbox.record(conn, actor.org_id, [catalogue.AIRCRAFT_REACTIVATED], data, now)
    return public(row, AircraftOut)


async def create_mel_item(
    conn: AsyncConnection, actor: Actor, body: NewMelItemBody, now: datetime
) -> dict[str, Any]:
    """Defers an item onto the aircraft's MEL: mel.created."""
    await referenced(conn, Aircraft, actor.org_id, body.aircraft_id, "aircraft_id")
    today = now.astimezone(UTC).date()
    if body.due_date < today:
        # The expiry job would expire it within the minute; refuse the contradiction instead.
        raise invalid("due_date", "it is already past")
    values = body.model_dump() | {
        "id": new_id(),
        "org_id": actor.org_id,
        "status": "deferred",
        "deferral_date": body.deferral_date or today,
        "created_at": now,
    }
    row = await inserted(conn, insert(MelItem).values(values))
    await outbox.record(
        conn, actor.org_id, [catalogue.MEL_CREATED], catalogue.mel_created(row), now
    )
    return mel_view(row)
