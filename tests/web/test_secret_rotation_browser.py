"""Rotate secret in headless Chromium against a real server and its webhook worker (issue 28),
on a 390 px phone: the list's button, the grace form, the new secret shown once and copied,
the list saying until when the previous secret signs; then Test, whose delivery a real HTTPS
receiver on loopback gets signed by both secrets. Nothing is wider than the screen.

Every wait is on a selector or a URL; nothing sleeps.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from tests.fixtures.browser import OVERFLOW, TIMEOUT_MS, chromium, needs_chromium
from tests.fixtures.environment import PASSWORD
from tests.fixtures.factories import Org
from tests.fixtures.live_server import LiveServer
from tests.fixtures.receivers import Receiver
from tests.fixtures.secret_rotation import PREVIOUS, SIGNATURE, signed_by

if TYPE_CHECKING:
    from playwright.async_api import Page, ViewportSize

pytestmark = needs_chromium

PHONE: ViewportSize = {"width": 390, "height": 844}


async def test_an_admin_rotates_a_webhook_secret_on_a_phone(
    live: LiveServer, receiver: Receiver, org: Org
) -> None:
    from playwright.async_api import expect

    expect.set_options(timeout=TIMEOUT_MS)
    email = "rotating-admin@example.org"
    await org.member("admin", email=email, password=PASSWORD)
    overflowing: dict[str, Any] = {}

    async def fits(page: Page, label: str) -> None:
        found = await page.evaluate(OVERFLOW)
        if found["scrollWidth"] > PHONE["width"] or found["wide"]:
            overflowing[label] = found

    async with chromium() as browser:
        context = await browser.new_context(base_url=live.url, viewport=PHONE)
        await context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live.url)
        context.set_default_timeout(TIMEOUT_MS)
        page = await context.new_page()
        try:
            await page.goto("/login")
            await page.get_by_label("Email").fill(email)
            await page.get_by_label("Password").fill(PASSWORD)
            await page.get_by_role("button", name="Sign in").click()
            await expect(page).to_have_url(f"{live.url}/settings/{org.id}/keys")

            await page.goto(f"/settings/{org.id}/webhooks/new")
            await page.get_by_label("Name", exact=True).fill("Ops")
            await page.get_by_label("URL", exact=True).fill(receiver.url())
            await page.get_by_label(re.compile("^All events")).check()
            await page.get_by_role("button", name="Add webhook").click()
            old = await page.locator("#secret").input_value()
            await page.get_by_role("link", name="back to webhooks").click()

            row = page.locator('tr[data-webhook="Ops"]')
            await row.get_by_role("link", name="Rotate secret").click()
            await expect(page.get_by_role("heading", name=re.compile("Rotate"))).to_be_visible()
            grace = page.get_by_label(re.compile("^Grace window"))
            await expect(grace).to_have_value("24")
            await fits(page, "rotate form")
            await grace.fill("99")
            await page.get_by_role("button", name="Rotate secret").click()
            await expect(page.locator("#grace-error")).to_contain_text("from 0 to 72")
            await expect(grace).to_have_attribute("aria-invalid", "true")
            await page.get_by_label(re.compile("^Grace window")).fill("2")
            await page.get_by_role("button", name="Rotate secret").click()

            await expect(page.get_by_text("It will not be shown again")).to_be_visible()
            new = await page.locator("#secret").input_value()
            assert re.fullmatch(r"[0-9a-f]{64}", new)
            assert new != old
            assert new not in page.url
            await page.get_by_role("button", name="Copy secret").click()
            await expect(page.get_by_text("Copied to the clipboard.").first).to_be_visible()
            assert await page.evaluate("navigator.clipboard.readText()") == new
            await expect(page.get_by_role("status").last).to_contain_text(
                "The previous secret also signs every delivery until"
            )
            await fits(page, "new secret")
            # Reload it (issue 42): no second rotation (the signatures below are by `new`
            # and `old`), and the secret is not shown again.
            await page.reload()
            await expect(page.get_by_text("was shown once")).to_be_visible()
            await expect(page.locator("body")).not_to_contain_text(new)
            await fits(page, "secret shown once")

            await page.get_by_role("link", name="back to webhooks").click()
            row = page.locator('tr[data-webhook="Ops"]')
            await expect(row).to_contain_text(new[:8])
            await expect(row).to_contain_text("The previous secret also signs until")
            await expect(page.locator("body")).not_to_contain_text(new)
            await fits(page, "webhooks list")

            # Test: the worker signs the ping with both secrets.
            await row.get_by_role("button", name="Test").click()
            attempt = page.locator('section.delivery[data-status="succeeded"] tr.attempt')
            await expect(attempt).to_have_count(1)
        finally:
            await context.close()

    assert overflowing == {}
    [got] = receiver.requests
    assert got.headers["X-Service-Event"] == "test.ping"
    assert signed_by(got.headers, got.body, new) == SIGNATURE
    assert signed_by(got.headers, got.body, old) == PREVIOUS
    assert len(got.headers["webhook-signature"].split(" ")) == 2
