"""The column types every feature shares (hangar.db.base)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from sqlalchemy import Column, MetaData, Table, insert, select, text
from sqlalchemy.dialects import sqlite
from sqlalchemy.ext.asyncio import AsyncEngine

from hangar.db.base import UTCDateTime


def _sqlite_result(value: str | None) -> datetime | None:
    dialect = sqlite.dialect()
    process = UTCDateTime().dialect_impl(dialect).result_processor(dialect, None)
    assert process is not None
    result: datetime | None = process(value)
    return result


def test_sqlite_text_comes_back_as_aware_utc() -> None:
    value = _sqlite_result("2026-11-22 10:00:00.250000")
    assert value == datetime(2026, 11, 22, 10, 0, 0, 250000, tzinfo=UTC)
    assert value is not None
    assert value.tzinfo is UTC
    assert _sqlite_result(None) is None


def test_sqlite_text_with_an_offset_of_its_own_is_converted_to_utc() -> None:
    # Not what hangar writes, but what a hand-written row could hold: the instant is kept.
    value = _sqlite_result("2026-11-22 12:00:00+02:00")
    assert value == datetime(2026, 11, 22, 10, tzinfo=UTC)
    assert value is not None
    assert value.tzinfo is UTC


def test_sqlite_text_that_is_no_time_is_an_error() -> None:
    with pytest.raises(ValueError, match="Invalid isoformat"):
        _sqlite_result("not a time")


async def test_a_moment_round_trips_through_the_database_as_aware_utc(
    engine: AsyncEngine,
) -> None:
    table = Table("utc_round_trip", MetaData(), Column("at", UTCDateTime()))
    written = datetime(2026, 11, 22, 12, 30, 0, 125000, tzinfo=timezone(timedelta(hours=2)))
    async with engine.begin() as conn:
        await conn.run_sync(table.create)
        try:
            await conn.execute(insert(table).values(at=written))
            await conn.execute(insert(table).values(at=None))
            read = (await conn.execute(select(table.c.at).order_by(table.c.at))).scalars().all()
        finally:
            await conn.execute(text("DROP TABLE utc_round_trip"))
    moments = [m for m in read if m is not None]
    assert moments == [written]
    assert read.count(None) == 1
    assert moments[0].utcoffset() == timedelta(0)
