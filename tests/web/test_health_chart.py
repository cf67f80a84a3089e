"""The Health section in Chromium, on a 390 px phone and a 1280 px desktop: its sentence, its
numbers and its two SVG charts are all on screen, drawn at a size that can be read, and
nothing in it is wider than the window."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from hangar.kit.container import Services
from hangar.webhooks.delivery.states import MAX_IN_FLIGHT
from tests.fixtures.browser import OVERFLOW, TIMEOUT_MS, chromium, needs_chromium
from tests.fixtures.environment import PASSWORD
from tests.fixtures.factories import Org
from tests.fixtures.health import History, Sent
from tests.fixtures.live_server import LiveServer
from tests.fixtures.webhooks import subscribe

if TYPE_CHECKING:
    from playwright.async_api import ViewportSize

pytestmark = needs_chromium

# Every element of the section: none may reach past the window or scroll sideways; and each
# chart's size and labels as drawn.
MEASURE = """(width) => {
  const section = document.querySelector("section.health");
  const past = [...section.querySelectorAll("*")].filter((el) => {
    const box = el.getBoundingClientRect();
    return box.right > width + 0.5 || el.scrollWidth > width;
  }).map((el) => el.tagName.toLowerCase() + "." + (el.getAttribute("class") || ""));
  const charts = [...section.querySelectorAll("svg.chart")].map((svg) => {
    const box = svg.getBoundingClientRect();
    const labels = [...svg.querySelectorAll("text.axis-label")];
    return {
      id: svg.dataset.chart,
      width: box.width,
      height: box.height,
      right: box.right,
      labels: labels.map((t) => t.textContent.trim()),
      smallest: Math.min(...labels.map((t) => t.getBoundingClientRect().height)),
      largest: Math.max(...labels.map((t) => t.getBoundingClientRect().height)),
      clipped: labels.filter((t) => {
        const label = t.getBoundingClientRect();
        return label.left < box.left - 0.5 || label.right > box.right + 0.5;
      }).map((t) => t.textContent),
      bars: svg.querySelectorAll("rect").length,
      points: svg.querySelectorAll("circle.p95-point").length,
      name: svg.getAttribute("aria-labelledby").split(" ")
        .map((id) => document.getElementById(id).textContent).join(" "),
    };
  });
  return {past, charts, sectionWidth: section.scrollWidth};
}"""


async def busy_slow_endpoint(services: Services, org: Org, now: datetime) -> History:
    """A week of deliveries, slower and with more failures lately, its cap full and a backlog
    behind it. The backlog is older than the 20 deliveries the log shows, so the page does
    not reload itself while it is measured."""
    slow = History(
        services.engine,
        org,
        await subscribe(
            services, org, "https://hooks.example.com/integrations/hangar", name="Dispatch board"
        ),
    )
    rng = random.Random(390)
    until = now.replace(second=0, microsecond=0)
    for hours in range(1, 7 * 24, 3):
        for _ in range(1 + hours % 4):
            done = until - timedelta(hours=hours, minutes=rng.randrange(60))
            ms = rng.randrange(150, 900) if hours > 24 else rng.randrange(4_000, 9_000)
            status = "failed" if rng.random() < 0.15 else "succeeded"
            await slow.finished(status, done, [Sent(done - timedelta(seconds=10), ms)])
    backlog_at = until - timedelta(days=8)
    await slow.backlog(MAX_IN_FLIGHT, backlog_at, lease_until=now + timedelta(hours=1))
    await slow.backlog(280, backlog_at + timedelta(minutes=1))
    return slow


@pytest.mark.parametrize("width", [390, 1280])
async def test_the_health_section_fits_and_its_charts_can_be_read(
    live: LiveServer, services: Services, org: Org, other: Org, width: int, tmp_path: Path
) -> None:
    from playwright.async_api import expect

    expect.set_options(timeout=TIMEOUT_MS)
    email = f"health-{width}@example.org"
    await org.member("admin", email=email, password=PASSWORD)
    now = datetime.now(UTC)
    ours = await busy_slow_endpoint(services, org, now)
    await busy_slow_endpoint(services, other, now)
    viewport: ViewportSize = {"width": width, "height": 900}

    async with chromium() as browser:
        context = await browser.new_context(base_url=live.url, viewport=viewport)
        context.set_default_timeout(TIMEOUT_MS)
        page = await context.new_page()
        try:
            await page.goto("/login")
            await page.get_by_label("Email").fill(email)
            await page.get_by_label("Password").fill(PASSWORD)
            await page.get_by_role("button", name="Sign in").click()
            await expect(page).to_have_url(f"{live.url}/settings/{org.id}/keys")
            await page.goto(f"/settings/{org.id}/webhooks/{ours.sub_id}/deliveries")

            health = page.locator("section.health")
            await expect(health.get_by_role("heading", name="Health")).to_be_visible()
            summary = health.locator(".health-summary.held-back")
            await expect(summary).to_be_visible()
            await expect(summary).to_contain_text("280 deliveries are waiting")
            await expect(summary).to_contain_text(
                f"hangar sends at most {MAX_IN_FLIGHT} deliveries at a time"
            )
            await expect(health.get_by_role("img", name="Deliveries per hour")).to_be_visible()
            await expect(health.get_by_role("img", name="Deliveries per day")).to_be_visible()
            await expect(page.locator("#auto-refresh")).to_have_count(0)
            # For whoever reads a failure: how the section looked.
            await health.screenshot(path=tmp_path / f"health-{width}.png")
            # The tables behind the charts, opened: the widest the section gets.
            await page.evaluate(
                "document.querySelectorAll('details.chart-data').forEach(d => d.open = true)"
            )
            measured: dict[str, Any] = await page.evaluate(MEASURE, width)
            overflow = await page.evaluate(OVERFLOW)
        finally:
            await context.close()

    report = json.dumps(measured, indent=1)
    assert measured["past"] == [], report
    assert measured["sectionWidth"] <= width, report
    assert (overflow["scrollWidth"], overflow["wide"]) == (width, []), overflow
    day, week = measured["charts"]
    assert (day["id"], week["id"]) == ("chart-24h", "chart-7d")
    for chart, ticks in ((day, ["\u221224 h", "\u221212 h", "now"]), (week, ["\u22127 d", "now"])):
        assert chart["width"] > 250, report
        assert chart["height"] > 100, report
        assert chart["right"] <= width, report
        assert set(ticks) <= set(chart["labels"]), report
        assert "0" in chart["labels"], report  # the scales start at zero
        assert any(label.endswith(" s") for label in chart["labels"]), report  # p95 scale
        # Labels as tall as small print on a phone (a line of 12 px is about 10 px type), not
        # shouting on a desktop, and none cut off at the drawing's edge.
        assert chart["smallest"] >= 12, report
        assert chart["largest"] <= 22, report
        assert chart["clipped"] == [], report
        assert chart["bars"] > 0, report
        assert chart["points"] > 0, report
    assert day["name"].startswith("Deliveries per hour, last 24 hours")
    assert "succeeded" in week["name"]
