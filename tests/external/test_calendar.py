"""GET /api/v1/external/reservations.ics: the iCalendar feed (RFC 5545).

Every feed is read back twice: by the `icalendar` package and by the small, independent
unfolder/parser below, so neither parser's leniency can hide a malformed document.

SUMMARY is the aircraft id, a space, then the activity type. When a reservation has no
aircraft (aircraft_id is null), calendar.summary() writes the activity type alone, with no
leading space and no "None": e.g. "ground". The tests below pin that down.

No valid reservation makes a SUMMARY line longer than 75 octets (a UUID, a space and the
longest activity type is 58 octets with the name), so folding is driven through the UID
line with a long service domain, and through calendar.fold() with multi-byte text.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import httpx
import icalendar
import pytest

from hangar.app import create_app
from hangar.external import calendar
from hangar.fleet.models import Aircraft
from hangar.foundation.ids import new_id
from hangar.kit.container import Services
from hangar.reservations.models import Reservation
from tests.fixtures.factories import T0, Org, write_rows
from tests.fixtures.fakes import FakeClock

FEED = "/api/v1/external/reservations.ics"
PRODID = "-//hangar//External API 1.5.0//EN"
DOMAIN = "hangar.example"
STAMP = "20260504T100030Z"  # the FakeClock's start, in UTC basic format
BASIC_UTC = re.compile(r"^\d{8}T\d{6}Z$")


# --- an independent, minimal RFC 5545 reader -----------------------------------------------


@dataclass
class Component:
    name: str
    props: list[tuple[str, str, str]] = field(default_factory=list)  # (name, params, value)
    children: list[Component] = field(default_factory=list)

    def one(self, name: str) -> str:
        values = [v for n, _, v in self.props if n == name]
        assert len(values) == 1, (name, values)
        return values[0]

    def names(self) -> list[str]:
        return [n for n, _, _ in self.props]


def physical_lines(body: bytes) -> list[bytes]:
    """The lines as sent: each must end in CRLF, with no bare CR or LF anywhere."""
    assert body.endswith(b"\r\n")
    lines = body.split(b"\r\n")[:-1]
    for line in lines:
        assert b"\n" not in line, line
        assert b"\r" not in line, line
    return lines


def unfold(body: bytes) -> list[str]:
    """Content lines: a CRLF followed by one space or tab joins a line to the previous one."""
    physical_lines(body)  # the line-ending checks
    text = body.decode("utf-8")  # a fold that split a UTF-8 sequence would fail here
    text = re.sub(r"\r\n[ \t]", "", text)
    return text.split("\r\n")[:-1]


def unescape(value: str) -> str:
    return re.sub(r"\\([\\;,nN])", lambda m: "\n" if m[1] in "nN" else m[1], value)


def parse(body: bytes) -> Component:
    """The VCALENDAR of `body`, with its nested components."""
    stack: list[Component] = []
    root: Component | None = None
    for line in unfold(body):
        match = re.fullmatch(r"([A-Za-z0-9-]+)((?:;[^:]*)?):(.*)", line)
        assert match, f"not a content line: {line!r}"
        name, params, value = match[1].upper(), match[2], match[3]
        if name == "BEGIN":
            component = Component(value)
            if stack:
                stack[-1].children.append(component)
            else:
                assert root is None, "a second top-level component"
                root = component
            stack.append(component)
        elif name == "END":
            assert stack, f"END:{value} without BEGIN"
            assert stack.pop().name == value
        else:
            assert stack, f"{name} outside any component"
            stack[-1].props.append((name, params, value))
    assert not stack, "unterminated component"
    assert root is not None
    assert root.name == "VCALENDAR"
    return root


def events_by_uid(cal: Component) -> dict[str, Component]:
    assert all(child.name == "VEVENT" for child in cal.children)
    found = {event.one("UID"): event for event in cal.children}
    assert len(found) == len(cal.children), "UIDs repeat"
    return found


def library_events(body: bytes) -> dict[str, Any]:
    cal = icalendar.Calendar.from_ical(body)
    assert cal.name == "VCALENDAR"
    events = {str(e["UID"]): e for e in cal.walk("VEVENT")}
    assert len(events) == len(cal.walk("VEVENT"))
    return events


def uid(row_id: Any, domain: str = DOMAIN) -> str:
    return f"svc-resv-{row_id}@{domain}"


def basic(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")


async def feed(client: httpx.AsyncClient, token: str) -> bytes:
    response = await client.get(FEED, params={"token": token})
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].split(";")[0].strip() == "text/calendar"
    return response.content


# --- the document ----------------------------------------------------------------------------


async def test_the_calendar_and_its_events_read_back_by_both_parsers(
    client: httpx.AsyncClient, org: Org, other: Org
) -> None:
    plane = await org.add(Aircraft)
    foreign_plane = await other.add(Aircraft)
    start = datetime(2026, 6, 1, 14, 30, tzinfo=timezone(timedelta(hours=2)))  # 12:30Z
    dated = await org.add(
        Reservation,
        aircraft_id=plane["id"],
        activity_type="dual_training",
        start_time=start,
        end_time=start + timedelta(hours=1, minutes=45, seconds=15),
        status="no_show",
    )
    no_aircraft = await org.add(
        Reservation,
        aircraft_id=None,
        activity_type="ground",
        start_time=T0,
        end_time=T0 + timedelta(hours=1),
        status="standby",
    )
    foreign = [
        await other.add(
            Reservation,
            aircraft_id=foreign_plane["id"],
            start_time=T0 + timedelta(hours=h),
        )
        for h in (-1, 0, 1)
    ]

    body = await feed(client, org.key)

    # Ours, by our own reader.
    cal = parse(body)
    assert cal.one("VERSION") == "2.0"
    assert cal.one("CALSCALE") == "GREGORIAN"
    assert cal.one("PRODID") == PRODID
    events = events_by_uid(cal)
    assert set(events) == {uid(dated["id"]), uid(no_aircraft["id"])}
    first = events[uid(dated["id"])]
    for name in ("UID", "DTSTAMP", "DTSTART", "DTEND", "SUMMARY", "STATUS"):
        assert name in first.names()
    assert first.one("DTSTART") == "20260601T123000Z"
    assert first.one("DTEND") == "20260601T141515Z"
    assert unescape(first.one("SUMMARY")) == f"{plane['id']} dual_training"
    assert first.one("STATUS") == "NO_SHOW"
    assert first.one("DTSTAMP") == STAMP
    second = events[uid(no_aircraft["id"])]
    # No aircraft: the SUMMARY is the activity type alone (no leading space, no "None").
    assert unescape(second.one("SUMMARY")) == "ground"
    assert second.one("STATUS") == "STANDBY"
    assert (second.one("DTSTART"), second.one("DTEND")) == ("20260501T090000Z", "20260501T100000Z")
    for event in events.values():
        for name in ("DTSTART", "DTEND", "DTSTAMP"):
            assert BASIC_UTC.match(event.one(name)), (name, event.one(name))

    # The same, by the icalendar package.
    lib = icalendar.Calendar.from_ical(body)
    assert str(lib["VERSION"]) == "2.0"
    assert str(lib["CALSCALE"]) == "GREGORIAN"
    assert str(lib["PRODID"]) == PRODID
    parsed = library_events(body)
    assert set(parsed) == set(events)
    ev = parsed[uid(dated["id"])]
    assert ev.decoded("DTSTART") == datetime(2026, 6, 1, 12, 30, tzinfo=UTC)
    assert ev.decoded("DTSTART").utcoffset() == timedelta(0)
    assert ev.decoded("DTEND") == datetime(2026, 6, 1, 14, 15, 15, tzinfo=UTC)
    assert ev.decoded("DTSTAMP") == datetime(2026, 5, 4, 10, 0, 30, tzinfo=UTC)
    assert str(ev["SUMMARY"]) == f"{plane['id']} dual_training"
    assert str(ev["STATUS"]) == "NO_SHOW"
    assert str(parsed[uid(no_aircraft["id"])]["SUMMARY"]) == "ground"

    # The other organization's rows, at the same times, never appear.
    text = body.decode()
    for row in foreign:
        assert str(row["id"]) not in text
    assert str(foreign_plane["id"]) not in text


@pytest.mark.parametrize(
    "status",
    ["confirmed", "standby", "completed", "cancelled", "no_show", "expired"],
)
async def test_status_is_the_reservation_status_upper_cased(
    client: httpx.AsyncClient, org: Org, status: str
) -> None:
    key = await org.key_with("read:reservations")
    row = await org.add(Reservation, status=status, start_time=T0 - timedelta(days=3650))
    body = await feed(client, key)
    assert events_by_uid(parse(body))[uid(row["id"])].one("STATUS") == status.upper()
    assert str(library_events(body)[uid(row["id"])]["STATUS"]) == status.upper()


async def test_the_500_most_recent_dated_live_reservations_of_this_org_only(
    client: httpx.AsyncClient, org: Org, other: Org
) -> None:
    base = datetime(2030, 1, 1, tzinfo=UTC)
    plane = await org.add(Aircraft)
    rows: list[dict[str, Any]] = []
    for i in range(505):  # start times base+0h .. base+504h; all of them dated
        start = base + timedelta(hours=i)
        rows.append(
            {
                "id": new_id(),
                "org_id": org.id,
                "aircraft_id": plane["id"] if i % 2 else None,
                "pilot_id": org.admin_id,
                "activity_type": "solo",
                "start_time": start,
                "end_time": start + timedelta(hours=1),
                "status": "confirmed",
                "created_at": T0,
            }
        )
    newest = base + timedelta(hours=1000)  # later than every row above
    skipped = [
        # Soft-deleted: never shown, and never one of the 500.
        {**rows[0], "id": new_id(), "start_time": newest, "end_time": newest, "deleted_at": T0},
        {**rows[0], "id": new_id(), "start_time": newest, "end_time": None},  # no end
        {**rows[0], "id": new_id(), "start_time": None, "end_time": newest},  # no start
        {**rows[0], "id": new_id(), "start_time": None, "end_time": None},
    ]
    # The other organization has the very latest start times of all.
    foreign = [
        {
            **rows[0],
            "id": new_id(),
            "org_id": other.id,
            "aircraft_id": None,
            "pilot_id": other.admin_id,
            "start_time": newest + timedelta(hours=h),
            "end_time": newest + timedelta(hours=h + 1),
        }
        for h in range(10)
    ]
    async with org.engine.begin() as conn:
        for batch in (rows, skipped, foreign):
            await write_rows(conn, Reservation, [{"deleted_at": None, **r} for r in batch])

    body = await feed(client, org.key)

    expected = {uid(r["id"]) for r in rows[5:]}  # the 500 latest; the 5 oldest drop out
    ours = events_by_uid(parse(body))
    assert len(ours) == 500
    assert set(ours) == expected
    assert set(library_events(body)) == expected
    text = body.decode()
    for row in skipped + foreign + rows[:5]:
        assert str(row["id"]) not in text
    oldest = rows[5]
    assert ours[uid(oldest["id"])].one("DTSTART") == basic(oldest["start_time"])


async def test_undated_and_deleted_reservations_are_skipped_however_few(
    client: httpx.AsyncClient, org: Org, other: Org
) -> None:
    kept = await org.add(Reservation)
    await org.add(Reservation, start_time=None)
    await org.add(Reservation, end_time=None)
    await org.add(Reservation, start_time=None, end_time=None)
    await org.add(Reservation, deleted_at=T0)
    await other.add(Reservation)
    body = await feed(client, await org.key_with("read:reservations"))
    assert set(events_by_uid(parse(body))) == {uid(kept["id"])}
    assert set(library_events(body)) == {uid(kept["id"])}


async def test_an_empty_calendar_is_still_a_valid_calendar(
    client: httpx.AsyncClient, org: Org, other: Org
) -> None:
    await other.add(Reservation)
    body = await feed(client, org.key)
    cal = parse(body)
    assert cal.children == []
    assert cal.one("VERSION") == "2.0"
    assert library_events(body) == {}


# --- lines: CRLF and folding -----------------------------------------------------------------


@pytest.fixture
async def long_domain_client(services: Services) -> AsyncIterator[httpx.AsyncClient]:
    """An app whose service domain makes every UID line longer than 75 octets."""
    domain = "reservations-calendar." + "flight-school-scheduling-" * 3 + "hangar.example"
    settings = dataclasses.replace(services.settings, service_domain=domain)
    custom = Services(
        settings=settings,
        engine=services.engine,
        clock=services.clock,
        limiter=services.limiter,
        redis=services.redis,
        resolver=services.resolver,
    )
    transport = httpx.ASGITransport(app=create_app(custom), raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="https://hangar.example") as c:
        c.headers["X-Domain"] = domain
        yield c


async def test_long_lines_are_folded_at_75_octets_with_crlf(
    long_domain_client: httpx.AsyncClient, org: Org, other: Org
) -> None:
    domain = long_domain_client.headers["X-Domain"]
    plane = await org.add(Aircraft)
    rows = [
        await org.add(Reservation, aircraft_id=plane["id"], activity_type="flight_review"),
        await org.add(Reservation, aircraft_id=None, activity_type="checkride"),
    ]
    await other.add(Reservation)
    full_uids = {uid(r["id"], domain) for r in rows}
    assert all(len(f"UID:{u}".encode()) > 75 for u in full_uids)

    body = await feed(long_domain_client, org.key)

    lines = physical_lines(body)
    assert max(len(line) for line in lines) <= 75
    continuations = [line for line in lines if line.startswith(b" ")]
    assert len(continuations) >= len(rows)  # each UID line took at least two
    # Unfolded, each UID is whole again, for both readers.
    assert set(events_by_uid(parse(body))) == full_uids
    assert set(library_events(body)) == full_uids
    by_uid = events_by_uid(parse(body))
    assert unescape(by_uid[uid(rows[0]["id"], domain)].one("SUMMARY")) == (
        f"{plane['id']} flight_review"
    )


async def test_every_line_of_a_normal_feed_is_at_most_75_octets(
    client: httpx.AsyncClient, org: Org
) -> None:
    plane = await org.add(Aircraft)
    for kind in ("dual_training", "flight_review", "checkout"):
        await org.add(Reservation, aircraft_id=plane["id"], activity_type=kind)
    body = await feed(client, org.key)
    assert all(len(line) <= 75 for line in physical_lines(body))
    assert body.count(b"\r\n") == body.count(b"\n")  # no bare LF


@pytest.mark.parametrize(
    "text",
    [
        "SUMMARY:" + "é" * 60,  # 2-octet characters across the boundary
        "SUMMARY:x" + "✈" * 40,  # 3-octet characters
        "SUMMARY:" + "a" * 66 + "🛩" * 5,  # 4-octet characters, boundary inside the 1st
    ],
    ids=["2-octet", "3-octet", "4-octet"],
)
def test_folding_never_splits_a_utf8_sequence(text: str) -> None:
    folded = calendar.fold(text).encode()
    lines = physical_lines(folded)
    assert len(lines) > 1
    assert all(len(line) <= 75 for line in lines)
    for line in lines:
        line.decode("utf-8")  # each physical line is valid UTF-8 on its own
    assert unfold(folded) == [text]


# --- authentication, scope, limits ------------------------------------------------------------


def assert_error(response: httpx.Response, status: int, code: str) -> str:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"detail", "code"}
    assert body["code"] == code
    assert isinstance(body["detail"], str)
    return str(body["detail"])


async def test_a_missing_token_is_401_saying_a_token_is_required(
    client: httpx.AsyncClient, org: Org
) -> None:
    await org.add(Reservation)
    for params in ({}, {"token": ""}):
        detail = assert_error(await client.get(FEED, params=params), 401, "UNAUTHORIZED")
        assert "token" in detail.lower()
        assert "required" in detail.lower()


async def test_the_authorization_header_is_not_read(client: httpx.AsyncClient, org: Org) -> None:
    row = await org.add(Reservation)
    response = await client.get(FEED, headers=org.auth)
    detail = assert_error(response, 401, "UNAUTHORIZED")
    assert "token" in detail.lower()
    assert str(row["id"]) not in response.text
    # A bad token is not rescued by a good header either.
    response = await client.get(FEED, params={"token": "svc_pk_" + "A" * 43}, headers=org.auth)
    assert_error(response, 401, "UNAUTHORIZED")


@pytest.mark.parametrize(
    "token",
    [
        "svc_pk_" + "A" * 43,  # well formed, unknown
        "svc_pk_short",
        "not-a-key",
        "Bearer svc_pk_" + "A" * 43,
    ],
)
async def test_a_bad_token_is_401(client: httpx.AsyncClient, org: Org, token: str) -> None:
    detail = assert_error(await client.get(FEED, params={"token": token}), 401, "UNAUTHORIZED")
    assert "invalid or revoked" in detail


async def test_a_key_of_the_org_is_accepted_whole_but_not_with_extra_characters(
    client: httpx.AsyncClient, org: Org
) -> None:
    await feed(client, org.key)
    response = await client.get(FEED, params={"token": org.key + "x"})
    assert_error(response, 401, "UNAUTHORIZED")


async def test_a_key_without_read_reservations_is_403(client: httpx.AsyncClient, org: Org) -> None:
    await org.add(Reservation)
    lacking = await org.key_with("read:aircraft", "read:members", "read:members.full")
    response = await client.get(FEED, params={"token": lacking})
    detail = assert_error(response, 403, "INSUFFICIENT_SCOPE")
    assert "read:reservations" in detail
    legacy = await org.legacy_key()
    assert_error(await client.get(FEED, params={"token": legacy}), 403, "INSUFFICIENT_SCOPE")


async def test_a_key_holding_only_read_reservations_reads_the_feed(
    client: httpx.AsyncClient, org: Org
) -> None:
    row = await org.add(Reservation)
    body = await feed(client, await org.key_with("read:reservations"))
    assert uid(row["id"]) in events_by_uid(parse(body))


async def test_the_61st_call_in_a_minute_is_429(
    client: httpx.AsyncClient, org: Org, clock: FakeClock
) -> None:
    key = await org.key_with("read:reservations")
    await org.add(Reservation)
    clock.set(datetime(2026, 5, 4, 10, 7, 0, tzinfo=UTC))
    for n in range(60):
        response = await client.get(FEED, params={"token": key})
        assert response.status_code == 200, (n, response.text)
        clock.advance(seconds=0.9)  # 10:07:00 .. 10:07:53, one calendar minute
    refused = await client.get(FEED, params={"token": key})
    detail = assert_error(refused, 429, "RATE_LIMITED")
    assert "60/min" in detail
    assert "retry-after" not in refused.headers
    # Another key has its own budget; the next minute this key is served again.
    assert (await client.get(FEED, params={"token": org.key})).status_code == 200
    clock.set(datetime(2026, 5, 4, 10, 8, 0, tzinfo=UTC))
    assert (await client.get(FEED, params={"token": key})).status_code == 200


async def test_a_revoked_key_stops_reading_the_feed(
    admin: httpx.AsyncClient, client: httpx.AsyncClient, org: Org
) -> None:
    created = await admin.post(
        f"/api/orgs/{org.id}/api-keys", json={"name": "calendar", "scopes": ["read:reservations"]}
    )
    assert created.status_code == 201, created.text
    key = created.json()["key"]
    await feed(client, key)
    revoked = await admin.post(f"/api/orgs/{org.id}/api-keys/{created.json()['id']}/revoke")
    assert revoked.status_code == 200
    assert_error(await client.get(FEED, params={"token": key}), 401, "UNAUTHORIZED")
