"""The delivery log pages back through the whole retention window, newest first, with filters
by status and by event kept from page to page: on the session API (the body stays the array
of interfaces.md §4, the next page is in `Link: <...>; rel="next"`) and on the screen (an
"Older deliveries" link, a GET form).

The history: 64 moments over two days, two events at each (so deliveries share a created_at
and only the id orders them), to each of the organization's two subscriptions and to another
organization's; the deliveries of ours are given the four statuses in turn.
"""

from __future__ import annotations

import html
import uuid
from dataclasses import dataclass
from datetime import timedelta
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from sqlalchemy import select, update

from hangar.kit.container import Services
from hangar.webhooks.events import catalogue, outbox
from hangar.webhooks.models import Delivery
from tests.fixtures.factories import Org
from tests.fixtures.log_pages import next_link, older_link, page_ids, walk_api, walk_screen
from tests.fixtures.webhooks import delivery_log, log_url, subscribe

STATUSES = ("pending", "succeeded", "failed", "skipped")
EVENTS = (catalogue.SQUAWK_CREATED, catalogue.RESERVATION_CREATED, catalogue.MEL_EXPIRED)
MOMENTS = 64  # two events each: 128 deliveries per subscription


@dataclass(frozen=True)
class History:
    ours: uuid.UUID  # the subscription whose log is read
    sibling: uuid.UUID  # another subscription of the same organization
    foreign: uuid.UUID  # the other organization's
    expected: list[tuple[uuid.UUID, str, str]]  # ours: (id, status, event), newest first
    not_ours: set[str]  # ids of every other delivery

    def ids(self, status: str | None = None, event: str | None = None) -> list[str]:
        return [
            str(i)
            for i, s, e in self.expected
            if (status is None or s == status) and (event is None or e == event)
        ]


@pytest.fixture
async def history(services: Services, org: Org, other: Org) -> History:
    ours = await subscribe(services, org, "https://hooks.example.com/ours")
    sibling = await subscribe(services, org, "https://hooks.example.com/sibling")
    foreign = await subscribe(services, other, "https://hooks.example.com/foreign")
    start = services.clock.now() - timedelta(days=2)
    async with services.engine.begin() as conn:
        for n in range(MOMENTS):
            at = start + timedelta(minutes=45 * n)
            names = [EVENTS[n % 3], EVENTS[(n + 1) % 3]]
            for owner in (org, other):
                await outbox.record(conn, owner.id, names, {"n": n}, at)
        rows = (
            await conn.execute(
                select(Delivery.id, Delivery.event_name)
                .where(Delivery.subscription_id == ours)
                .order_by(Delivery.created_at.desc(), Delivery.id.desc())
            )
        ).all()
        expected = [(r.id, STATUSES[i % 4], r.event_name) for i, r in enumerate(rows)]
        for status in STATUSES:
            await conn.execute(
                update(Delivery)
                .where(Delivery.id.in_([i for i, s, _ in expected if s == status]))
                .values(status=status)
            )
        others = await conn.scalars(
            select(Delivery.id).where(Delivery.subscription_id.in_([sibling, foreign]))
        )
        not_ours = {str(i) for i in others}
    assert len(expected) == 2 * MOMENTS
    assert len(not_ours) == 4 * MOMENTS
    return History(ours, sibling, foreign, expected, not_ours)


async def test_the_api_pages_through_every_delivery_newest_first_with_no_repeat_or_gap(
    history: History, admin: httpx.AsyncClient, org: Org
) -> None:
    ids, links = await walk_api(admin, org, history.ours, limit=50)

    assert ids == history.ids()  # 50 + 50 + 28: all, in order, once each
    assert len(links) == 2
    for link in links:
        query = parse_qs(urlsplit(link).query)
        assert urlsplit(link).path == log_url(org, history.ours)
        assert query["limit"] == ["50"]
        assert set(query) == {"limit", "before"}
    assert not set(ids) & history.not_ours
    # The default page is still the newest 50, and its body is the array it always was.
    entries = await delivery_log(admin, org, history.ours)
    assert [e["id"] for e in entries] == history.ids()[:50]


@pytest.mark.parametrize("status", STATUSES)
async def test_each_status_filter_is_kept_on_every_page(
    history: History, admin: httpx.AsyncClient, org: Org, status: str
) -> None:
    ids, links = await walk_api(admin, org, history.ours, limit=10, status=status)

    assert ids == history.ids(status=status)
    assert len(links) == 3  # 32 deliveries of each status: 10 + 10 + 10 + 2
    for link in links:
        assert parse_qs(urlsplit(link).query)["status"] == [status]


async def test_the_event_filter_alone_and_with_a_status(
    history: History, admin: httpx.AsyncClient, org: Org
) -> None:
    for event in EVENTS:
        ids, links = await walk_api(admin, org, history.ours, limit=20, event=event)
        assert ids == history.ids(event=event)
        assert links
        assert all(parse_qs(urlsplit(link).query)["event"] == [event] for link in links)
    both, _ = await walk_api(admin, org, history.ours, limit=5, event=EVENTS[0], status="failed")
    assert both == history.ids(status="failed", event=EVENTS[0])
    assert both  # the history has some of each
    nothing = await delivery_log(admin, org, history.ours, event=catalogue.TEST_PING)
    assert nothing == []


async def test_bad_filters_and_cursors_are_refused_never_a_500(
    history: History, admin: httpx.AsyncClient, outsider: httpx.AsyncClient, org: Org, other: Org
) -> None:
    url = log_url(org, history.ours)
    bad_status = await admin.get(url, params={"status": "delivered"})
    assert bad_status.status_code == 422
    assert bad_status.json()["code"] == "VALIDATION_ERROR"
    assert bad_status.json()["errors"][0]["loc"] == ["query", "status"]
    assert "'delivered' is not a delivery status" in bad_status.json()["detail"]
    bad_event = await admin.get(url, params={"event": "squawk.eaten"})
    assert bad_event.status_code == 422
    assert bad_event.json()["code"] == "UNKNOWN_EVENT"

    first = await admin.get(url, params={"limit": 5, "status": "failed"})
    before = parse_qs(urlsplit(next_link(first) or "").query)["before"][0]
    refused = {
        "garbage": (url, {"before": "not-a-cursor"}),
        "altered": (url, {"status": "failed", "before": before[:-2] + "AA"}),
        "other filters": (url, {"status": "succeeded", "before": before}),
        "no filters": (url, {"before": before}),
        "another subscription": (
            log_url(org, history.sibling),
            {"status": "failed", "before": before},
        ),
    }
    for name, (path, params) in refused.items():
        answer = await admin.get(path, params=params)
        assert answer.status_code == 400, name
        assert answer.json()["code"] == "INVALID_CURSOR", name
    # The other organization: its own subscription refuses our cursor, ours is not found.
    theirs = await outsider.get(
        log_url(other, history.foreign), params={"status": "failed", "before": before}
    )
    assert theirs.status_code == 400
    assert (await outsider.get(url, params={"status": "failed"})).status_code == 404


async def test_the_screen_pages_back_with_its_filters_kept(
    history: History, admin: httpx.AsyncClient, org: Org
) -> None:
    url = f"/settings/{org.id}/webhooks/{history.ours}/deliveries"

    ids, links = await walk_screen(admin, url)
    assert ids == history.ids()  # 7 pages of 20 (the last of 8)
    assert len(links) == 6
    assert not set(ids) & history.not_ours

    second_pages = {}
    for query, status, event in (
        ("status=failed", "failed", None),
        (f"event={EVENTS[1]}", None, EVENTS[1]),
        (f"status=skipped&event={EVENTS[2]}", "skipped", EVENTS[2]),
    ):
        ids, links = await walk_screen(admin, f"{url}?{query}")
        assert ids == history.ids(status=status, event=event), query
        for link in links:
            kept = parse_qs(urlsplit(link).query)
            assert (kept.get("status"), kept.get("event")) == (
                status and [status],
                event and [event],
            )
        second_pages[query] = links[0] if links else None
    assert second_pages["status=failed"] is not None  # 32 failed: two pages
    # The form shows the filters in force; the way back to the newest keeps them.
    page = (await admin.get(second_pages["status=failed"])).text
    assert '<option value="failed" selected>Failed</option>' in page
    assert f'href="{html.escape(url)}?status=failed">Newest deliveries</a>' in page
    page = (await admin.get(f"{url}?status=skipped&event={EVENTS[2]}")).text
    assert '<option value="skipped" selected>Not sent (skipped)</option>' in page
    assert f'<option value="{EVENTS[2]}" selected>' in page
    assert f'<a href="{url}">Clear the filters</a>' in page
    assert '<label for="filter-status">Status</label>' in page
    assert '<label for="filter-event">Event</label>' in page


async def test_the_screen_refuses_bad_filters_and_links_with_a_400_page(
    history: History, admin: httpx.AsyncClient, org: Org
) -> None:
    url = f"/settings/{org.id}/webhooks/{history.ours}/deliveries"
    bad = await admin.get(url, params={"status": "<b>lost</b>", "event": "squawk.eaten"})
    assert bad.status_code == 400
    assert "is not a delivery status" in bad.text
    assert "&#39;&lt;b&gt;lost&lt;/b&gt;&#39;" in bad.text  # escaped, as every value
    assert "&#39;squawk.eaten&#39; is not an event of the catalogue" in bad.text
    assert 'aria-invalid="true" aria-describedby="filter-status-error"' in bad.text
    assert page_ids(bad.text) == []

    other_sub = await admin.get(f"{url.replace(str(history.ours), str(history.sibling))}")
    stolen = older_link(other_sub.text)
    assert stolen is not None
    refused = await admin.get(url + "?" + urlsplit(stolen).query)
    assert refused.status_code == 400
    assert "does not fit this log or these filters" in refused.text
    assert f'<a href="{url}">Show the newest deliveries</a>' in refused.text
    assert page_ids(refused.text) == []
