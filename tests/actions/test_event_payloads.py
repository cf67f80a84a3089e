"""Each event's `data` against the service spec's Event catalogue: exact keys and types."""

from __future__ import annotations

import uuid
from datetime import date, timedelta
from typing import Any

import httpx
import orjson
import pytest
from sqlalchemy import insert

from hangar.fleet.mel_expiry import expire_mel_items
from hangar.fleet.models import Aircraft, MelItem
from hangar.foundation.ids import new_id
from hangar.webhooks.events.catalogue import EVENT_NAMES
from tests.fixtures.actions import raw_events, url, user_id, utc
from tests.fixtures.all_events import fire_everything
from tests.fixtures.factories import T0, Org
from tests.fixtures.fakes import FakeClock

ID, OPT_ID, TS, DATE, STR, BOOL, NUM = "id", "id?", "ts", "date", "str", "bool", "num"
PEOPLE = {"id": ID, "aircraft_id": OPT_ID, "pilot_id": OPT_ID, "instructor_id": OPT_ID}
SLOT = {"start_time": TS, "end_time": TS, "activity_type": STR}
CREATED = {**PEOPLE, **SLOT, "status": STR, "is_backup": BOOL}
COMPLETED = {**PEOPLE, "checkout_completed_at": TS, "hobbs_out": NUM, "hobbs_in": NUM}
SQUAWK = {"id": ID, "aircraft_id": ID, "description": STR, "severity": STR}
CATALOGUE: dict[str, dict[str, str]] = {
    "squawk.created": {**SQUAWK, "is_grounding": BOOL, "reported_by": ID, "created_at": TS},
    "squawk.resolved": {**SQUAWK, "is_grounding": BOOL, "resolved_by": ID, "resolved_at": TS},
    "squawk.escalated": SQUAWK,
    "reservation.created": CREATED,
    "reservation.confirmed": CREATED,
    "reservation.cancelled": {**PEOPLE, **SLOT, "cancellation_reason": STR},
    "reservation.checked_in": {**PEOPLE, "checked_in_at": TS, "forced": BOOL},
    "reservation.completed": COMPLETED,
    "flight_session.completed": COMPLETED,
    "aircraft.reactivated": {"id": ID, "tail_number": STR, "aircraft_type": STR, "is_active": BOOL},
    "mel.created": {
        "id": ID,
        "aircraft_id": ID,
        "item_description": STR,
        "mel_category": STR,
        "deferral_date": DATE,
        "due_date": DATE,
    },
    "mel.expired": {
        "id": ID,
        "aircraft_id": ID,
        "item_description": STR,
        "mel_category": STR,
        "due_date": DATE,
        "auto_grounded": BOOL,
    },
}
GROUNDED = {
    "admin_deactivate": {
        "id": ID,
        "tail_number": STR,
        "aircraft_type": STR,
        "is_active": BOOL,
        "reason": STR,
    },
    "mel_expired": {"id": ID, "tail_number": STR, "reason": STR},
}


def conforms(value: Any, kind: str) -> bool:
    if kind == OPT_ID and value is None:
        return True
    if kind in (ID, OPT_ID):
        return isinstance(value, str) and uuid.UUID(value) is not None
    if kind == TS:
        return isinstance(value, str) and utc(value) is not None
    if kind == DATE:
        return isinstance(value, str) and date.fromisoformat(value).isoformat() == value
    if kind == NUM:
        return isinstance(value, int | float) and not isinstance(value, bool)
    return isinstance(value, {STR: str, BOOL: bool}[kind])


def check(data: dict[str, Any], spec: dict[str, str]) -> None:
    assert list(data) == list(spec)  # the catalogue's order, as the spec lists the fields
    for key, kind in spec.items():
        assert conforms(data[key], kind), (key, data[key])


async def test_every_event_matches_the_catalogue(
    admin: httpx.AsyncClient, org: Org, clock: FakeClock
) -> None:
    me = await user_id(admin)  # before the job's day passes and the session expires
    await fire_everything(admin, org, clock)
    recorded = await raw_events(org.engine, org.id)

    assert {name for name, _ in recorded} == set(EVENT_NAMES)
    for name, raw in recorded:
        data = orjson.loads(raw)
        if name == "aircraft.grounded":
            check(data, GROUNDED[data["reason"]])
        else:
            check(data, CATALOGUE[name])
    by_name = {name: orjson.loads(raw) for name, raw in recorded if name != "aircraft.grounded"}
    assert by_name["reservation.created"]["start_time"] == "2026-05-05T08:00:00Z"
    assert by_name["reservation.created"]["status"] == "confirmed"
    assert by_name["reservation.checked_in"]["forced"] is False
    assert by_name["reservation.cancelled"]["cancellation_reason"] == "weather"
    assert "status" not in by_name["reservation.cancelled"]
    assert by_name["reservation.completed"]["hobbs_in"] == 11.3
    assert by_name["squawk.escalated"]["severity"] == "grounding"
    assert by_name["squawk.resolved"]["is_grounding"] is True
    assert by_name["squawk.resolved"]["resolved_by"] == me
    assert by_name["aircraft.reactivated"]["is_active"] is True
    assert "reason" not in by_name["aircraft.reactivated"]
    assert by_name["mel.created"]["mel_category"] == "c"
    assert by_name["mel.expired"]["auto_grounded"] is True


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("reservation.created", "reservation.confirmed"),
        ("reservation.completed", "flight_session.completed"),
    ],
)
async def test_paired_events_carry_byte_identical_data(
    admin: httpx.AsyncClient, org: Org, clock: FakeClock, first: str, second: str
) -> None:
    await fire_everything(admin, org, clock)
    recorded = await raw_events(org.engine, org.id)
    firsts = [raw for name, raw in recorded if name == first]
    seconds = [raw for name, raw in recorded if name == second]
    assert seconds
    assert sorted(seconds) == sorted(firsts)


async def test_both_grounding_paths_have_their_own_key_set(
    admin: httpx.AsyncClient, org: Org, clock: FakeClock
) -> None:
    manual = (await org.add(Aircraft))["id"]
    await admin.post(url(org, f"aircraft/{manual}/deactivate"))
    expiring = (await org.add(Aircraft))["id"]
    async with org.engine.begin() as conn:
        await conn.execute(
            insert(MelItem).values(
                id=new_id(),
                org_id=org.id,
                aircraft_id=expiring,
                item_description="Nav light",
                mel_category="b",
                status="deferred",
                deferral_date=date(2026, 4, 1),
                due_date=clock.now().date() - timedelta(days=1),
                created_at=T0,
            )
        )
    await expire_mel_items(org.engine, clock.now())
    grounded = {
        data["id"]: data
        for name, raw in await raw_events(org.engine, org.id)
        if name == "aircraft.grounded" and (data := orjson.loads(raw))
    }
    assert set(grounded[str(manual)]) == {
        "id",
        "tail_number",
        "aircraft_type",
        "is_active",
        "reason",
    }
    assert (grounded[str(manual)]["reason"], grounded[str(manual)]["is_active"]) == (
        "admin_deactivate",
        False,
    )
    assert grounded[str(expiring)].keys() == {"id", "tail_number", "reason"}
    assert grounded[str(expiring)]["reason"] == "mel_expired"
