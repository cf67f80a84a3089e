"""End to end in headless Chromium against a real server: sign in, manage keys and prove
with API calls that they behave as the screens say, then a webhook from a refused URL to a
Test delivery that a real HTTPS receiver on loopback answers and the log shows.

Every wait is on a selector or a URL; nothing sleeps.
"""

from __future__ import annotations

import re

import httpx
from gidgethub.sansio import validate_event
from sqlalchemy import func, select, update
from sqlalchemy.ext.asyncio import AsyncEngine

from hangar.webhooks.models import Subscription
from tests.fixtures.browser import TIMEOUT_MS, chromium, needs_chromium
from tests.fixtures.environment import PASSWORD
from tests.fixtures.factories import Org
from tests.fixtures.live_server import LiveServer
from tests.fixtures.receivers import HOST, Receiver

pytestmark = needs_chromium


async def _api(live: LiveServer, path: str, key: str) -> int:
    async with httpx.AsyncClient(base_url=live.url) as http:
        response = await http.get(path, headers={"Authorization": f"Bearer {key}"})
        return response.status_code


async def _subscriptions(engine: AsyncEngine, org: Org) -> int:
    async with engine.connect() as conn:
        query = select(func.count()).where(Subscription.org_id == org.id)
        return int((await conn.execute(query)).scalar_one())


async def test_an_admin_manages_keys_and_webhooks_in_the_browser(
    live: LiveServer, receiver: Receiver, org: Org, engine: AsyncEngine
) -> None:
    from playwright.async_api import expect

    expect.set_options(timeout=TIMEOUT_MS)
    email = "browser-admin@example.org"
    await org.member("admin", email=email, password=PASSWORD)

    async with chromium() as browser:
        context = await browser.new_context(base_url=live.url)
        await context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live.url)
        context.set_default_timeout(TIMEOUT_MS)
        page = await context.new_page()
        try:
            # --- sign in, with the keyboard -------------------------------------------
            await page.goto("/settings")
            await expect(page).to_have_url(re.compile(r"/login\?next=/settings$"))
            await expect(page.get_by_label("Email")).to_be_focused()
            await page.keyboard.type(email)
            await page.keyboard.press("Tab")
            await page.keyboard.type(PASSWORD)
            await page.keyboard.press("Enter")
            await expect(page).to_have_url(f"{live.url}/settings/{org.id}/keys")
            await expect(page.get_by_role("heading", name="API keys")).to_be_visible()

            # --- create a key; read it and copy it -----------------------------------
            await page.get_by_role("link", name="Create a key").click()
            await page.get_by_label("Name", exact=True).fill("Club calendar")
            await page.get_by_label(re.compile("^read:aircraft")).check()
            await page.get_by_label(re.compile("^read:reservations")).check()
            await page.get_by_label(re.compile(r"^read:members\.full")).check()
            # The picker ticks read:members along with .full, as its hint explains.
            await expect(page.get_by_label(re.compile(r"^read:members:"))).to_be_checked()
            await page.get_by_role("button", name="Create key").click()
            await expect(page.get_by_text("It will not be shown again")).to_be_visible()
            key = await page.locator("#new-key").input_value()
            assert re.fullmatch(r"svc_pk_[A-Za-z0-9_-]{43}", key)
            assert key not in page.url
            await page.get_by_role("button", name="Copy key").click()
            await expect(page.get_by_text("Copied to the clipboard.")).to_be_visible()
            assert await page.evaluate("navigator.clipboard.readText()") == key
            feed = await page.locator("#feed-url").input_value()
            assert feed == f"{live.url}/api/v1/external/reservations.ics?token={key}"
            await expect(page.get_by_text("live credential")).to_be_visible()

            # The key does what the screen said: its scopes, and only those.
            assert await _api(live, "/api/v1/external/aircraft", key) == 200
            assert await _api(live, "/api/v1/external/members", key) == 200
            assert await _api(live, "/api/v1/external/squawks", key) == 403
            async with httpx.AsyncClient() as http:
                assert (await http.get(feed)).headers["content-type"].startswith("text/calendar")

            await page.get_by_role("link", name="back to API keys").click()
            row = page.locator(f'tr[data-key-prefix="{key[:12]}"]')
            await expect(row).to_contain_text("Active")
            await expect(page.locator("body")).not_to_contain_text(key)

            # --- rotate with a one-hour grace window ---------------------------------
            await row.get_by_role("link", name="Rotate").click()
            await expect(page.get_by_label(re.compile("^Grace window"))).to_have_value("24")
            await page.get_by_label(re.compile("^Grace window")).fill("1")
            await page.get_by_role("button", name="Rotate key").click()
            await expect(
                page.get_by_role("heading", name=re.compile("Key rotated"))
            ).to_be_visible()
            new_key = await page.locator("#new-key").input_value()
            assert new_key != key
            await expect(page.get_by_text("Expiring")).to_be_visible()
            assert await _api(live, "/api/v1/external/aircraft", key) == 200  # in its grace
            assert await _api(live, "/api/v1/external/aircraft", new_key) == 200

            # --- revoke the new key, after confirming --------------------------------
            await page.get_by_role("link", name="back to API keys").click()
            await expect(page.locator(f'tr[data-key-prefix="{key[:12]}"]')).to_contain_text(
                "Expiring"
            )
            new_row = page.locator(f'tr[data-key-prefix="{new_key[:12]}"]')
            await new_row.get_by_role("link", name="Revoke").click()
            await expect(page.get_by_text("cannot be undone")).to_be_visible()
            await page.get_by_role("button", name="Yes, revoke this key").click()
            await expect(page.get_by_role("status")).to_contain_text("The key is revoked")
            await expect(new_row).to_contain_text("Revoked")
            assert await _api(live, "/api/v1/external/aircraft", new_key) == 401
            assert await _api(live, "/api/v1/external/aircraft", key) == 200

            # --- a webhook: refused URL in plain words, then a good one ---------------
            await (
                page.get_by_role("navigation", name="Main")
                .get_by_role("link", name="Webhooks")
                .click()
            )
            await page.get_by_role("link", name="Add a webhook").click()
            await page.get_by_label("Name", exact=True).fill("Ops")
            await page.get_by_label("URL", exact=True).fill(f"http://{HOST}/hook")
            await page.get_by_label(re.compile("^All events")).check()
            await page.get_by_role("button", name="Add webhook").click()
            error = page.locator("#url-error")
            await expect(error).to_contain_text("https")
            await expect(error).not_to_contain_text("WEBHOOK_URL")
            await expect(page.get_by_label("URL", exact=True)).to_have_attribute(
                "aria-invalid", "true"
            )

            await page.get_by_label("URL", exact=True).fill(receiver.url())
            await page.get_by_role("button", name="Add webhook").click()
            await expect(page.get_by_text("It will not be shown again")).to_be_visible()
            secret = await page.locator("#secret").input_value()
            assert re.fullmatch(r"[0-9a-f]{64}", secret)
            assert secret not in page.url
            # Reload the page that shows it (issue 42): no second webhook, and no secret.
            await page.reload()
            await expect(page.get_by_text("was shown once")).to_be_visible()
            await expect(page.locator("body")).not_to_contain_text(secret)
            assert await _subscriptions(engine, org) == 1
            await page.get_by_role("link", name="back to webhooks").click()
            hook_row = page.locator('tr[data-webhook="Ops"]')
            await expect(hook_row).to_contain_text("Enabled")
            await expect(hook_row).to_contain_text(secret[:8])
            await expect(page.locator("body")).not_to_contain_text(secret)

            # --- edit it ----------------------------------------------------------
            await hook_row.get_by_role("link", name="Edit").click()
            await page.get_by_label("Name", exact=True).fill("Ops desk")
            await page.get_by_label(re.compile("^All events")).uncheck()
            await page.get_by_label(re.compile("^squawk.created")).check()
            await page.get_by_role("button", name="Save changes").click()
            await expect(page.get_by_role("status")).to_contain_text("The webhook is saved")
            hook_row = page.locator('tr[data-webhook="Ops desk"]')
            await expect(hook_row).to_contain_text("squawk.created")

            # --- Test: the receiver answers, and the log shows the attempt ----------
            await hook_row.get_by_role("button", name="Test").click()
            await expect(page.get_by_role("heading", name=re.compile("Deliveries"))).to_be_visible()
            # The page reloads itself while the delivery is pending.
            attempt = page.locator('section.delivery[data-status="succeeded"] tr.attempt')
            await expect(attempt).to_have_count(1)
            await expect(attempt).to_contain_text("Delivered: the receiver answered 200 OK.")
            # What was sent, behind a disclosure: the signature as it went out.
            await page.get_by_text("Request", exact=True).first.click()
            await expect(page.locator("pre.request").first).to_contain_text(
                "X-Service-Signature: (computed when sent; not kept)"
            )
            await expect(attempt).to_contain_text(" ms")
            await expect(page.locator("section.delivery").first).to_contain_text("Delivered")
            [got] = receiver.requests
            validate_event(got.body, signature=got.headers["X-Service-Signature"], secret=secret)
            assert got.headers["X-Service-Event"] == "test.ping"

            # --- disabled after failures (set directly: five real failures take 50 s) --
            async with engine.begin() as conn:
                await conn.execute(
                    update(Subscription)
                    .where(Subscription.org_id == org.id)
                    .values(enabled=False, consecutive_failures=5)
                )
            await page.get_by_role("link", name="Back to webhooks").click()
            hook_row = page.locator('tr[data-webhook="Ops desk"]')
            await expect(hook_row).to_contain_text("Disabled after 5 consecutive failed deliveries")
            await hook_row.get_by_role("button", name="Enable").click()
            await expect(page.get_by_role("status")).to_contain_text("enabled again")
            await expect(hook_row).to_contain_text("Enabled")
            await expect(hook_row.get_by_role("button", name="Enable")).to_have_count(0)

            # --- readable on a phone: nothing wider than the screen -----------------
            await page.set_viewport_size({"width": 375, "height": 740})
            await page.goto(f"/settings/{org.id}/keys")
            overflow = await page.evaluate(
                "document.documentElement.scrollWidth - window.innerWidth"
            )
            assert overflow <= 0

            # --- sign out -----------------------------------------------------------
            await page.get_by_role("button", name="Sign out").click()
            await expect(page).to_have_url(re.compile("/login$"))
            await page.goto(f"/settings/{org.id}/keys")
            await expect(page).to_have_url(re.compile(r"/login\?next="))
        finally:
            await context.close()
