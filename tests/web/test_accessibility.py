"""Every screen passes axe-core (WCAG 2.0 and 2.1, A and AA, and axe's best practices), in
Chromium at 1280 and at 390 px: signed out (sign-in and its error, /docs, /changelog, an
invitation, a password reset, their 404s) and signed in as an admin (the organization chooser,
every key and webhook screen with its forms, their errors and what they lead to, a delivery
log with a delivered and a failed delivery and every exchange opened, the refusal and the 404
of the settings screens, an invitation for the viewer and one for someone else, and
two-factor sign-in: set up, required, and the code after the password).

The screens are not listed by hand only: the test fails if a GET route of the HTML side
(`PageRoute`) or a template was never shown, so a new screen cannot escape it.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import pyotp
import pytest
from sqlalchemy import update

from hangar.accounts.service import password_reset
from hangar.app import create_app
from hangar.kit.container import Services
from hangar.orgs.members import Contact, invite_member
from hangar.orgs.models import Organization
from hangar.web import pages
from hangar.web.pages import PageRoute
from hangar.webhooks.models import Attempt
from tests.fixtures.axe import PINNED, audit, axe_version, with_axe
from tests.fixtures.browser import TIMEOUT_MS, chromium, needs_chromium
from tests.fixtures.environment import PASSWORD
from tests.fixtures.factories import Org, make_org
from tests.fixtures.fakes import FakeClock
from tests.fixtures.health import History, Sent
from tests.fixtures.live_server import LiveServer
from tests.fixtures.locked_tools import NPM
from tests.fixtures.routes import api_routes
from tests.fixtures.webhooks import subscribe

if TYPE_CHECKING:
    from playwright.async_api import Page, ViewportSize

pytestmark = [
    needs_chromium,
    # As the other npm-pinned tools' tests do (tests/webhooks/test_standard_webhooks.py).
    pytest.mark.skipif(NPM is None, reason="needs npm (node 20) to install tests/axe_js"),
]

# GET routes of the HTML side that are no screen.
NOT_SCREENS = {
    "/static/{name}": "the stylesheet and the script",
    "/changelog.rss": "the changelog's feed",
}
# Names of the other organization's rows: no screen of ours may show them.
OTHERS = ("Other Aero Club", "Other club")


@pytest.fixture
def rendered(monkeypatch: pytest.MonkeyPatch) -> set[str]:
    """The names of the templates the live server renders (it runs in this process), the
    ones extended, included and imported too."""
    names: set[str] = set()
    get_template = pages.templates.get_template

    def recorded(name: Any, *args: Any, **kwargs: Any) -> Any:
        names.add(str(name))
        return get_template(name, *args, **kwargs)

    monkeypatch.setattr(pages.templates, "get_template", recorded)
    return names


# Every screen, each checked by axe in a real browser: 60 s on a loaded two-core machine.
@pytest.mark.timeout(180)
@pytest.mark.parametrize(
    "viewport", [{"width": 1280, "height": 800}, {"width": 390, "height": 844}], ids=["1280", "390"]
)
async def test_every_screen_passes_axe(
    live: LiveServer,
    services: Services,
    clock: FakeClock,
    org: Org,
    other: Org,
    rendered: set[str],
    viewport: ViewportSize,
) -> None:
    from playwright.async_api import expect

    expect.set_options(timeout=TIMEOUT_MS)
    # The live server runs on the system clock: what this test writes happened just now, so
    # the log's health charts have something to draw.
    clock.set(datetime.now(UTC).replace(microsecond=0))
    world = await _world(services, org, other)
    base = f"/settings/{org.id}"
    found: dict[str, list[str]] = {}
    seen: list[str] = []

    async with chromium() as browser:
        context = await browser.new_context(base_url=live.url, viewport=viewport)
        context.set_default_timeout(TIMEOUT_MS)
        await with_axe(context)
        page = await context.new_page()

        async def check(label: str = "") -> None:
            await page.wait_for_load_state()
            path = page.url.removeprefix(live.url)
            seen.append(path.split("?")[0])
            name = f"{path} ({label})" if label else path
            if violations := await audit(page):
                found[name] = violations
            body = await page.locator("body").inner_text()
            assert not [o for o in OTHERS if o in body], name

        async def visit(path: str, label: str = "", status: int = 200) -> None:
            response = await page.goto(path)
            assert response is not None, path
            assert response.status == status, f"{path}: {response.status}"
            await check(label)

        try:
            # --- signed out --------------------------------------------------------------
            await visit("/docs")
            await visit("/changelog")
            await visit(f"/invitations/{world.invitation}", "an invitation, signed out")
            await visit("/invitations/not-a-link", "an unusable invitation", 404)
            await visit(f"/password-reset/{world.reset}")
            await visit("/password-reset/not-a-link", "an unusable reset link", 404)
            await visit("/settings", "sign in first")
            await page.get_by_label("Email").fill(world.email)
            await page.get_by_label("Password").fill("not the password")
            await page.get_by_role("button", name="Sign in").click()
            await expect(page.get_by_role("alert")).to_be_visible()
            await check("wrong password")
            await page.get_by_label("Password").fill(PASSWORD)
            await page.get_by_role("button", name="Sign in").click()
            await expect(page.get_by_role("heading", name="Choose an organization")).to_be_visible()

            # --- signed in ---------------------------------------------------------------
            await check("the organization chooser")
            await visit(f"{base}/keys")

            await visit(f"{base}/keys/new")
            await page.get_by_role("button", name="Create key").click()
            await expect(page.locator(".field-error").first).to_be_visible()
            await check("nothing filled in")
            await page.get_by_label("Name", exact=True).fill("Calendar sync")
            await page.get_by_label(re.compile("^read:reservations")).check()
            await page.get_by_role("button", name="Create key").click()
            await expect(page.get_by_text("It will not be shown again")).to_be_visible()
            await check("a new key and its feed")
            await page.reload()  # the one-time view again: no second key, and no key
            await expect(page.get_by_text("This key was shown once")).to_be_visible()
            await check("a key shown once")
            await page.get_by_role("link", name="back to API keys").click()

            await page.get_by_role("link", name="Rotate Calendar sync").click()
            await check()
            await page.get_by_role("button", name="Rotate key").click()
            await expect(
                page.get_by_role("heading", name=re.compile("Key rotated"))
            ).to_be_visible()
            await check("the rotated key")
            await page.get_by_role("link", name="back to API keys").click()
            await page.get_by_role("link", name="Revoke Calendar sync").first.click()
            await check()
            await page.get_by_role("button", name="Yes, revoke this key").click()
            await expect(page.get_by_role("status")).to_contain_text("revoked")
            await check("active, expiring and revoked keys")

            await visit(f"{base}/webhooks", "enabled and disabled webhooks")
            await visit(f"{base}/webhooks/new")
            await page.get_by_label("Name", exact=True).fill("Dispatch board")
            await page.get_by_label("URL", exact=True).fill("http://hooks.example.com/hook")
            await page.get_by_role("button", name="Add webhook").click()
            await expect(page.locator("#url-error")).to_be_visible()
            await check("a refused URL and no event")
            await page.get_by_label("URL", exact=True).fill("https://hooks.example.com/dispatch")
            await page.get_by_label(re.compile("^All events")).check()
            await page.get_by_role("button", name="Add webhook").click()
            await expect(page.get_by_text("It will not be shown again")).to_be_visible()
            await check("a new webhook's secret")
            await page.reload()
            await expect(page.get_by_text("This signing secret was shown once")).to_be_visible()
            await check("a secret shown once")

            hook = f"{base}/webhooks/{world.hook}"
            await visit(f"{hook}/edit")
            await page.get_by_role("button", name="Save changes").click()
            await expect(page.get_by_role("status")).to_contain_text("saved")
            await check("saved")
            await page.get_by_role("button", name=f"Enable {DISABLED}").click()
            await expect(page.get_by_role("status")).to_contain_text("enabled again")
            await check("enabled again")
            await visit(f"{hook}/rotate-secret")
            await page.get_by_label(re.compile("^Grace window")).fill("999")
            await page.get_by_role("button", name="Rotate secret").click()
            await expect(page.locator("#grace-error")).to_be_visible()
            await check("a grace too long")
            await page.get_by_label(re.compile("^Grace window")).fill("24")
            await page.get_by_role("button", name="Rotate secret").click()
            await expect(page.get_by_text("It will not be shown again")).to_be_visible()
            await check("a rotated secret")
            await visit(f"{hook}/rotate-secret", "the previous secret in its grace")
            await visit(f"{base}/webhooks", "a previous secret in its grace")
            await visit(f"{hook}/deliveries", "a delivered and a failed delivery")
            await page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
            await check("every exchange opened")
            await visit(f"{hook}/deliveries?status=failed", "filtered")
            searched = f"resource_id={uuid.uuid4()}&since=2026-05-01T00:00&until=2026-05-05T00:00"
            await visit(f"{hook}/deliveries?{searched}", "searched by resource and time")
            await visit(f"{hook}/deliveries?since=soon", "a time it cannot read", 400)
            await visit(f"{hook}/deliveries?status=lost", "a filter it cannot apply", 400)
            await visit(f"{hook}/deliveries?before=not-a-cursor", "a page link it cannot read", 400)
            await visit(f"{base}/webhooks/{world.spare}/delete")
            await page.get_by_role("button", name="Yes, delete this webhook").click()
            await expect(page.get_by_role("status")).to_contain_text("deleted")
            await check("deleted")
            await visit(f"{base}/audit-log", "the actions above, recorded")
            await visit(f"{base}/audit-log?action=webhook.deleted&actor=operator", "filtered")
            await visit(f"{base}/audit-log?action=nope&since=soon", "filters it refuses", 400)

            await visit(f"/settings/{world.member_of}/keys", "refused: not an admin", 403)
            await visit(f"{base}/webhooks/{uuid.uuid4()}/edit", "no such webhook", 404)
            await visit(f"/settings/{other.id}/webhooks", "another organization", 404)
            await visit(f"/invitations/{world.own_invitation}", "an invitation for the viewer")
            await visit(f"/invitations/{world.invitation}", "an invitation for someone else")
            await visit("/docs", "signed in")
            await visit("/changelog", "signed in")
            await _two_factor_screens(page, check, visit, world, base)
            version = await axe_version(page)
        finally:
            await context.close()

    assert version == PINNED
    assert not found, "axe found:\n" + "\n".join(
        f"{viewport['width']} px {name}:\n  " + "\n  ".join(violations)
        for name, violations in found.items()
    )
    screens = _screen_routes(services)
    unseen = [p for p, r in screens.items() if not any(r.path_regex.match(s) for s in seen)]
    assert unseen == [], f"screens this test never shows: {unseen}"
    templates = {t.name for t in (pages.PACKAGE / "templates").iterdir() if t.name.endswith("html")}
    assert templates - rendered == set(), "templates this test never shows"


async def _two_factor_screens(page: Page, check: Any, visit: Any, world: _World, base: str) -> None:
    """Two-factor sign-in, as the admin meets it: kept out of an organization that requires
    it, setting it up (a wrong first code, then the recovery codes), a wrong code to turn it
    off, requiring it of the organization's admins, and signing in again with a code."""
    from playwright.async_api import expect

    await visit(f"/settings/{world.strict}/keys", "two-factor sign-in required first", 403)
    await visit(f"{base}/security", "admins without two-factor sign-in")
    await visit("/settings/two-factor", "off")
    await page.get_by_role("button", name="Set up two-factor sign-in").click()
    await expect(page.get_by_label("Setup key")).to_be_visible()
    await check("the code to scan")
    await page.get_by_label("Code from the app").fill("000000")
    await page.get_by_role("button", name="Turn on two-factor sign-in").click()
    await expect(page.locator("#code-error")).to_be_visible()
    await check("a wrong first code")
    secret = await page.get_by_label("Setup key").input_value()
    # The live server runs on the system clock, as an authenticator app does.
    await page.get_by_label("Code from the app").fill(pyotp.TOTP(secret).now())
    await page.get_by_role("button", name="Turn on two-factor sign-in").click()
    await expect(page.get_by_text("They will not be shown again")).to_be_visible()
    await check("the recovery codes")
    codes = (await page.locator("ol.codes").inner_text()).split()
    assert len(codes) == 10
    await page.reload()
    await expect(page.get_by_text("were shown once")).to_be_visible()
    await check("the recovery codes, shown once")
    await page.get_by_role("link", name="Back to two-factor sign-in").click()
    await expect(page.get_by_text("Recovery codes left")).to_be_visible()
    await check("on")
    await page.get_by_label("A code from your app, or a recovery code").fill("not a code")
    await page.get_by_role("button", name="Turn off two-factor sign-in").click()
    await expect(page.locator("#off-code-error")).to_be_visible()
    await check("a wrong code to turn it off")
    await visit(f"{base}/security")
    await page.get_by_label("Require two-factor sign-in for admins").check()
    await page.get_by_role("button", name="Save").click()
    await expect(page.get_by_label("Require two-factor sign-in for admins")).to_be_checked()
    await check("required of admins")
    await page.get_by_role("button", name="Sign out").click()
    await page.get_by_label("Email").fill(world.email)
    await page.get_by_label("Password").fill(PASSWORD)
    await page.get_by_role("button", name="Sign in").click()
    await expect(page.get_by_role("heading", name="Two-factor sign-in")).to_be_visible()
    await check("the code after the password")
    await page.get_by_label("Authentication code or recovery code").fill("not a code")
    await page.get_by_role("button", name="Verify").click()
    await expect(page.get_by_role("alert")).to_be_visible()
    await check("a wrong code")
    await page.get_by_label("Authentication code or recovery code").fill(codes[0])
    await page.get_by_role("button", name="Verify").click()
    await expect(page.get_by_role("heading", name="Choose an organization")).to_be_visible()


def _screen_routes(services: Services) -> dict[str, Any]:
    """Each GET route of the HTML side that answers a screen, by path."""
    found = {
        path: route
        for path, route in api_routes(create_app(services).routes)
        if isinstance(route, PageRoute) and "GET" in (route.methods or ())
    }
    assert set(NOT_SCREENS) <= set(found)  # the list stays true
    return {path: route for path, route in found.items() if path not in NOT_SCREENS}


DISABLED = "Night shift"


@dataclass(frozen=True)
class _World:
    """What the screens show: an admin (`email`) of two organizations and a plain member of
    a third (`member_of`), keys, an enabled webhook (`hook`) with a delivered and a failed
    delivery, a disabled one, a `spare` to delete; an `invitation` for a new person and one
    for the admin (`own_invitation`); a password `reset` link."""

    email: str
    member_of: uuid.UUID
    strict: uuid.UUID  # an organization of the admin's that requires two-factor sign-in
    hook: uuid.UUID
    spare: uuid.UUID
    invitation: str
    own_invitation: str
    reset: str


async def _world(services: Services, org: Org, other: Org) -> _World:
    tag = uuid.uuid4().hex[:8]
    email = f"axe-admin-{tag}@example.org"
    admin_id = await org.member("admin", email=email, password=PASSWORD)
    second = await make_org(org.engine, "Second flying club")
    await second.membership_row(admin_id, email, "admin")
    third = await make_org(org.engine, "Gliding club")
    await third.membership_row(admin_id, email, "member")
    inviting = await make_org(org.engine, "Soaring club")
    strict = await make_org(org.engine, "Strict aero club")
    await strict.membership_row(admin_id, email, "admin")
    async with services.engine.begin() as conn:
        await conn.execute(
            update(Organization).where(Organization.id == strict.id).values(require_two_factor=True)
        )
    await org.key_with("read:aircraft", "read:members")

    now = services.clock.now()
    hook = await subscribe(
        services,
        org,
        "https://hooks.example.com/integrations/hangar",
        events=["reservation.created", "squawk.created"],
        name="Operations desk",
    )
    await _log(History(services.engine, org, hook), now)
    await subscribe(
        services,
        org,
        "https://hooks.example.com/night",
        name=DISABLED,
        enabled=False,
        consecutive_failures=5,
        disabled_at=now,
    )
    spare = await subscribe(services, org, "https://hooks.example.com/spare", name="Spare")
    other_hook = await subscribe(services, other, "https://hooks.example.com/x", name="Other club")
    await _log(History(services.engine, other, other_hook), now)

    pilot = f"axe-pilot-{tag}@example.org"
    await org.member("member", email=pilot, password=PASSWORD)
    async with services.engine.begin() as conn:
        new = await invite_member(
            conn, org.id, Contact(f"axe-new-{tag}@example.org"), role="member", now=now
        )
        mine = await invite_member(conn, inviting.id, Contact(email), role="member", now=now)
        reset = await password_reset.issue_reset(conn, pilot, now)
    return _World(
        email,
        third.id,
        strict.id,
        hook,
        spare,
        new.invitation.token,
        mine.invitation.token,
        reset.token,
    )


async def _log(history: History, now: datetime) -> None:
    """A delivered delivery, and a failed one whose receiver answered 500 and then did not
    answer; each attempt with the exchange the inspector shows."""
    start = now - timedelta(minutes=30)
    delivered = await history.finished(
        "succeeded", start + timedelta(seconds=1), [Sent(start, 180)]
    )
    failed = await history.finished(
        "failed",
        now - timedelta(minutes=5),
        [
            Sent(now - timedelta(minutes=10), 240, "http_error", 500),
            Sent(now - timedelta(minutes=6), 10_000, "timeout", None),
        ],
    )
    request = [
        ["Content-Type", "application/json"],
        ["X-Service-Event", "squawk.created"],
        ["X-Service-Signature", "sha256=" + "ab" * 32],
    ]
    async with history.engine.begin() as conn:
        await conn.execute(
            update(Attempt)
            .where(Attempt.delivery_id.in_([delivered, failed]))
            .values(request_headers=request)
        )
        await conn.execute(
            update(Attempt)
            .where(Attempt.delivery_id == failed, Attempt.number == 1)
            .values(
                response_reason="Internal Server Error",
                response_headers=[["Content-Type", "text/html"], ["Server", "nginx"]],
                response_body="<html><body><h1>500 Internal Server Error</h1></body></html>",
            )
        )
        await conn.execute(
            update(Attempt)
            .where(Attempt.delivery_id == failed, Attempt.number == 2)
            .values(error="timed out after 10 s")
        )
