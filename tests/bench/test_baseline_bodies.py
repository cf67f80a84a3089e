"""The bare baseline of bench/ writes the very bytes hangar writes, endpoint by endpoint:
otherwise its throughput would be no baseline at all."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from datetime import timedelta

import httpx
import pytest
from bench.baseline import Baseline, Database, PgDatabase, SqliteDatabase
from bench.server import RoomyLimiter

from hangar.foundation.sqlite_files import sqlite_path
from hangar.kit.container import Services
from hangar.reservations.models import Reservation
from tests.fixtures.factories import T0, Org, aircraft

API = "/api/v1/external"


@pytest.fixture
async def bare(services: Services) -> AsyncIterator[httpx.AsyncClient]:
    path = sqlite_path(services.settings.database_url)
    db: Database = (
        SqliteDatabase(str(path), size=1)
        if path is not None
        else PgDatabase(services.settings.database_url, size=2)
    )
    await db.open()
    app = Baseline(db, RoomyLimiter(services.limiter), services.cursor_keys)
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=True)
    try:
        async with httpx.AsyncClient(transport=transport, base_url="https://hangar.example") as c:
            yield c
    finally:
        await db.close()


async def _data(org: Org) -> None:
    planes = [await aircraft(org, display_name=name) for name in ("Skyhawk", None, "Ünïcode")]
    await aircraft(org, deleted_at=T0)
    await aircraft(org, is_active=False, hobbs_current=None, annual_due_date=None)
    for i in range(7):
        start = T0 + timedelta(hours=i // 2, microseconds=i * 1000 if i % 3 else 0)
        await org.add(
            Reservation,
            aircraft_id=planes[i % 3]["id"] if i % 4 else None,
            instructor_id=org.admin_id if i % 2 else None,
            start_time=start,
            end_time=None if i == 5 else start + timedelta(hours=1),
            checked_in_at=start if i == 2 else None,
            completed_at=start + timedelta(hours=1, seconds=7) if i == 2 else None,
            status="completed" if i == 2 else "confirmed",
        )
    await org.add(Reservation, deleted_at=T0)
    for _ in range(3):
        await org.add(Reservation, start_time=None, end_time=None, status="standby")
    await org.member("instructor", phone=None)
    await org.member("member", first_name="Zoë", last_name="O'Brien")
    # An invitation's member: the email is the membership's, its user a placeholder without one.
    await org.member(
        "mechanic", status="pending", email=f"invited-{uuid.uuid4().hex[:8]}@x.example"
    )


async def _same(hangar: httpx.AsyncClient, bare: httpx.AsyncClient, url: str, key: str) -> bytes:
    auth = {"Authorization": f"Bearer {key}"}
    ours, theirs = await hangar.get(url, headers=auth), await bare.get(url, headers=auth)
    assert ours.status_code == theirs.status_code == 200, (ours.text, theirs.text)
    assert ours.content == theirs.content
    return ours.content


async def test_reservation_pages_are_byte_identical(
    client: httpx.AsyncClient, bare: httpx.AsyncClient, org: Org, other: Org
) -> None:
    await _data(org)
    await _data(other)
    await _same(client, bare, f"{API}/reservations?limit=500", org.key)
    # Walk in small pages, across the dated rows into the undated ones, by the same cursors.
    url, pages = f"{API}/reservations?limit=3", 0
    while True:
        body = (await _same(client, bare, url, org.key)).decode()
        pages += 1
        cursor = httpx.Response(200, content=body).json()["next_cursor"]
        if cursor is None:
            break
        url = f"{API}/reservations?limit=3&after={cursor}"
    assert pages == 4  # 10 visible rows


async def test_aircraft_and_members_are_byte_identical(
    client: httpx.AsyncClient, bare: httpx.AsyncClient, org: Org, other: Org
) -> None:
    await _data(org)
    await _data(other)
    assert b"Skyhawk" in await _same(client, bare, f"{API}/aircraft", org.key)
    full = await _same(client, bare, f"{API}/members", org.key)
    assert b"O'Brien" in full
    assert b'"email":"invited-' in full
    plain = await _same(client, bare, f"{API}/members", await org.key_with("read:members"))
    assert b"email" not in plain
