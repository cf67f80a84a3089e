"""Reservation moves: create, cancel, check in, check out, no-show/expire, delete.

A caller with only reservations.own may act on reservations where they are the pilot;
reservations.manage covers any. Only `confirmed` and `standby` reservations are still open:
every move out of another status is a 409. Callers own the transaction.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import datetime
from typing import Any, Literal

from pydantic import Field, model_validator
from sqlalchemy import Update, update
from sqlalchemy.ext.asyncio import AsyncConnection

from hangar.fleet.service import in_service, record_hobbs, require_aircraft
from hangar.kit.bodies import BodyId, RequestBody
from hangar.kit.errors import Conflict, Forbidden
from hangar.kit.params import AwareDateTime
from hangar.kit.rows import Record, created, locked, moved, public
from hangar.kit.rows import soft_delete as _soft_delete
from hangar.orgs.actors import Actor
from hangar.orgs.capabilities import RESERVATIONS_MANAGE
from hangar.orgs.commands import require_member
from hangar.reservations.changes import count_change
from hangar.reservations.models import ActivityType, Reservation
from hangar.reservations.schemas import ReservationRow
from hangar.squawks.service import open_grounding_count
from hangar.webhooks.events import catalogue, outbox

OPEN = ("confirmed", "standby")
# A squawk still being worked on; a deferred one has been judged safe to fly with.


class NewReservationBody(RequestBody):
    aircraft_id: BodyId | None = None
    pilot_id: BodyId | None = None  # omitted: the caller
    instructor_id: BodyId | None = None
    activity_type: ActivityType
    start_time: AwareDateTime
    end_time: AwareDateTime
    status: Literal["confirmed", "standby"] = "confirmed"
    is_backup: bool = False

    @model_validator(mode="after")
    def _ends_after_start(self) -> NewReservationBody:
        if self.end_time <= self.start_time:
            raise ValueError("end_time must be after start_time")
        return self


class CancelBody(RequestBody):
    reason: str = Field(min_length=1, max_length=500)


class CheckInBody(RequestBody):
    force: bool = False


class CheckoutBody(RequestBody):
    hobbs_out: float = Field(ge=0)
    hobbs_in: float = Field(ge=0)

    @model_validator(mode="after")
    def _in_not_before_out(self) -> CheckoutBody:
        if self.hobbs_in < self.hobbs_out:
            raise ValueError("hobbs_in must not be less than hobbs_out")
        return self


class StatusBody(RequestBody):
    status: Literal["no_show", "expired"]


def _forbidden() -> Forbidden:
    return Forbidden(
        f"This needs the capability {RESERVATIONS_MANAGE}: the reservation is another pilot's"
    )


async def _open_reservation(
    conn: AsyncConnection, actor: Actor, reservation_id: uuid.UUID, move: str
) -> Record:
    """The locked reservation, if the actor may act on it and it is still open."""
    current = await locked(conn, Reservation, actor.org_id, reservation_id, "reservation")
    if not actor.can(RESERVATIONS_MANAGE) and current["pilot_id"] != actor.user_id:
        raise _forbidden()
    if current["status"] not in OPEN:
        raise Conflict(f"A {current['status']} reservation cannot be {move}")
    return current


# The UPDATEs restate the state they expect; no row back is the 409 that `moved` gives.
def _still_open(reservation_id: uuid.UUID) -> Update:
    return update(Reservation).where(Reservation.id == reservation_id, Reservation.status.in_(OPEN))


_CLOSED_MEANWHILE = "The reservation was closed meanwhile"


def _not_checked_in(reservation_id: uuid.UUID) -> Update:
    return _still_open(reservation_id).where(Reservation.checked_in_at.is_(None))


_CHECKED_IN_MEANWHILE = "The reservation was checked in or closed meanwhile"


async def _announced(
    conn: AsyncConnection,
    actor: Actor,
    row: Record,
    names: list[str],
    data: Mapping[str, Any],
    now: datetime,
) -> ReservationRow:
    """After a move: its events `names` recorded with `data`, the change counted for the
    calendar feed, and the row as the API answers it."""
    await outbox.record(conn, actor.org_id, names, data, now)
    await count_change(conn, actor.org_id, now)
    return public(row, ReservationRow)


async def create(
    conn: AsyncConnection, actor: Actor, body: NewReservationBody, now: datetime
) -> ReservationRow:
    """reservation.created, plus reservation.confirmed with the same bytes when confirmed."""
    pilot_id = body.pilot_id if "pilot_id" in body.model_fields_set else actor.user_id
    if pilot_id != actor.user_id and not actor.can(RESERVATIONS_MANAGE):
        raise _forbidden()
    if body.aircraft_id is not None:
        await require_aircraft(conn, actor.org_id, body.aircraft_id, "aircraft_id")
    for field, user_id in (("pilot_id", pilot_id), ("instructor_id", body.instructor_id)):
        if user_id is not None:
            await require_member(conn, actor.org_id, user_id, field)
    values = body.model_dump() | {"pilot_id": pilot_id}
    row = await created(conn, Reservation, actor.org_id, values, now)
    names = [catalogue.RESERVATION_CREATED]
    if row["status"] == "confirmed":
        names.append(catalogue.RESERVATION_CONFIRMED)
    return await _announced(conn, actor, row, names, catalogue.reservation_created(row), now)


async def cancel(
    conn: AsyncConnection, actor: Actor, reservation_id: uuid.UUID, body: CancelBody, now: datetime
) -> ReservationRow:
    await _open_reservation(conn, actor, reservation_id, "cancelled")
    row = await moved(
        conn,
        _still_open(reservation_id).values(status="cancelled", cancellation_reason=body.reason),
        _CLOSED_MEANWHILE,
    )
    data = catalogue.reservation_cancelled(row)
    return await _announced(conn, actor, row, [catalogue.RESERVATION_CANCELLED], data, now)


async def _blocking_issues(
    conn: AsyncConnection, org_id: uuid.UUID, aircraft_id: uuid.UUID | None
) -> list[str]:
    if aircraft_id is None:
        return []  # ground lessons need no aircraft
    is_active = await in_service(conn, org_id, aircraft_id)
    issues = []
    if is_active is None:
        issues.append("the aircraft is no longer in the fleet")
    elif not is_active:
        issues.append("the aircraft is inactive")
    grounding = await open_grounding_count(conn, org_id, aircraft_id)
    if grounding:
        issues.append(f"the aircraft has {grounding} open grounding squawk(s)")
    return issues


async def check_in(
    conn: AsyncConnection,
    actor: Actor,
    reservation_id: uuid.UUID,
    body: CheckInBody | None,
    now: datetime,
) -> ReservationRow:
    """Pre-flight check-in; a blocking issue refuses it unless `force`, which is recorded."""
    current = await _open_reservation(conn, actor, reservation_id, "checked in")
    if current["checked_in_at"] is not None:
        raise Conflict("The reservation is already checked in")
    issues = await _blocking_issues(conn, actor.org_id, current["aircraft_id"])
    if issues and not (body and body.force):
        raise Conflict(
            f"Check-in blocked: {'; '.join(issues)} (force overrides)", "CHECK_IN_BLOCKED"
        )
    row = await moved(
        conn, _not_checked_in(reservation_id).values(checked_in_at=now), _CHECKED_IN_MEANWHILE
    )
    data = catalogue.reservation_checked_in(row, forced=bool(issues))
    return await _announced(conn, actor, row, [catalogue.RESERVATION_CHECKED_IN], data, now)


async def checkout(
    conn: AsyncConnection,
    actor: Actor,
    reservation_id: uuid.UUID,
    body: CheckoutBody,
    now: datetime,
) -> ReservationRow:
    """End of flight: completed, the aircraft's Hobbs advanced, two identical events."""
    current = await _open_reservation(conn, actor, reservation_id, "checked out")
    if current["checked_in_at"] is None:
        raise Conflict("Check in before checking out")
    row = await moved(
        conn,
        _still_open(reservation_id).values(
            status="completed", completed_at=now, hobbs_out=body.hobbs_out, hobbs_in=body.hobbs_in
        ),
        _CLOSED_MEANWHILE,
    )
    if row["aircraft_id"] is not None:
        await record_hobbs(conn, actor.org_id, row["aircraft_id"], body.hobbs_in)
    names = [catalogue.RESERVATION_COMPLETED, catalogue.FLIGHT_SESSION_COMPLETED]
    return await _announced(conn, actor, row, names, catalogue.reservation_completed(row), now)


async def set_status(
    conn: AsyncConnection, actor: Actor, reservation_id: uuid.UUID, body: StatusBody, now: datetime
) -> ReservationRow:
    """Staff mark an open reservation no_show or expired; no event is defined for either."""
    current = await _open_reservation(conn, actor, reservation_id, f"marked {body.status}")
    if current["checked_in_at"] is not None:
        raise Conflict(f"A checked-in reservation cannot be marked {body.status}")
    row = await moved(
        conn, _not_checked_in(reservation_id).values(status=body.status), _CHECKED_IN_MEANWHILE
    )
    await count_change(conn, actor.org_id, now)
    return public(row, ReservationRow)


async def soft_delete(
    conn: AsyncConnection, actor: Actor, reservation_id: uuid.UUID, now: datetime
) -> None:
    await _soft_delete(conn, Reservation, actor.org_id, reservation_id, "reservation", now)
    await count_change(conn, actor.org_id, now)
