"""Seeding one organization: the generators' rows, written in batches in the caller's
transaction, one table after another so each can reference the ones before."""

from __future__ import annotations

import random
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Protocol

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncConnection

from hangar.fleet.models import Aircraft
from hangar.kit.errors import Unprocessable
from hangar.orgs.commands import require_org
from hangar.orgs.models import Membership, Role
from hangar.reservations.changes import count_change
from hangar.seed import fleet, maintenance, people, reservations, squawks
from hangar.seed.bulk import BATCH, BulkWriter, writer_for
from hangar.seed.common import Generated, batched
from hangar.seed.fleet import Plane
from hangar.seed.people import Person

SEEDED_TABLES = (
    "aircraft",
    "users",
    "memberships",
    "reservations",
    "squawks",
    "maintenance_logs",
    "work_orders",
)


@dataclass(frozen=True)
class Sizes:
    """How many rows of each kind to add. The defaults make a believable school to try."""

    aircraft: int = 12
    members: int = 80
    reservations: int = 5000
    squawks: int = 300
    maintenance_logs: int = 400
    work_orders: int = 150


class Progress(Protocol):
    def start(self, what: str, total: int) -> None: ...

    def advance(self, what: str, rows: int) -> None: ...


class Silent:
    def start(self, what: str, total: int) -> None:
        pass

    def advance(self, what: str, rows: int) -> None:
        pass


# Writes a generator's rows to a table, counting them as progress of `what`.
Write = Callable[[str, str, Sequence[str], Generated], Awaitable[None]]


@dataclass(frozen=True)
class Pools:
    """The organization's live aircraft and people, seeded now or before, that rows refer to."""

    planes: list[Plane]
    pilots: list[uuid.UUID]
    instructors: list[uuid.UUID]
    reporters: list[uuid.UUID]
    crew: list[maintenance.Mechanic]


async def seed_org(
    conn: AsyncConnection,
    org_id: uuid.UUID,
    sizes: Sizes,
    *,
    now: datetime,
    rng: random.Random | None = None,
    progress: Progress | None = None,
) -> dict[str, int]:
    """Adds `sizes` rows to the organization; returns the counts added, by kind."""
    rng = rng or random.Random()
    progress = progress or Silent()
    await require_org(conn, org_id)
    needs_aircraft = sizes.squawks or sizes.maintenance_logs or sizes.work_orders
    if needs_aircraft and not sizes.aircraft and not await _live_aircraft(conn, org_id):
        raise Unprocessable(
            "VALIDATION_ERROR",
            "squawks, maintenance logs and work orders need an aircraft; "
            "the organization has none and none is being seeded",
        )
    for what, total in asdict(sizes).items():
        progress.start(what, total)
    writer = await writer_for(conn)

    async def write(what: str, table: str, columns: Sequence[str], rows: Generated) -> None:
        await writer.write_generated(table, columns, rows, lambda n: progress.advance(what, n))

    taken = set(await conn.scalars(select(Aircraft.tail_number).where(Aircraft.org_id == org_id)))
    aircraft = (org_id, sizes.aircraft, _own(rng), now, taken)
    await write("aircraft", "aircraft", fleet.COLUMNS, Generated(fleet.aircraft_rows, aircraft))
    await _write_members(conn, writer, org_id, sizes.members, rng, now, progress)
    pools = await _pools(conn, org_id, rng, now)
    await _write_activity(conn, write, org_id, sizes, rng, now, pools)
    await writer.analyze(SEEDED_TABLES)
    return asdict(sizes)


def _own(rng: random.Random) -> random.Random:
    """A stream of a generator's own, seeded from `rng`: the generator may run in another
    process, and a seeded `rng` must still give the same rows."""
    return random.Random(rng.getrandbits(64))


async def _write_activity(
    conn: AsyncConnection,
    write: Write,
    org_id: uuid.UUID,
    sizes: Sizes,
    rng: random.Random,
    now: datetime,
    pools: Pools,
) -> None:
    """The reservations, squawks, maintenance log entries and work orders, each drawn from a
    stream of its own (in this order), referring to the organization's aircraft and people."""
    planes, pilots, instructors = pools.planes, pools.pilots, pools.instructors
    await write(
        "reservations",
        "reservations",
        reservations.COLUMNS,
        Generated(
            reservations.reservation_rows,
            (org_id, sizes.reservations, _own(rng), now, planes, pilots, instructors),
        ),
    )
    if sizes.reservations:
        await count_change(conn, org_id, now)  # calendars polling the feed see the new rows
    mechanics = [m.user_id for m in pools.crew if m.user_id is not None]
    await write(
        "squawks",
        "squawks",
        squawks.COLUMNS,
        Generated(
            squawks.squawk_rows,
            (org_id, sizes.squawks, _own(rng), now, planes, pools.reporters, mechanics),
        ),
    )
    await write(
        "maintenance_logs",
        "maintenance_logs",
        maintenance.LOG_COLUMNS,
        Generated(
            maintenance.log_rows,
            (org_id, sizes.maintenance_logs, _own(rng), now, planes, pools.crew),
        ),
    )
    await write(
        "work_orders",
        "work_orders",
        maintenance.WORK_ORDER_COLUMNS,
        Generated(
            maintenance.work_order_rows,
            (org_id, sizes.work_orders, _own(rng), now, planes, pools.crew),
        ),
    )


async def _live_aircraft(conn: AsyncConnection, org_id: uuid.UUID) -> int:
    stmt = select(func.count()).where(Aircraft.org_id == org_id, Aircraft.deleted_at.is_(None))
    return int(await conn.scalar(stmt) or 0)


async def _write_members(
    conn: AsyncConnection,
    writer: BulkWriter,
    org_id: uuid.UUID,
    count: int,
    rng: random.Random,
    now: datetime,
    progress: Progress,
) -> None:
    roles = await conn.execute(select(Role.name, Role.id).where(Role.org_id == org_id))
    role_ids: dict[str, uuid.UUID] = dict(roles.all())
    pairs = people.member_rows(org_id, count, rng, now, role_ids)
    for batch in batched(pairs, BATCH):
        await writer.write("users", people.USER_COLUMNS, [user for user, _ in batch])
        await writer.write("memberships", people.MEMBERSHIP_COLUMNS, [m for _, m in batch])
        progress.advance("members", len(batch))


async def _pools(
    conn: AsyncConnection, org_id: uuid.UUID, rng: random.Random, now: datetime
) -> Pools:
    # Ordered, so that a seeded `rng` gives the same rows on every run.
    aircraft = await conn.execute(
        select(Aircraft.id, Aircraft.is_active, Aircraft.hobbs_current, Aircraft.tach_current)
        .where(Aircraft.org_id == org_id, Aircraft.deleted_at.is_(None))
        .order_by(Aircraft.id)
    )
    planes = [
        fleet.plane(
            rng, now, id=a.id, is_active=a.is_active, hobbs=a.hobbs_current, tach=a.tach_current
        )
        for a in aircraft
    ]
    members = await conn.execute(
        select(
            Membership.user_id,
            Role.name,
            Membership.status,
            Membership.first_name,
            Membership.last_name,
        )
        .select_from(Membership)
        .outerjoin(Role, Role.id == Membership.role_id)
        .where(Membership.org_id == org_id, Membership.deleted_at.is_(None))
        .order_by(Membership.id)
    )
    everyone = [
        Person(m.user_id, m.name, m.status, f"{m.first_name} {m.last_name}".strip())
        for m in members
    ]
    active = [p for p in everyone if p.status == "active"]
    # Students book the aircraft; staff fly too, but mostly from the right seat.
    students = [p.user_id for p in active if p.role in ("member", "admin")]
    return Pools(
        planes=planes,
        pilots=students or [p.user_id for p in active],
        instructors=[p.user_id for p in active if p.role == "instructor"],
        reporters=[p.user_id for p in active],
        crew=maintenance.mechanics(
            rng, [(p.user_id, p.name) for p in active if p.role == "mechanic"]
        ),
    )
