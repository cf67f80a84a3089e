"""MEL deferrals (fleet.manage) and the scheduled MEL-expiry job."""

from __future__ import annotations

import asyncio
import uuid
from datetime import date, timedelta
from typing import Any

import httpx
import orjson
import pytest
from sqlalchemy import insert, select
from sqlalchemy.ext.asyncio import AsyncEngine
from typer.testing import CliRunner

from hangar import cli
from hangar.fleet.mel_expiry import expire_mel_items
from hangar.fleet.models import Aircraft, MelItem
from hangar.foundation.ids import new_id
from hangar.webhooks.events import outbox
from tests.fixtures.actions import Outsiders, assert_invalid, events, names, public_one, url
from tests.fixtures.environment import SECRET
from tests.fixtures.factories import T0, Org
from tests.fixtures.fakes import FakeClock

TODAY = date(2026, 5, 4)  # the FakeClock's day


async def deferral(org: Org, aircraft_id: Any, due: date) -> str:
    row = {
        "id": new_id(),
        "org_id": org.id,
        "aircraft_id": aircraft_id,
        "item_description": "Right landing light inoperative",
        "mel_category": "c",
        "status": "deferred",
        "deferral_date": due - timedelta(days=10),
        "due_date": due,
        "created_at": T0,
    }
    async with org.engine.begin() as conn:
        await conn.execute(insert(MelItem).values(row))
    return str(row["id"])


async def status_of(engine: AsyncEngine, item_id: str) -> str:
    async with engine.connect() as conn:
        found = await conn.scalar(select(MelItem.status).where(MelItem.id == uuid.UUID(item_id)))
    return str(found)


async def test_mechanic_defers_an_item(mechanic: httpx.AsyncClient, org: Org) -> None:
    plane = str((await org.add(Aircraft))["id"])
    body = {"aircraft_id": plane, "item_description": "Clock", "mel_category": "b"}
    response = await mechanic.post(url(org, "mel-items"), json={**body, "due_date": "2026-05-14"})

    assert response.status_code == 201, response.text
    created = response.json()
    assert (created["status"], created["deferral_date"], created["due_date"]) == (
        "deferred",
        "2026-05-04",
        "2026-05-14",
    )
    assert await names(org.engine, org.id) == ["mel.created"]


@pytest.mark.parametrize(
    "change",
    [
        {"mel_category": "e"},
        {"due_date": "2026-05-03"},  # already past
        {"deferral_date": "2026-05-20"},  # after the due date
        {"aircraft_id": "00000000-0000-7000-8000-000000000000"},
        {"due_date": None},
    ],
)
async def test_invalid_deferrals_are_422(
    admin: httpx.AsyncClient, org: Org, change: dict[str, Any]
) -> None:
    plane = str((await org.add(Aircraft))["id"])
    body = {"aircraft_id": plane, "item_description": "Clock", "mel_category": "b"}
    response = await admin.post(
        url(org, "mel-items"), json={**body, "due_date": "2026-05-14", **change}
    )
    assert_invalid(response)


async def test_only_fleet_manage_and_only_this_org(outsiders: Outsiders, org: Org) -> None:
    plane = str((await org.add(Aircraft))["id"])
    body = {
        "aircraft_id": plane,
        "item_description": "x",
        "mel_category": "a",
        "due_date": "2026-06-01",
    }
    await outsiders.refused(org, "POST", "mel-items", body, "fleet.manage")


async def test_an_overdue_item_expires_and_grounds_its_aircraft(
    engine: AsyncEngine,
    client: httpx.AsyncClient,
    org: Org,
    clock: FakeClock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    plane = (await org.add(Aircraft))["id"]
    overdue = await deferral(org, plane, TODAY - timedelta(days=1))
    due_today = await deferral(org, plane, TODAY)
    fired: list[str] = []
    real_record = outbox.record

    async def spy(conn: Any, org_id: Any, event_names: Any, data: Any, now: Any) -> Any:
        fired.extend(event_names)
        return await real_record(conn, org_id, event_names, data, now)

    monkeypatch.setattr(outbox, "record", spy)

    assert await expire_mel_items(engine, clock.now()) >= 1

    assert await status_of(engine, overdue) == "expired"
    assert await status_of(engine, due_today) == "deferred"
    assert fired == ["mel.expired", "aircraft.grounded"]
    assert (await events(engine, org.id, "mel.expired"))[0]["auto_grounded"] is True
    assert (await events(engine, org.id, "aircraft.grounded"))[0]["reason"] == "mel_expired"
    assert (await public_one(client, org, "aircraft", str(plane)))["is_active"] is False
    assert await expire_mel_items(engine, clock.now()) == 0
    clock.advance(days=1)
    assert await expire_mel_items(engine, clock.now()) == 1
    assert await status_of(engine, due_today) == "expired"
    # The aircraft was already grounded: no second aircraft.grounded.
    assert (await names(engine, org.id)).count("aircraft.grounded") == 1


async def test_an_inactive_aircraft_is_not_grounded_again(
    engine: AsyncEngine, org: Org, clock: FakeClock
) -> None:
    plane = (await org.add(Aircraft, is_active=False))["id"]
    await deferral(org, plane, TODAY - timedelta(days=3))
    await expire_mel_items(engine, clock.now())
    assert (await events(engine, org.id, "mel.expired"))[0]["auto_grounded"] is False
    assert await names(engine, org.id) == ["mel.expired"]


async def test_concurrent_runners_expire_each_item_once(
    engine: AsyncEngine, org: Org, clock: FakeClock
) -> None:
    planes = [(await org.add(Aircraft))["id"] for _ in range(3)]
    for plane in planes:
        await deferral(org, plane, TODAY - timedelta(days=2))
    counts = await asyncio.gather(*(expire_mel_items(engine, clock.now()) for _ in range(3)))
    assert sum(counts) >= 3
    assert (await names(engine, org.id)).count("mel.expired") == 3
    assert (await names(engine, org.id)).count("aircraft.grounded") == 3


async def test_the_command_runs_the_job_once(
    database_url: str, engine: AsyncEngine, org: Org, monkeypatch: pytest.MonkeyPatch
) -> None:
    plane = (await org.add(Aircraft))["id"]
    item = await deferral(org, plane, date(2001, 1, 1))
    monkeypatch.setenv("HANGAR_DATABASE_URL", database_url)
    monkeypatch.setenv("HANGAR_SECRET_KEY", SECRET)
    result = await asyncio.to_thread(CliRunner().invoke, cli.app, ["jobs", "run", "mel-expiry"])
    assert result.exit_code == 0, result.output
    assert orjson.loads(result.stdout)["expired"] >= 1
    assert await status_of(engine, item) == "expired"
    unknown = await asyncio.to_thread(CliRunner().invoke, cli.app, ["jobs", "run", "nope"])
    assert unknown.exit_code != 0
