"""The delivery log's inspector fits the screen and reads like HTTP, in Chromium at 1280 and
390 px, with real deliveries: one delivered, one failed three times with a long 500 page,
header values and a body token longer than any screen, to a webhook with a long URL.

It fits: no table, exchange, pre or section is wider than its own box (scrollWidth <=
clientWidth, so nothing hides behind a scroll bar) nor reaches past the right edge of the
viewport, with every exchange opened. It reads like HTTP: each <pre> as the browser renders
it (inner_text) is the request or status line, one line per header, a blank line, the body.

The deliveries are made by the production dispatcher on the test's clock (3 attempts in no
time); the server shows them without a worker of its own (`api_server`).
"""

from __future__ import annotations

import json
import re
import ssl
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import trustme
from aiohttp import web

from hangar.kit.container import Services
from hangar.webhooks.delivery.sender import Sender
from hangar.webhooks.delivery.signing import NOT_KEPT
from hangar.webhooks.events import catalogue, outbox
from tests.fixtures.browser import TIMEOUT_MS, chromium, needs_chromium
from tests.fixtures.environment import PASSWORD
from tests.fixtures.factories import Org
from tests.fixtures.fakes import FakeClock, FakeResolver
from tests.fixtures.live_server import LiveServer
from tests.fixtures.receivers import (
    HOST,
    Received,
    Receiver,
    empty_queue,  # noqa: F401 (autouse: this test's dispatcher sends only its own deliveries)
    https_endpoint,
    loopback_only,
)
from tests.fixtures.webhooks import dispatcher, subscribe

if TYPE_CHECKING:
    from playwright.async_api import Page, ViewportSize

pytestmark = needs_chromium

WIDTHS: dict[str, ViewportSize] = {
    "1280": {"width": 1280, "height": 900},
    "390": {"width": 390, "height": 844},
}
TOKEN = "tok_" + "Q" * 400  # an unbroken run, as API keys, trace ids and base64 bring
LONG_PATH = "/integrations/hangar/" + "p" * 150 + "?tenant=" + "t" * 80
ERROR_PAGE = ("<html><body><h1>500</h1><p>" + "E" * 2500 + "</p></body></html>").encode()
LOUD_HEADERS = {
    "X-Debug-Token": TOKEN,
    "Link": "<https://receiver.example.com/" + "l" * 300 + '>; rel="help"',
    "Content-Type": "text/html; charset=utf-8",
}
HEADER_LINE = re.compile(r"^[A-Za-z0-9-]+: \S.*$")

# Each table, exchange, pre and section wider than its box or past the viewport's right edge.
TOO_WIDE = """() => {
  const viewport = document.documentElement.clientWidth;
  const name = (el) => el.tagName.toLowerCase()
    + (el.getAttribute("class") ? "." + el.getAttribute("class").split(" ").join(".") : "");
  return [...document.querySelectorAll("main table, main .exchange, main pre, main section")]
    .filter((el) => el.scrollWidth > el.clientWidth
      || el.getBoundingClientRect().right > viewport + 0.5)
    .map((el) => `${name(el)}: scrollWidth ${el.scrollWidth}, clientWidth ${el.clientWidth}, `
      + `right ${Math.round(el.getBoundingClientRect().right)} of ${viewport}`);
}"""

PAGE_OVERFLOW = "document.documentElement.scrollWidth - document.documentElement.clientWidth"


class LoudReceiver(Receiver):
    """200 on /ok; anywhere else a 500 with a long page and long header values."""

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self.requests.append(Received(dict(request.headers), await request.read(), request.path))
        if request.path == "/ok":
            return web.Response(status=200, text="ok")
        return web.Response(status=500, body=ERROR_PAGE, headers=LOUD_HEADERS)


@pytest.fixture
async def loud(ca: trustme.CA) -> AsyncIterator[LoudReceiver]:
    async with https_endpoint(ca, LoudReceiver(port=0)) as state:
        yield state


def _sender(ca: trustme.CA) -> Sender:
    trusting = ssl.create_default_context()
    ca.configure_trust(trusting)
    return Sender(
        FakeResolver({HOST: ["127.0.0.1"]}), ssl_context=trusting, is_allowed=loopback_only
    )


async def _deliver_all(services: Services, clock: FakeClock, sender: Sender) -> None:
    """Every attempt of what is queued, the clock moved past each retry's wait."""
    work = dispatcher(services, sender)
    for wait in (2, 8, 0):
        await work.run_once()
        clock.advance(seconds=wait)


def _message(text: str) -> tuple[str, list[str], str]:
    """(first line, header lines, body) of an exchange as the screen shows it."""
    head, blank, body = text.partition("\n\n")
    assert blank, f"no blank line before the body: {text[:300]!r}"
    first, *headers = head.split("\n")
    wrong = [line for line in headers if not HEADER_LINE.match(line)]
    assert wrong == [], "lines that are not one header each"
    return first, headers, body


@dataclass(frozen=True)
class Logs:
    email: str  # an admin's, whose password is PASSWORD
    failed: str  # the log of the webhook whose delivery failed three times
    delivered: str  # the log of the one whose delivery succeeded


@pytest.fixture
async def logs(
    services: Services,
    clock: FakeClock,
    org: Org,
    other: Org,
    ca: trustme.CA,
    loud: LoudReceiver,
    closing: Callable[[Sender], Sender],
) -> Logs:
    email = "inspector-admin@example.org"
    await org.member("admin", email=email, password=PASSWORD)
    failing = await subscribe(
        services, org, loud.url(LONG_PATH), events=[catalogue.SQUAWK_CREATED], name="Ops desk"
    )
    delivered = await subscribe(
        services, org, loud.url("/ok"), events=[catalogue.RESERVATION_CREATED], name="Calendar"
    )
    await subscribe(services, other, loud.url("/theirs"), name="Other club's hook")
    async with services.engine.begin() as conn:
        now = clock.now()
        await outbox.record(conn, org.id, [catalogue.SQUAWK_CREATED], {"note": TOKEN}, now)
        await outbox.record(conn, other.id, [catalogue.SQUAWK_CREATED], {"other": "x"}, now)
        await outbox.record(conn, org.id, [catalogue.RESERVATION_CREATED], {"id": "r1"}, now)
    await _deliver_all(services, clock, closing(_sender(ca)))
    assert len(loud.heard(LONG_PATH.split("?")[0])) == 3
    assert len(loud.heard("/ok")) == 1
    base = f"/settings/{org.id}/webhooks"
    return Logs(email, f"{base}/{failing}/deliveries", f"{base}/{delivered}/deliveries")


@asynccontextmanager
async def signed_in_page(
    server: LiveServer, viewport: ViewportSize, email: str
) -> AsyncIterator[Page]:
    from playwright.async_api import expect

    expect.set_options(timeout=TIMEOUT_MS)
    async with chromium() as browser:
        context = await browser.new_context(base_url=server.url, viewport=viewport)
        context.set_default_timeout(TIMEOUT_MS)
        page = await context.new_page()
        try:
            await page.goto("/login")
            await page.get_by_label("Email").fill(email)
            await page.get_by_label("Password").fill(PASSWORD)
            await page.get_by_role("button", name="Sign in").click()
            await expect(page.get_by_role("heading", level=1)).to_be_visible()
            yield page
        finally:
            await context.close()


async def open_log(page: Page, path: str) -> None:
    """The log at `path`, its one delivery's exchanges (and every other disclosure) open."""
    from playwright.async_api import expect

    await page.goto(path)
    await expect(page.locator("section.delivery")).to_have_count(1)
    await expect(page.locator("body")).not_to_contain_text("Other club")
    await page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")


async def test_the_inspector_fits_1280_and_390_px(
    api_server: LiveServer, logs: Logs, tmp_path: Path
) -> None:
    too_wide: dict[str, Any] = {}
    for label, viewport in WIDTHS.items():
        async with signed_in_page(api_server, viewport, logs.email) as page:
            for name, path in (("failed", logs.failed), ("delivered", logs.delivered)):
                await open_log(page, path)
                found = await page.evaluate(TOO_WIDE)
                page_width = await page.evaluate(PAGE_OVERFLOW)
                if found or page_width > 0:
                    too_wide[f"{name} at {label} px"] = {"page": page_width, "boxes": found}
                # For a person to look at: the whole page, every exchange open.
                await page.screenshot(path=tmp_path / f"{name}-{label}.png", full_page=True)

    assert too_wide == {}, json.dumps(too_wide, indent=1)


async def test_the_inspector_reads_like_http(api_server: LiveServer, logs: Logs) -> None:
    async with signed_in_page(api_server, WIDTHS["1280"], logs.email) as page:
        await open_log(page, logs.failed)
        responses = page.locator("pre.response")
        assert await responses.count() == 3
        # The last attempt's answer, as rendered: wrapped on screen, one header a line here.
        first, headers, body = _message(await responses.nth(2).inner_text())
        assert first == "HTTP/1.1 500 Internal Server Error"
        assert f"X-Debug-Token: {TOKEN}" in headers
        assert f"Link: {LOUD_HEADERS['Link']}" in headers
        assert "Content-Type: text/html; charset=utf-8" in headers
        assert body == ERROR_PAGE[:2048].decode()  # the first 2 KB, after one blank line
        first, headers, body = _message(await page.locator("pre.request").first.inner_text())
        assert first == f"POST {LONG_PATH} HTTP/1.1"
        # Each signature by name; its value was computed when sent and not kept.
        assert f"X-Service-Signature: {NOT_KEPT}" in headers
        assert f"webhook-signature: {NOT_KEPT}" in headers
        assert json.loads(body)["data"] == {"note": TOKEN}
