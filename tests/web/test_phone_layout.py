"""Every page fits a 390 px phone: in Chromium at 390 by 844 CSS pixels, /docs, /login,
/changelog and every /settings screen (signed in as an admin of an organization with keys,
members, and webhooks whose deliveries have attempts) scroll only up and down.

Long code, URLs and tables may scroll inside their own box; the page itself may not.
"""

from __future__ import annotations

import json
import re
import uuid
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy import insert, update

from hangar.kit.container import Services
from hangar.webhooks.events import outbox
from hangar.webhooks.models import Attempt, Delivery
from tests.fixtures.browser import OVERFLOW, TIMEOUT_MS, chromium, needs_chromium
from tests.fixtures.environment import PASSWORD
from tests.fixtures.factories import Org, make_org
from tests.fixtures.live_server import LiveServer
from tests.fixtures.webhooks import subscribe

if TYPE_CHECKING:
    from playwright.async_api import Page, ViewportSize

pytestmark = needs_chromium

PHONE: ViewportSize = {"width": 390, "height": 844}
# An unbroken run of characters, as a receiver's error page or a long URL path brings.
LONG_WORD = "x" * 120


async def _webhook_with_history(services: Services, org: Org, name: str) -> uuid.UUID:
    """A webhook with a long URL, several events, and deliveries that succeeded and failed
    (none pending: the log would reload itself)."""
    sub_id = await subscribe(
        services,
        org,
        f"https://hooks.example.com/integrations/hangar/{LONG_WORD}?tenant=acme-flight-school",
        events=["reservation.created", "reservation.cancelled", "squawk.created"],
        name=name,
    )
    now = services.clock.now()
    async with services.engine.begin() as conn:
        await outbox.record(conn, org.id, ["reservation.created", "squawk.created"], {}, now)
        ids = list(
            await conn.scalars(
                update(Delivery)
                .where(Delivery.subscription_id == sub_id)
                .values(status="failed", attempts_made=2, completed_at=now)
                .returning(Delivery.id)
            )
        )
        attempts: list[dict[str, Any]] = [
            {
                "id": uuid.uuid4(),
                "delivery_id": delivery_id,
                "number": number,
                "started_at": now + timedelta(seconds=number),
                "duration_ms": 10_000,
                "status_code": 502 if number == 1 else None,
                "error": None if number == 1 else f"connection reset by {LONG_WORD}",
                "response_body": f"<html>{LONG_WORD}</html>",
            }
            for delivery_id in ids
            for number in (1, 2)
        ]
        await conn.execute(insert(Attempt), attempts)
    return sub_id


async def test_every_page_fits_a_390px_phone(
    live: LiveServer, services: Services, org: Org, other: Org
) -> None:
    from playwright.async_api import expect

    expect.set_options(timeout=TIMEOUT_MS)
    email = "phone-admin@example.org"
    admin_id = await org.member("admin", email=email, password=PASSWORD)
    await org.member("member", first_name="Maximilian-Alexander", last_name="Featherstonehaugh")
    await org.member("member", status="pending")
    key = await org.key_with("read:aircraft", "read:members", "read:members.full")
    sub_id = await _webhook_with_history(services, org, "Operations desk")
    await _webhook_with_history(services, other, "Other club's hook")
    base = f"/settings/{org.id}"

    async with chromium() as browser:
        context = await browser.new_context(base_url=live.url, viewport=PHONE)
        context.set_default_timeout(TIMEOUT_MS)
        page = await context.new_page()
        overflowing: dict[str, Any] = {}

        async def measure(page: Page, label: str) -> None:
            found = await page.evaluate(OVERFLOW)
            if found["scrollWidth"] > PHONE["width"] or found["wide"]:
                overflowing[label] = found
            await expect(page.locator("body")).not_to_contain_text("Other club")

        async def visit(path: str) -> None:
            response = await page.goto(path)
            assert response is not None, path
            assert response.ok, path
            await measure(page, path)

        try:
            for path in ("/docs", "/changelog", "/login"):
                await visit(path)

            await page.get_by_label("Email").fill(email)
            await page.get_by_label("Password").fill(PASSWORD)
            await page.get_by_role("button", name="Sign in").click()
            await expect(page).to_have_url(f"{live.url}{base}/keys")
            await measure(page, "/settings")

            key_id = await _key_id(page, key[:12])
            for path in (
                f"{base}/keys/new",
                f"{base}/keys/{key_id}/rotate",
                f"{base}/keys/{key_id}/revoke",
                f"{base}/webhooks",
                f"{base}/webhooks/new",
                f"{base}/webhooks/{sub_id}/edit",
                f"{base}/webhooks/{sub_id}/delete",
                f"{base}/webhooks/{sub_id}/deliveries",
            ):
                await visit(path)
            # Each attempt's request and response, opened: the longest lines of any screen.
            await page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
            await measure(page, "the delivery log, every attempt opened")

            # The pages a form leads to: a new key, shown once; a new webhook's secret.
            await page.goto(f"{base}/keys/new")
            await page.get_by_label("Name", exact=True).fill("Calendar sync")
            await page.get_by_label(re.compile("^read:reservations")).check()
            await page.get_by_role("button", name="Create key").click()
            await expect(page.get_by_text("It will not be shown again")).to_be_visible()
            await measure(page, "a new key")

            await page.goto(f"{base}/webhooks/new")
            await page.get_by_label("Name", exact=True).fill("Dispatch board")
            await page.get_by_label("URL", exact=True).fill(
                f"https://hooks.example.com/{LONG_WORD}"
            )
            await page.get_by_label(re.compile("^All events")).check()
            await page.get_by_role("button", name="Add webhook").click()
            await expect(page.get_by_text("It will not be shown again")).to_be_visible()
            await measure(page, "a new webhook's secret")

            await visit(f"{base}/keys")  # now with the new key too

            # An admin of two organizations lands on the chooser.
            second = await make_org(org.engine, "Second flying club")
            await second.membership_row(admin_id, email, "admin")
            await visit("/settings")
            await expect(page.get_by_text("Second flying club")).to_be_visible()
        finally:
            await context.close()

    assert overflowing == {}, json.dumps(overflowing, indent=1)


async def _key_id(page: Page, prefix: str) -> str:
    """The id of the key with `prefix`, from its row's Revoke link on the keys screen."""
    link = page.locator(f'tr[data-key-prefix="{prefix}"] a', has_text="Revoke")
    href = await link.get_attribute("href")
    assert href is not None
    return href.rsplit("/", 2)[-2]
