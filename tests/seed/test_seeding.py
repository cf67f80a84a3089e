"""Seeding in bulk: the rows the generators make, how they reach each database, and what a
failure leaves behind."""

from __future__ import annotations

import io
import random
import uuid
from collections.abc import Iterator
from datetime import date, timedelta

import pytest
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncEngine

from hangar.foundation.ids import new_id
from hangar.reservations.models import Reservation
from hangar.seed import fleet, producer, reservations
from hangar.seed.binary_copy import HEADER, TRAILER, encode_rows, encoders
from hangar.seed.bulk import BATCH, writer_for
from hangar.seed.common import Generated, Row
from hangar.seed.seeding import Sizes, seed_org
from hangar.wiring.tables import Base
from tests.fixtures.factories import T0, make_org


def _reservations(count: int, seed: int) -> list[Row]:
    rng = random.Random(seed)
    planes = [
        fleet.plane(rng, T0, id=new_id(), is_active=True, hobbs=4000.0, tach=3400.0)
        for _ in range(3)
    ]
    people = [new_id() for _ in range(5)]
    rows = reservations.reservation_rows(new_id(), count, rng, T0, planes, people, people[:2])
    return list(rows)


def test_reservations_come_in_the_order_they_were_booked() -> None:
    rows = _reservations(2000, seed=7)
    created = [row[reservations.COLUMNS.index("created_at")] for row in rows]
    assert created == sorted(created)
    ids = [row[0] for row in rows]
    # UUIDv7 of created_at: ids ascend with it (to the millisecond), as the app writes them.
    assert [i.bytes[:6] for i in ids] == sorted(i.bytes[:6] for i in ids)
    # Booking order is not start order: a booking is made up to a month ahead.
    starts = [row[reservations.COLUMNS.index("start_time")] for row in rows]
    dated = [s for s in starts if s is not None]
    assert dated != sorted(dated)


def test_a_seeded_rng_gives_the_same_reservations_but_for_their_ids() -> None:
    first, second = _reservations(500, seed=3), _reservations(500, seed=3)
    # Ids (the row's, the org's, the aircraft's and the people's) come from the OS.
    assert [row[5:] for row in first] == [row[5:] for row in second]
    assert [row[5:] for row in first] != [row[5:] for row in _reservations(500, seed=4)]


async def test_binary_copy_writes_every_seeded_type_exactly(engine: AsyncEngine) -> None:
    if engine.dialect.name != "postgresql":
        pytest.skip("binary COPY is PostgreSQL's")
    org = await make_org(engine, "Encoding")
    table = Base.metadata.tables["aircraft"]
    columns = [c.name for c in table.columns]
    values = {
        "id": new_id(),
        "org_id": org.id,
        "tail_number": "N1234É",  # not ASCII: lengths are in bytes
        "aircraft_type": "Cessna 172S",
        "display_name": None,
        "is_active": False,
        "hobbs_current": 1234.5678,
        "tach_current": None,
        "annual_due_date": date(1999, 12, 31),  # before PostgreSQL's epoch: negative days
        "last_100hr_hobbs": 0.1,
        "created_at": T0 + timedelta(microseconds=123457),
        "deleted_at": T0 - timedelta(days=9000, microseconds=1),
    }
    assert set(values) == set(columns)  # every column of the table, so every type it has
    row = tuple(values[c] for c in columns)
    data = HEADER + encode_rows(encoders(table, columns), [row]) + TRAILER
    async with engine.connect() as conn:
        await conn.execute(select(1))  # BEGIN, so that the rollback below undoes the COPY
        raw = await conn.get_raw_connection()
        await raw.driver_connection.copy_to_table(  # type: ignore[union-attr]
            "aircraft", source=io.BytesIO(data), columns=columns, format="binary"
        )
        back = (await conn.execute(select(table).where(table.c.id == values["id"]))).one()
        await conn.rollback()
    assert back._asdict() == values


def test_a_row_of_the_wrong_width_is_refused() -> None:
    table = Base.metadata.tables["aircraft"]
    with pytest.raises(ValueError, match="a row of 2 values for 3 columns"):
        encode_rows(encoders(table, ["id", "org_id", "tail_number"]), [(new_id(), new_id())])


def broken_rows(org_id: uuid.UUID, count: int) -> Iterator[Row]:
    """Reservations that stop with an error before the last, as a generator with a bug would."""
    for i, row in enumerate(_reservations(count, seed=1)):
        if i == count - 1:
            raise RuntimeError("a bug in the generator")
        yield (row[0], org_id, None, None, None, *row[5:])


async def test_a_generator_that_fails_halfway_leaves_nothing_behind(engine: AsyncEngine) -> None:
    org = await make_org(engine, "Broken")
    written: list[int] = []
    # More than a batch (SQLite) or a frame (PostgreSQL's child process): some rows have
    # been written when the generator fails.
    rows = Generated(broken_rows, (org.id, BATCH + 1000))

    async def seed() -> None:
        async with engine.begin() as conn:
            writer = await writer_for(conn)
            await writer.write_generated("reservations", reservations.COLUMNS, rows, written.append)

    with pytest.raises(RuntimeError):
        await seed()
    assert sum(written) > 0  # some rows had been written inside the transaction
    async with engine.connect() as conn:
        count = await conn.scalar(
            select(func.count()).select_from(Reservation).where(Reservation.org_id == org.id)
        )
    assert count == 0


def valid_rows(org_id: uuid.UUID, count: int) -> Iterator[Row]:
    for row in _reservations(count, seed=2):
        yield (row[0], org_id, None, None, None, *row[5:])


async def test_rows_over_several_copy_statements_all_arrive(
    engine: AsyncEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    org = await make_org(engine, "Statements")
    # Statements of two frames (PostgreSQL): 12,345 rows take three, the last one short.
    monkeypatch.setattr(producer, "STATEMENT_ROWS", 2 * producer.FRAME_ROWS)
    rows = Generated(valid_rows, (org.id, 12_345))
    written: list[int] = []
    async with engine.begin() as conn:
        writer = await writer_for(conn)
        await writer.write_generated("reservations", reservations.COLUMNS, rows, written.append)
    async with engine.connect() as conn:
        made = await conn.scalars(
            select(Reservation.created_at).where(Reservation.org_id == org.id)
        )
        stored = sorted(made)
    # Ids come from the OS; the times of a seeded generator are the same on every call.
    assert stored == [row[15] for row in valid_rows(org.id, 12_345)]
    assert sum(written) == 12_345


async def test_seed_org_with_a_seeded_rng_is_reproducible(engine: AsyncEngine) -> None:
    orgs = [await make_org(engine, "Repeat") for _ in range(2)]
    sizes = Sizes(
        aircraft=2, members=5, reservations=40, squawks=0, maintenance_logs=0, work_orders=0
    )
    for org in orgs:
        async with engine.begin() as conn:
            await seed_org(conn, org.id, sizes, now=T0, rng=random.Random(11))
    shapes = []
    for org in orgs:
        async with engine.connect() as conn:
            rows = await conn.execute(
                select(Reservation.activity_type, Reservation.status, Reservation.start_time)
                .where(Reservation.org_id == org.id)
                .order_by(Reservation.created_at)
            )
            shapes.append([tuple(row) for row in rows])
    assert len(shapes[0]) == 40
    assert shapes[0] == shapes[1]
