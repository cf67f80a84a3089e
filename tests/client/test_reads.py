"""Every read operation of the client against a live hangar: what it returns is the org's
records, typed, field for field what the API sent, and never the other org's."""

from __future__ import annotations

import dataclasses
from datetime import date, datetime, timedelta
from typing import Any

import httpx
import pytest

from hangar.fleet.models import Aircraft
from hangar.kit.scopes import SCOPES
from hangar.maintenance.models import MaintenanceLog, WorkOrder
from hangar.reservations.models import Reservation
from hangar.squawks.models import Squawk
from hangar_client import (
    AsyncClient,
    InsufficientScope,
    InvalidCursor,
    Unauthorized,
    ValidationFailed,
)
from hangar_client.models import CallingKey, KeyOrganization
from tests.fixtures.factories import T0, Org
from tests.fixtures.python_client import Harness, wire

API = "/api/v1/external"


def as_sent(model: Any) -> dict[str, Any]:
    fields = {f.name: getattr(model, f.name) for f in dataclasses.fields(model)}
    contact = fields.pop("contact", None)
    fields |= as_sent(contact) if contact else {}
    return {name: wire(value) for name, value in fields.items()}


async def raw(client: httpx.AsyncClient, org: Org, path: str) -> Any:
    response = await client.get(f"{API}/{path}", headers=org.auth)
    assert response.status_code == 200, response.text
    return response.json()


async def fill(org: Org) -> None:
    plane = (await org.add(Aircraft, display_name="Skyhawk"))["id"]
    await org.add(Aircraft, is_active=False, hobbs_current=None)
    await org.add(Reservation, aircraft_id=plane, checked_in_at=T0)
    await org.add(Squawk, aircraft_id=plane, resolved_at=T0 + timedelta(days=1))
    await org.add(MaintenanceLog, aircraft_id=plane, return_to_service=True, hobbs_at_event=12)
    await org.add(WorkOrder, aircraft_id=plane, work_type="inspection")


async def test_every_read_is_the_api_answer_typed(
    api: AsyncClient, client: httpx.AsyncClient, org: Org, other: Org
) -> None:
    await fill(org)
    await fill(other)
    page = await api.reservations_page()
    got = {
        "reservations": [as_sent(r) for r in page.items],
        "aircraft": [as_sent(a) for a in await api.aircraft()],
        "squawks": [as_sent(s) for s in await api.squawks()],
        "members": [as_sent(m) for m in await api.members()],
        "maintenance-logs": [as_sent(m) for m in await api.maintenance_logs()],
        "work-orders": [as_sent(w) for w in await api.work_orders()],
    }
    for path, records in got.items():
        sent = await raw(client, org, path)
        sent = sent["items"] if path == "reservations" else sent
        assert records == sent, path
        assert records, path
        theirs = await raw(client, other, path)
        theirs = theirs["items"] if path == "reservations" else theirs
        mine = {str(r.get("id", r.get("user_id"))) for r in records}
        assert mine.isdisjoint(str(r.get("id", r.get("user_id"))) for r in theirs), path
    assert page.next_cursor is None
    plane = (await api.aircraft())[0]
    assert isinstance(plane.annual_due_date, date)
    assert isinstance(plane.hobbs_current, float)
    log = (await api.maintenance_logs())[0]
    assert log.hobbs_at_event == 12.0
    assert isinstance(log.hobbs_at_event, float)
    assert page.items[0].checked_in_at == T0


async def test_members_carry_contact_only_with_the_full_scope(
    harness: Harness, org: Org, other: Org
) -> None:
    async with harness.client(await org.key_with("read:members")) as plain:
        (member,) = await plain.members()
    assert member.contact is None
    async with harness.client(await org.key_with("read:members", "read:members.full")) as full:
        (member,) = await full.members()
    assert member.contact is not None
    assert member.contact.first_name == "Ada"
    assert member.user_id == str(org.admin_id)


async def test_the_iterator_follows_next_cursor_across_pages(
    api: AsyncClient, harness: Harness, client: httpx.AsyncClient, org: Org, other: Org
) -> None:
    for _ in range(7):
        await org.add(Reservation)
        await other.add(Reservation)
    walked = [r.id async for r in api.reservations(page_size=3)]
    everything = await raw(client, org, "reservations?limit=500")
    assert walked == [r["id"] for r in everything["items"]]
    assert len(walked) == 7
    pages = [sent for sent in harness.transport.sent if sent.startswith(f"{API}/reservations?")]
    assert len(pages) == 3  # 3 + 3 + 1: the short page ends the walk
    assert "after=" not in pages[0]
    assert all("after=" in sent for sent in pages[1:])


async def test_filters_reach_the_api(api: AsyncClient, org: Org, other: Org) -> None:
    plane_id = (await org.add(Aircraft))["id"]
    plane = str(plane_id)
    mine = await org.add(Reservation, aircraft_id=plane_id, start_time=T0, status="standby")
    await org.add(Reservation, start_time=T0 + timedelta(days=3))
    await org.add(Squawk, aircraft_id=plane_id, is_grounding=True, severity="grounding")
    await org.add(Squawk, aircraft_id=plane_id)
    found = [r.id async for r in api.reservations(aircraft_id=plane)]
    assert found == [str(mine["id"])]
    assert [r.id async for r in api.reservations(status="standby")] == [str(mine["id"])]
    window = api.reservations(start_after=T0, start_before=T0 + timedelta(days=1))
    assert [r.id async for r in window] == [str(mine["id"])]
    grounding = await api.squawks(is_grounding=True)
    assert [s.severity for s in grounding] == ["grounding"]
    assert await api.maintenance_logs(aircraft_id=str(other.id)) == []
    assert await api.work_orders(status="cancelled") == []
    with pytest.raises(ValueError, match="timezone-aware"):
        await api.reservations_page(start_after=datetime(2026, 5, 1))


async def test_a_misspelt_filter_is_refused_before_sending(
    api: AsyncClient, harness: Harness
) -> None:
    """The filters are `**filters` (one TypedDict): a name it does not declare raises
    TypeError, as an unknown keyword argument does, instead of silently not filtering."""
    with pytest.raises(TypeError, match="'aircraft'"):
        await api.reservations_page(aircraft="x")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="'state'"):
        [r async for r in api.reservations(state="standby")]  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="'grounding'"):
        await api.squawks(grounding=True)  # type: ignore[call-arg]
    assert harness.transport.sent == []


async def test_errors_raise_with_the_api_code(harness: Harness, org: Org) -> None:
    async with harness.client("svc_pk_" + "x" * 43) as wrong:
        with pytest.raises(Unauthorized) as refused:
            await wrong.aircraft()
    assert refused.value.code == "UNAUTHORIZED"
    assert refused.value.status == 401
    async with harness.client(await org.key_with("read:aircraft")) as narrow:
        with pytest.raises(InsufficientScope) as scoped:
            await narrow.squawks()
    assert "read:squawks" in scoped.value.detail
    assert scoped.value.code == "INSUFFICIENT_SCOPE"
    async with harness.client(org.key) as full:
        with pytest.raises(InvalidCursor) as cursor:
            await full.reservations_page(after="not-a-cursor")
        with pytest.raises(ValidationFailed) as invalid:
            await full.reservations_page(limit=501)
    assert cursor.value.code == "INVALID_CURSOR"
    assert invalid.value.code == "VALIDATION_ERROR"
    assert harness.slept == []  # none of these is retried: one request each
    assert len(harness.transport.sent) == 4


async def test_organization_names_the_keys_organization_and_the_key(
    api: AsyncClient, harness: Harness, client: httpx.AsyncClient, org: Org, other: Org
) -> None:
    mine = await api.organization()
    assert mine == KeyOrganization(
        id=str(org.id),
        name=(await raw(client, org, "organization"))["name"],
        key=CallingKey(prefix=org.key[:12], scopes=tuple(SCOPES), expires_at=None),
    )
    async with harness.client(await org.key_with("read:squawks")) as narrow:
        theirs = await narrow.organization()
    assert theirs.id == str(org.id)
    assert theirs.key.scopes == ("read:squawks",)
    async with harness.client(other.key) as others:
        assert (await others.organization()).id == str(other.id)
