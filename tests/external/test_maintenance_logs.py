"""GET /api/v1/external/maintenance-logs"""

from __future__ import annotations

from datetime import date, timedelta

import httpx
import pytest

from hangar.fleet.models import Aircraft
from hangar.foundation.ids import new_id
from hangar.maintenance.models import MaintenanceLog
from tests.fixtures.external import listed
from tests.fixtures.factories import T0, Org

URL = "/api/v1/external/maintenance-logs"


async def get(client: httpx.AsyncClient, org: Org, **params: str) -> list[dict[str, object]]:
    return await listed(client, URL, org, **params)


async def test_lists_every_field_most_recent_event_date_first(
    client: httpx.AsyncClient, org: Org, other: Org
) -> None:
    plane = await org.add(Aircraft)
    annual = await org.add(
        MaintenanceLog,
        aircraft_id=plane["id"],
        event_type="annual",
        event_date=date(2026, 3, 15),
        hobbs_at_event=1502.3,
        tach_at_event=1201.7,
        ap_cert_number="A&P 1234567",
        ia_cert_number="IA 7654321",
        ia_name="Ivy Inspector",
        ia_sign_off="I certify this aircraft airworthy.",
        return_to_service=True,
        performed_by_name="Mo Mechanic",
        performed_by_cert_number="A&P 1234567",
        performed_at=T0 + timedelta(hours=1, seconds=7),
        last_100hr_hobbs=1500.0,
        annual_due_date=date(2027, 3, 31),
        work_performed="Annual inspection IAW Part 43 Appendix D.",
    )
    bare = await org.add(
        MaintenanceLog,
        aircraft_id=plane["id"],
        event_type="other",
        event_date=date(2026, 4, 1),
        work_performed="",
    )
    undated = await org.add(MaintenanceLog, aircraft_id=plane["id"], event_date=None)
    older = await org.add(MaintenanceLog, aircraft_id=plane["id"], event_date=date(2025, 1, 1))
    await org.add(
        MaintenanceLog, aircraft_id=plane["id"], event_date=date(2026, 12, 1), deleted_at=T0
    )
    their_plane = await other.add(Aircraft)
    await other.add(MaintenanceLog, aircraft_id=their_plane["id"], event_date=date(2026, 6, 1))

    body = await get(client, org)

    assert [e["id"] for e in body] == [
        str(bare["id"]),
        str(annual["id"]),
        str(older["id"]),
        str(undated["id"]),
    ]
    assert body[1] == {
        "id": str(annual["id"]),
        "aircraft_id": str(plane["id"]),
        "event_type": "annual",
        "event_date": "2026-03-15",
        "hobbs_at_event": 1502.3,
        "tach_at_event": 1201.7,
        "ap_cert_number": "A&P 1234567",
        "ia_cert_number": "IA 7654321",
        "ia_name": "Ivy Inspector",
        "ia_sign_off": "I certify this aircraft airworthy.",
        "return_to_service": True,
        "performed_by_name": "Mo Mechanic",
        "performed_by_cert_number": "A&P 1234567",
        "performed_at": "2026-05-01T10:00:07Z",
        "last_100hr_hobbs": 1500.0,
        "annual_due_date": "2027-03-31",
        "work_performed": "Annual inspection IAW Part 43 Appendix D.",
    }
    assert all(set(e) == set(body[1]) for e in body)
    nullable = set(body[1]) - {"id", "aircraft_id", "event_type", "event_date", "work_performed"}
    assert all(body[0][f] is None for f in nullable)
    assert body[0]["work_performed"] == ""
    assert body[3]["event_date"] is None


async def test_filters_by_aircraft(client: httpx.AsyncClient, org: Org, other: Org) -> None:
    one, two = await org.add(Aircraft), await org.add(Aircraft)
    first = await org.add(MaintenanceLog, aircraft_id=one["id"], event_date=date(2026, 1, 1))
    second = await org.add(MaintenanceLog, aircraft_id=one["id"], event_date=date(2026, 2, 1))
    await org.add(MaintenanceLog, aircraft_id=two["id"])
    their_plane = await other.add(Aircraft)
    await other.add(MaintenanceLog, aircraft_id=their_plane["id"])

    found = await get(client, org, aircraft_id=str(one["id"]))
    assert [e["id"] for e in found] == [str(second["id"]), str(first["id"])]
    assert await get(client, org, aircraft_id=str(their_plane["id"])) == []
    assert await get(client, org, aircraft_id=str(new_id())) == []
    assert await get(client, org, aircraft_id="N12345") == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("x" * 999, "x" * 999),
        ("y" * 1000, "y" * 1000),
        ("z" * 1001, "z" * 1000),
        ("abc" * 2000, ("abc" * 2000)[:1000]),
        ("é" * 1500, "é" * 1000),  # two UTF-8 bytes each
        ("✈" * 1001, "✈" * 1000),  # three
        ("🛩" * 1200, "🛩" * 1000),  # four, outside the BMP
        ("a" + "日本語🛠️" * 400, ("a" + "日本語🛠️" * 400)[:1000]),
        ("line one\nline two\r\n\ttabbed " * 100, ("line one\nline two\r\n\ttabbed " * 100)[:1000]),
    ],
)
async def test_work_performed_is_cut_to_exactly_1000_characters(
    client: httpx.AsyncClient, org: Org, other: Org, text: str, expected: str
) -> None:
    plane = await org.add(Aircraft)
    await org.add(MaintenanceLog, aircraft_id=plane["id"], work_performed=text)
    their_plane = await other.add(Aircraft)
    await other.add(MaintenanceLog, aircraft_id=their_plane["id"], work_performed="secret " * 10)

    [entry] = await get(client, org)

    assert len(entry["work_performed"]) == len(expected)  # type: ignore[arg-type]
    assert entry["work_performed"] == expected
