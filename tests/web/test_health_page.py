"""The Health section of a subscription's page (/settings/{org}/webhooks/{id}/deliveries): the
sentence (prominent when the cap holds deliveries back), the numbers as text, two SVG charts
with their titles and tables, and how far back the log reaches."""

from __future__ import annotations

import dataclasses
import re
import uuid
from datetime import datetime, timedelta

import httpx
import pytest

from hangar.foundation.config import Settings
from hangar.kit.container import Services
from hangar.webhooks.delivery.states import MAX_IN_FLIGHT
from tests.fixtures.factories import Org
from tests.fixtures.fakes import FakeClock
from tests.fixtures.health import History, Sent
from tests.fixtures.webhooks import subscribe

SLOW = "Your endpoint answered in 6.1 s on average over the last hour; 280 deliveries are waiting."


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return dataclasses.replace(settings, delivery_retention_days=45)


def page(org: Org, sub_id: uuid.UUID) -> str:
    return f"/settings/{org.id}/webhooks/{sub_id}/deliveries"


async def slow_endpoint(services: Services, org: Org, name: str, until: datetime) -> History:
    """A subscription whose endpoint took about 6.1 s in the last hour, with its cap full and
    280 deliveries due behind it."""
    slow = History(
        services.engine,
        org,
        await subscribe(services, org, "https://hooks.example.com/slow", name=name),
    )
    for minutes, ms in ((5, 6_000), (15, 6_300), (25, 6_000)):
        done = until - timedelta(minutes=minutes)
        await slow.finished("succeeded", done, [Sent(done - timedelta(seconds=7), ms)])
    now = services.clock.now()
    await slow.backlog(MAX_IN_FLIGHT, until - timedelta(hours=1), lease_until=now + LEASE_LEFT)
    await slow.backlog(280, until - timedelta(minutes=50))
    return slow


LEASE_LEFT = timedelta(seconds=40)
NONE = "\u2013"  # what a table shows for a rate or a time there is nothing to compute from


async def test_a_held_back_endpoint_is_said_so_prominently(
    services: Services, org: Org, other: Org, admin: httpx.AsyncClient, clock: FakeClock
) -> None:
    until = clock.now().replace(second=0, microsecond=0)
    ours = await slow_endpoint(services, org, "Dispatch board", until)
    theirs = await slow_endpoint(services, other, "Other club's hook", until)
    await theirs.backlog(1_000, until - timedelta(minutes=1))

    response = await admin.get(page(org, ours.sub_id))
    assert response.status_code == 200, response.text
    html = response.text

    section = html[html.index('<section class="health"') : html.index("</section>")]
    assert 'data-held-back="true"' in section
    summary = re.search(r'<p class="health-summary ([^"]*)">([^<]*)</p>', section)
    assert summary is not None
    assert "held-back" in summary.group(1)
    assert summary.group(2).startswith(SLOW)
    assert f"hangar sends at most {MAX_IN_FLIGHT} deliveries at a time to one endpoint" in (
        summary.group(2)
    )
    # The numbers in words and tables, not only in the drawing.
    assert "<strong>280</strong> waiting (280 due now" in section
    assert f"<strong>{MAX_IN_FLIGHT}</strong> in flight, of at most {MAX_IN_FLIGHT}" in section
    assert figures(section, "succeeded") == ["3", "3"]
    assert figures(section, "p50") == ["6.0 s", "6.0 s"]
    # Two charts, each with a title and description that name it to assistive technology.
    for chart, title in (("chart-24h", "per hour"), ("chart-7d", "per day")):
        svg = re.search(rf'<svg class="chart" viewBox="0 0 \d+ \d+"[^>]*data-chart="{chart}"', html)
        assert svg is not None, chart
        assert f'aria-labelledby="{chart}-title {chart}-desc"' in svg.group(0)
        assert re.search(rf'<title id="{chart}-title">[^<]*{title}', html)
        assert f'<desc id="{chart}-desc">' in html
    assert html.count('class="bar-ok"') == 2  # their hour, and their day
    assert "Other club" not in html
    assert "1,280" not in html  # theirs: 280 + 1,000 waiting
    # How far back the log reaches, from the setting.
    assert (
        "Deliveries are kept for 45 days (<code>HANGAR_DELIVERY_RETENTION_DAYS</code>); older "
        "ones, with their attempts, are deleted and can no longer be redelivered."
    ) in html

    # Theirs is not ours to look at, not even by id.
    hidden = await admin.get(page(org, theirs.sub_id))
    assert hidden.status_code == 404


async def test_good_news_and_an_empty_history_are_plain(
    services: Services, org: Org, admin: httpx.AsyncClient, clock: FakeClock
) -> None:
    until = clock.now().replace(second=0, microsecond=0)
    fine = History(services.engine, org, await subscribe(services, org, "https://h.example/ok"))
    for minutes, ms in ((2, 180), (62, 160), (122, 420)):
        done = until - timedelta(minutes=minutes)
        await fine.finished("succeeded", done, [Sent(done, ms)])
    empty = await subscribe(services, org, "https://h.example/new")

    good = (await admin.get(page(org, fine.sub_id))).text
    assert 'data-held-back="false"' in good
    assert (
        '<p class="health-summary notice">All 3 deliveries of the last 24 hours succeeded; '
        "your endpoint answered in 253 ms on average (95% within 420 ms).</p>"
    ) in good
    assert [figures(good, m)[0] for m in ("succeeded", "failed", "skipped", "success_rate")] == [
        "3",
        "0",
        "0",
        "100%",
    ]

    nothing = (await admin.get(page(org, empty))).text
    assert "Nothing was delivered to this endpoint in the last 7 days." in nothing
    assert nothing.count(">No deliveries</text>") == 2  # each chart says so
    for measure in ("succeeded", "failed", "skipped", "attempts"):
        assert figures(nothing, measure) == ["0", "0"]
    for measure in ("success_rate", "p50", "p95", "mean"):
        assert figures(nothing, measure) == [NONE, NONE]


def figures(html: str, measure: str) -> list[str]:
    """The figures table's cells for `measure`: the last 24 hours', the last 7 days'."""
    row = html[html.index(f'<tr data-measure="{measure}">') :]
    return re.findall(r"<td>([^<]*)</td>", row[: row.index("</tr>")])
