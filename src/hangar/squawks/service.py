"""Squawk moves: report (squawks.report); status, resolve, escalate (squawks.manage).

`resolved` is final: every move out of it is a 409. Callers own the transaction.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Literal

from pydantic import Field
from sqlalchemy import Update, func, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from hangar.fleet.service import require_aircraft
from hangar.kit.bodies import BodyId, RequestBody
from hangar.kit.errors import Conflict
from hangar.kit.rows import Record, created, locked, moved, public
from hangar.orgs.actors import Actor
from hangar.squawks.models import Severity, Squawk
from hangar.squawks.schemas import SquawkRow
from hangar.webhooks.events import catalogue, outbox


class NewSquawkBody(RequestBody):
    aircraft_id: BodyId
    description: str = Field(min_length=1, max_length=4000)
    severity: Severity


class StatusBody(RequestBody):
    status: Literal["in_progress", "deferred"]


def _unresolved(squawk_id: uuid.UUID) -> Update:
    return update(Squawk).where(Squawk.id == squawk_id, Squawk.status != "resolved")


async def _locked_unresolved(
    conn: AsyncConnection, actor: Actor, squawk_id: uuid.UUID, refusal: str
) -> Record:
    """The squawk, locked, or 404; a resolved one is final: 409 with `refusal`."""
    current = await locked(conn, Squawk, actor.org_id, squawk_id, "squawk")
    if current["status"] == "resolved":
        raise Conflict(refusal)
    return current


async def report(
    conn: AsyncConnection, actor: Actor, body: NewSquawkBody, now: datetime
) -> SquawkRow:
    await require_aircraft(conn, actor.org_id, body.aircraft_id, "aircraft_id")
    values = body.model_dump() | {
        "status": "open",
        "is_grounding": body.severity == "grounding",
        "reported_by": actor.user_id,
    }
    row = await created(conn, Squawk, actor.org_id, values, now)
    data = catalogue.squawk_created(row)
    await outbox.record(conn, actor.org_id, [catalogue.SQUAWK_CREATED], data, now)
    return public(row, SquawkRow)


async def set_status(
    conn: AsyncConnection, actor: Actor, squawk_id: uuid.UUID, body: StatusBody, now: datetime
) -> SquawkRow:
    current = await _locked_unresolved(conn, actor, squawk_id, "The squawk is already resolved")
    if current["status"] == body.status:
        raise Conflict(f"The squawk is already {body.status}")
    row = await moved(
        conn,
        _unresolved(squawk_id).where(Squawk.status != body.status).values(status=body.status),
        "The squawk was moved meanwhile",
    )
    return public(row, SquawkRow)


async def resolve(
    conn: AsyncConnection, actor: Actor, squawk_id: uuid.UUID, now: datetime
) -> SquawkRow:
    await _locked_unresolved(conn, actor, squawk_id, "The squawk is already resolved")
    row = await moved(
        conn,
        _unresolved(squawk_id).values(
            status="resolved", resolved_at=now, resolved_by=actor.user_id
        ),
        "The squawk was resolved meanwhile",
    )
    data = catalogue.squawk_resolved(row)
    await outbox.record(conn, actor.org_id, [catalogue.SQUAWK_RESOLVED], data, now)
    return public(row, SquawkRow)


async def escalate(
    conn: AsyncConnection, actor: Actor, squawk_id: uuid.UUID, now: datetime
) -> SquawkRow:
    """Severity becomes grounding (status unchanged); a no-op escalation is a 409."""
    current = await _locked_unresolved(
        conn, actor, squawk_id, "A resolved squawk cannot be escalated"
    )
    if current["severity"] == "grounding":
        raise Conflict("The squawk is already grounding")
    row = await moved(
        conn,
        _unresolved(squawk_id)
        .where(Squawk.severity != "grounding")
        .values(severity="grounding", is_grounding=True),
        "The squawk was escalated or resolved meanwhile",
    )
    data = catalogue.squawk_escalated(row)
    await outbox.record(conn, actor.org_id, [catalogue.SQUAWK_ESCALATED], data, now)
    return public(row, SquawkRow)


UNRESOLVED = ("open", "in_progress")


async def open_grounding_count(
    conn: AsyncConnection, org_id: uuid.UUID, aircraft_id: uuid.UUID
) -> int:
    """The aircraft's grounding squawks not yet resolved (a check-in asks before a flight)."""
    count = await conn.scalar(
        select(func.count()).where(
            Squawk.org_id == org_id,
            Squawk.aircraft_id == aircraft_id,
            Squawk.deleted_at.is_(None),
            Squawk.is_grounding.is_(True),
            Squawk.status.in_(UNRESOLVED),
        )
    )
    return int(count or 0)
