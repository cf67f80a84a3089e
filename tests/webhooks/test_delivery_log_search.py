"""The delivery log's search (issue 42, point 5): by event id, by resource (what the event
concerns, its data's own `id`), and by when the delivery was queued (`since` inclusive,
`until` exclusive), each alone and with the status and event filters, paged back with every
filter kept; on the session API and on the screen.

The history: 60 moments half an hour apart, two events at each, about one of three resources
in turn; recorded for the organization (its two subscriptions get each event) and for another
organization with the very same resource ids, which must never show. Our subscription's
deliveries take the four statuses in turn.
"""

from __future__ import annotations

import html
import re
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import pytest
from sqlalchemy import select, update

from hangar.kit.container import Services
from hangar.webhooks.events import catalogue, outbox
from hangar.webhooks.models import Delivery, Event
from tests.fixtures.factories import Org
from tests.fixtures.log_pages import next_link, page_ids, walk_api, walk_screen
from tests.fixtures.webhooks import delivery_log, log_url, subscribe

STATUSES = ("pending", "succeeded", "failed", "skipped")

EVENTS = (catalogue.SQUAWK_CREATED, catalogue.RESERVATION_CANCELLED, catalogue.MEL_CREATED)
MOMENTS = 60  # two events each: 120 deliveries per subscription, 40 per resource
START = datetime(2026, 3, 1, 8, 0, tzinfo=UTC)
STEP = timedelta(minutes=30)


@dataclass(frozen=True)
class Entry:
    id: str
    status: str
    event: str
    event_id: str
    resource: uuid.UUID
    created_at: datetime


@dataclass(frozen=True)
class History:
    ours: uuid.UUID  # the subscription whose log is read
    sibling: uuid.UUID  # another subscription of the same organization
    foreign: uuid.UUID  # the other organization's
    resources: tuple[uuid.UUID, ...]  # shared by both organizations' events
    expected: list[Entry]  # ours, newest first
    not_ours: set[str]  # ids of every other delivery

    def ids(self, **wanted: Any) -> list[str]:
        """Ours that match: `since`/`until` on created_at, the rest on the field."""
        since, until = wanted.pop("since", None), wanted.pop("until", None)
        return [
            e.id
            for e in self.expected
            if all(getattr(e, name) == value for name, value in wanted.items())
            and (since is None or e.created_at >= since)
            and (until is None or e.created_at < until)
        ]


@pytest.fixture
async def history(services: Services, org: Org, other: Org) -> History:
    ours = await subscribe(services, org, "https://hooks.example.com/ours")
    sibling = await subscribe(services, org, "https://hooks.example.com/sibling")
    foreign = await subscribe(services, other, "https://hooks.example.com/foreign")
    resources = (uuid.uuid4(), uuid.uuid4(), uuid.uuid4())
    async with services.engine.begin() as conn:
        for n in range(MOMENTS):
            names = [EVENTS[n % 3], EVENTS[(n + 1) % 3]]
            data = {"id": str(resources[n % 3]), "aircraft_id": str(resources[(n + 1) % 3])}
            for owner in (org, other):
                await outbox.record(conn, owner.id, names, data, START + n * STEP)
        rows = (
            await conn.execute(
                select(
                    Delivery.id,
                    Delivery.event_name,
                    Delivery.event_id,
                    Delivery.created_at,
                    Event.data,
                )
                .join(Event, Event.id == Delivery.event_id)
                .where(Delivery.subscription_id == ours)
                .order_by(Delivery.created_at.desc(), Delivery.id.desc())
            )
        ).all()
        expected = [
            Entry(
                str(r.id),
                STATUSES[i % 4],
                r.event_name,
                str(r.event_id),
                uuid.UUID(r.data.split('"id":"')[1][:36]),
                r.created_at,
            )
            for i, r in enumerate(rows)
        ]
        for status in STATUSES:
            await conn.execute(
                update(Delivery)
                .where(Delivery.id.in_([uuid.UUID(e.id) for e in expected if e.status == status]))
                .values(status=status)
            )
        others = await conn.scalars(
            select(Delivery.id).where(Delivery.subscription_id.in_([sibling, foreign]))
        )
        not_ours = {str(i) for i in others}
    assert len(expected) == 2 * MOMENTS
    return History(ours, sibling, foreign, resources, expected, not_ours)


def _iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def _kept(links: list[str], **params: str) -> None:
    """Every next link keeps these filters, as given."""
    for link in links:
        query = parse_qs(urlsplit(link).query)
        for name, value in params.items():
            assert query[name] == [value], (name, link)


async def test_the_resource_search_pages_through_its_deliveries_alone(
    history: History, admin: httpx.AsyncClient, org: Org
) -> None:
    for resource in history.resources:
        ids, links = await walk_api(admin, org, history.ours, limit=15, resource_id=str(resource))
        assert ids == history.ids(resource=resource)
        assert len(ids) == 40  # 15 + 15 + 10
        assert len(links) == 2
        _kept(links, resource_id=str(resource), limit="15")
        assert not set(ids) & history.not_ours
    # Upper case, and without dashes: the same id.
    resource = history.resources[0]
    for spelling in (str(resource).upper(), resource.hex):
        entries = await delivery_log(admin, org, history.ours, resource_id=spelling)
        assert [e["id"] for e in entries] == history.ids(resource=resource)


async def test_the_resource_is_the_datas_own_id_not_the_aircraft_beside_it(
    history: History, admin: httpx.AsyncClient, org: Org
) -> None:
    """The history's data names another resource as its `aircraft_id`: that is no match."""
    resource = history.resources[1]
    entries = await delivery_log(admin, org, history.ours, resource_id=str(resource), limit=200)
    assert {e["event_id"] for e in entries} == {
        e.event_id for e in history.expected if e.resource == resource
    }


async def test_the_event_id_search_finds_that_events_delivery_to_this_webhook_only(
    history: History, admin: httpx.AsyncClient, org: Org, outsider: httpx.AsyncClient, other: Org
) -> None:
    target = history.expected[37]
    entries = await delivery_log(admin, org, history.ours, event_id=target.event_id)
    assert [e["id"] for e in entries] == [target.id]
    assert entries[0]["event_id"] == target.event_id
    # The sibling has its own delivery of the event; the other organization never sees it.
    sibling = await delivery_log(admin, org, history.sibling, event_id=target.event_id)
    assert [e["event_id"] for e in sibling] == [target.event_id]
    assert sibling[0]["id"] != target.id
    foreign = await delivery_log(outsider, other, history.foreign, event_id=target.event_id)
    assert foreign == []
    # With the other filters: those that fit it keep it, those that do not drop it.
    fits = {"status": target.status, "event": target.event, "resource_id": str(target.resource)}
    for name, value in fits.items():
        found = await delivery_log(
            admin, org, history.ours, event_id=target.event_id, **{name: value}
        )
        assert [e["id"] for e in found] == [target.id], name
    other_status = next(s for s in STATUSES if s != target.status)
    misses = {
        "status": other_status,
        "event": next(e for e in EVENTS if e != target.event),
        "resource_id": str(next(r for r in history.resources if r != target.resource)),
        "since": _iso(target.created_at + timedelta(microseconds=1)),
        "until": _iso(target.created_at),
    }
    for name, value in misses.items():
        found = await delivery_log(
            admin, org, history.ours, event_id=target.event_id, **{name: value}
        )
        assert found == [], name


async def test_since_is_inclusive_and_until_exclusive_paged_back(
    history: History, admin: httpx.AsyncClient, org: Org
) -> None:
    since, until = START + 10 * STEP, START + 40 * STEP  # moments 10 to 39: 60 deliveries
    ids, links = await walk_api(
        admin, org, history.ours, limit=25, since=_iso(since), until=_iso(until)
    )
    assert ids == history.ids(since=since, until=until)
    assert len(ids) == 60
    assert history.expected[-21].created_at == since  # the older of moment 10's: included
    assert ids[-1] == history.expected[-21].id
    assert len(links) == 2
    _kept(links, since=_iso(since), until=_iso(until))
    alone, _ = await walk_api(admin, org, history.ours, limit=50, since=_iso(since))
    assert alone == history.ids(since=since)
    alone, _ = await walk_api(admin, org, history.ours, limit=50, until=_iso(until))
    assert alone == history.ids(until=until)
    # Another offset is the same moment; since equal to until is an empty window.
    at_two = since.astimezone(timezone(timedelta(hours=2))).isoformat()  # ...T15:00:00+02:00
    shifted = await delivery_log(admin, org, history.ours, since=at_two, until=_iso(until))
    assert [e["id"] for e in shifted] == history.ids(since=since, until=until)[:50]
    assert await delivery_log(admin, org, history.ours, since=_iso(since), until=_iso(since)) == []


async def test_every_filter_together_pages_with_each_kept(
    history: History, admin: httpx.AsyncClient, org: Org
) -> None:
    resource, since, until = history.resources[2], START + 5 * STEP, START + 55 * STEP
    params = {
        "resource_id": str(resource),
        "since": _iso(since),
        "until": _iso(until),
    }
    for status in STATUSES:
        for event in EVENTS:
            ids, links = await walk_api(
                admin, org, history.ours, limit=2, status=status, event=event, **params
            )
            expected = history.ids(
                resource=resource, status=status, event=event, since=since, until=until
            )
            assert ids == expected, (status, event)
            _kept(links, status=status, event=event, **params)
    assert history.ids(resource=resource, status="failed", since=since, until=until)
    ids, links = await walk_api(admin, org, history.ours, limit=3, status="failed", **params)
    assert ids == history.ids(resource=resource, status="failed", since=since, until=until)
    assert len(links) >= 2


async def test_a_test_ping_has_no_resource_and_is_found_by_its_event_id(
    history: History, admin: httpx.AsyncClient, org: Org, services: Services
) -> None:
    fired = await admin.post(f"/api/orgs/{org.id}/webhooks/{history.ours}/test")
    assert fired.status_code == 202
    delivery_id = fired.json()["delivery_id"]
    async with services.engine.connect() as conn:
        row = (
            await conn.execute(
                select(
                    Delivery.event_name, Delivery.event_id, Delivery.resource_id, Event.resource_id
                )
                .join(Event, Event.id == Delivery.event_id)
                .where(Delivery.id == uuid.UUID(delivery_id))
            )
        ).one()
    assert (row[0], row[2], row[3]) == (catalogue.TEST_PING, None, None)
    found = await delivery_log(admin, org, history.ours, event_id=str(row[1]))
    assert [e["id"] for e in found] == [delivery_id]
    for resource in history.resources:
        found = await delivery_log(admin, org, history.ours, resource_id=str(resource), limit=200)
        assert delivery_id not in {e["id"] for e in found}


async def test_ids_that_are_no_uuid_find_nothing(
    history: History, admin: httpx.AsyncClient, org: Org
) -> None:
    for value in (
        "nope",
        "0" * 65,
        "'; DROP TABLE events; --",
        "\u00e9\u202e",
        "%00",
        "1" * 10_000,
    ):
        for name in ("event_id", "resource_id"):
            assert await delivery_log(admin, org, history.ours, **{name: value}) == [], name
    # Still the subscription's own log: another's id is 404 first.
    missing = await admin.get(log_url(org, uuid.uuid4()), params={"event_id": "nope"})
    assert missing.status_code == 404


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"since": "2026-03-01"}, "since"),  # a date alone
        ({"since": "2026-03-01T10:00:00"}, "since"),  # no offset
        ({"until": "yesterday"}, "until"),
        ({"until": "2026-13-01T00:00:00Z"}, "until"),
        ({"since": "9999-12-31T23:59:59-01:00"}, "since"),  # past the last UTC moment
        ({"since": "2026-03-01T10:00:00Z\x00"}, "since"),
        ({"since": "2" * 5000}, "since"),
        ({"since": "2026-03-02T00:00:00Z", "until": "2026-03-01T00:00:00Z"}, "until"),
        ({"since": "2026-03-01T10:00:00+02:00", "until": "2026-03-01T07:59:59Z"}, "until"),
    ],
)
async def test_bad_times_are_a_422_naming_the_field_never_a_500(
    history: History, admin: httpx.AsyncClient, org: Org, params: dict[str, str], field: str
) -> None:
    answer = await admin.get(log_url(org, history.ours), params=params)
    assert answer.status_code == 422, answer.text
    body = answer.json()
    assert body["code"] == "VALIDATION_ERROR"
    assert body["detail"]
    assert [e["loc"] for e in body["errors"]] == [["query", field]]
    # With a bad status too, both are named.
    both = await admin.get(log_url(org, history.ours), params={**params, "status": "lost"})
    assert both.status_code == 422
    assert {e["loc"][1] for e in both.json()["errors"]} == {"status", field}


async def test_a_cursor_is_bound_to_the_search(
    history: History, admin: httpx.AsyncClient, org: Org, outsider: httpx.AsyncClient, other: Org
) -> None:
    url = log_url(org, history.ours)
    resource = str(history.resources[0])
    since = _iso(START + 3 * STEP)
    first = await admin.get(url, params={"limit": 5, "resource_id": resource, "since": since})
    link = next_link(first)
    assert link is not None
    before = parse_qs(urlsplit(link).query)["before"][0]
    # The same search, spelled otherwise, is the same search.
    same = {"resource_id": resource.upper(), "since": _iso(START + 3 * STEP).replace("Z", "+00:00")}
    assert (await admin.get(url, params={"limit": 5, **same, "before": before})).status_code == 200
    changed = {
        "another resource": {"resource_id": str(history.resources[1]), "since": since},
        "another since": {"resource_id": resource, "since": _iso(START)},
        "an until added": {
            "resource_id": resource,
            "since": since,
            "until": _iso(START + 99 * STEP),
        },
        "no resource": {"since": since},
        "no search": {},
        "an event id added": {
            "resource_id": resource,
            "since": since,
            "event_id": history.expected[0].event_id,
        },
    }
    for name, params in changed.items():
        answer = await admin.get(url, params={**params, "before": before})
        assert answer.status_code == 400, name
        assert answer.json()["code"] == "INVALID_CURSOR", name
    theirs = await outsider.get(
        log_url(other, history.foreign),
        params={"resource_id": resource, "since": since, "before": before},
    )
    assert theirs.status_code == 400
    # A cursor of the log without a search (as one made before the search existed) still pages.
    plain = await admin.get(url, params={"limit": 5, "status": "failed"})
    plain_link = next_link(plain)
    assert plain_link is not None
    nxt = await admin.get(plain_link)
    assert nxt.status_code == 200
    assert [e["id"] for e in nxt.json()] == history.ids(status="failed")[5:10]


def _screen(org: Org, history: History) -> str:
    return f"/settings/{org.id}/webhooks/{history.ours}/deliveries"


def _field_value(page: str, name: str) -> str:
    found = re.search(
        rf'<input id="filter-{name}" name="[^"]+" type="[^"]+"[^>]* value="([^"]*)"', page
    )
    assert found, name
    return html.unescape(found[1])


async def test_the_screen_searches_and_keeps_the_search_in_its_page_links(
    history: History, admin: httpx.AsyncClient, org: Org
) -> None:
    url = _screen(org, history)
    page = (await admin.get(url)).text
    for name, label in (
        ("event-id", "Event id"),
        ("resource-id", "Resource id"),
        ("since", "Queued since (UTC)"),
        ("until", "Queued before (UTC)"),
    ):
        assert f'<label for="filter-{name}">{label}</label>' in page
    assert 'name="event_id"' in page
    assert 'name="resource_id"' in page

    resource = history.resources[1]
    since, until = START + 2 * STEP, START + 50 * STEP
    # As the form sends them: datetime-local, no offset, read as UTC.
    typed = {
        "status": "succeeded",
        "resource_id": str(resource),
        "since": since.strftime("%Y-%m-%dT%H:%M"),
        "until": until.strftime("%Y-%m-%dT%H:%M"),
    }
    expected = history.ids(resource=resource, since=since, until=until)
    ids, links = await walk_screen(
        admin, f"{url}?{urlencode({k: v for k, v in typed.items() if k != 'status'})}"
    )
    assert ids == expected
    assert len(links) == 1  # 20 to a page: 20 + 12
    _kept(links, resource_id=str(resource), since=typed["since"] + "Z", until=typed["until"] + "Z")
    second = (await admin.get(links[0])).text
    assert _field_value(second, "resource-id") == str(resource)
    assert _field_value(second, "since") == typed["since"]
    assert _field_value(second, "until") == typed["until"]
    newest = re.search(r'<a href="([^"]+)">Newest deliveries</a>', second)
    assert newest is not None
    assert "before" not in parse_qs(urlsplit(html.unescape(newest[1])).query)
    assert parse_qs(urlsplit(html.unescape(newest[1])).query)["resource_id"] == [str(resource)]
    assert f'<a href="{url}">Clear the filters</a>' in second

    ids, _ = await walk_screen(admin, f"{url}?{urlencode(typed)}")
    assert ids == history.ids(resource=resource, since=since, until=until, status="succeeded")
    assert not set(ids) & history.not_ours

    target = history.expected[11]
    page = (await admin.get(url, params={"event_id": target.event_id})).text
    assert page_ids(page) == [target.id]
    assert _field_value(page, "event-id") == target.event_id

    nothing = await admin.get(url, params={"resource_id": "<b>no</b>"})
    assert nothing.status_code == 200
    assert "No delivery matches these filters." in nothing.text
    assert _field_value(nothing.text, "resource-id") == "<b>no</b>"
    assert "<b>no</b>" not in nothing.text  # escaped


async def test_the_screen_refuses_bad_times_with_a_400_page_that_says_which(
    history: History, admin: httpx.AsyncClient, org: Org
) -> None:
    url = _screen(org, history)
    bad = await admin.get(url, params={"since": "<i>tomorrow</i>"})
    assert bad.status_code == 400
    assert 'aria-invalid="true" aria-describedby="filter-since-error"' in bad.text
    assert "not an ISO 8601 date-time" in bad.text
    assert "&lt;i&gt;tomorrow&lt;/i&gt;" in bad.text
    assert "<i>tomorrow</i>" not in bad.text
    assert page_ids(bad.text) == []
    backwards = await admin.get(
        url, params={"since": "2026-03-02T00:00", "until": "2026-03-01T00:00"}
    )
    assert backwards.status_code == 400
    assert 'aria-describedby="filter-until-error"' in backwards.text
    assert "until is before since" in backwards.text
    assert _field_value(backwards.text, "since") == "2026-03-02T00:00"


async def test_the_docs_describe_each_search_parameter(client: httpx.AsyncClient) -> None:
    page = (await client.get("/docs")).text
    start = page.index('<ul id="delivery-log-search">')
    section = page[start : page.index("</ul>", start)]
    for name in ("status", "event", "event_id", "resource_id", "since", "until"):
        assert f"<code>{name}</code>" in section, name
