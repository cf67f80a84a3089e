"""Issue 42 point 7: every screen that makes a secret answers with a redirect, and the secret
is shown from a one-time view (web.shown_once). A reload of that view repeats nothing (one
key, one subscription, one rotation) and shows no secret; the secret is never in a Location
or any URL; another session's, a forged, a stale or a moved cookie shows nothing; and the
other organization's admin gets nothing."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable
from http.cookies import SimpleCookie

import httpx
import pyotp
import pytest
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncEngine

from hangar.app import create_app
from hangar.auth import sessions
from hangar.auth.models import UserSession
from hangar.foundation.crypto import token_digest
from hangar.keys.models import ApiKey
from hangar.kit.container import Services
from hangar.web import shown_once
from hangar.web.pages import PageRoute
from hangar.webhooks.models import Subscription
from tests.fixtures.clients import signed_in_as
from tests.fixtures.factories import Org
from tests.fixtures.fakes import FakeClock
from tests.fixtures.pages import csrf_in, page_csrf
from tests.fixtures.routes import api_routes
from tests.fixtures.secret_rotation import stored_secrets
from tests.fixtures.shown_once import COOKIE, follow

AIRCRAFT = "/api/v1/external/aircraft"
KEY = re.compile(r'id="new-key" class="mono" readonly value="(svc_pk_[A-Za-z0-9_-]{43})"')
SECRET = re.compile(r'id="secret" class="mono" readonly value="([0-9a-f]{64})"')
CODES = re.compile(r"<li>([^<]+)</li>")
KEY_GONE = "This key was shown once"
SECRET_GONE = "This signing secret was shown once"
CODES_GONE = "Your recovery codes were shown once"


def screen(org: Org, rest: str) -> str:
    return f"/settings/{org.id}{rest}"


async def count(engine: AsyncEngine, model: type[ApiKey] | type[Subscription], org: Org) -> int:
    async with engine.connect() as conn:
        query = select(func.count()).select_from(model).where(model.org_id == org.id)
        return int((await conn.execute(query)).scalar_one())


def cookie_of(answer: httpx.Response) -> tuple[str, dict[str, str | bool]]:
    """The one-time view's cookie as the action's answer sets it: (value, attributes)."""
    [header] = [h for h in answer.headers.get_list("set-cookie") if h.startswith(f"{COOKIE}=")]
    jar: SimpleCookie = SimpleCookie()
    jar.load(header)
    morsel = jar[COOKIE]
    attributes: dict[str, str | bool] = {k: v for k, v in morsel.items() if v}
    return morsel.value, attributes


async def carrying(browser: httpx.AsyncClient, path: str, value: str) -> httpx.Response:
    """GET `path` by `browser`, with `value` as the one-time cookie (as a browser would send
    one copied into it): set in its jar for that path, then the page."""
    browser.cookies.set(COOKIE, value, domain="hangar.example", path=path)
    return await browser.get(path)


def deletes_cookie(answer: httpx.Response, path: str) -> bool:
    return any(
        h.startswith(f'{COOKIE}=""') and "Max-Age=0" in h and f"Path={path}" in h
        for h in answer.headers.get_list("set-cookie")
    )


def no_secret_in_urls(answer: httpx.Response, *secrets: str) -> None:
    """Nothing of the action's answer, nor the view it leads to, carries a secret in a URL."""
    location = answer.headers["location"]
    value, attributes = cookie_of(answer)
    for secret in secrets:
        assert secret not in location
        assert secret not in str(attributes["path"])
        assert secret not in value  # sealed, not merely encoded


async def create_key(admin: httpx.AsyncClient, org: Org, name: str = "sync") -> httpx.Response:
    token = await page_csrf(admin, screen(org, "/keys/new"))
    form = {"csrf_token": token, "name": name, "scopes": ["read:aircraft"]}
    return await admin.post(screen(org, "/keys/new"), data=form)


async def create_hook(admin: httpx.AsyncClient, org: Org) -> httpx.Response:
    token = await page_csrf(admin, screen(org, "/webhooks/new"))
    form = {
        "csrf_token": token,
        "name": "ops",
        "url": "https://hooks.example.com/in",
        "events": ["*"],
    }
    return await admin.post(screen(org, "/webhooks/new"), data=form)


def found(pattern: re.Pattern[str], page: httpx.Response) -> str:
    match = pattern.search(page.text)
    assert match is not None, page.text
    return match.group(1)


# --- API keys ------------------------------------------------------------------------------


async def test_a_new_key_is_shown_once_and_a_reload_makes_no_second(
    admin: httpx.AsyncClient, client: httpx.AsyncClient, services: Services, org: Org
) -> None:
    before = await count(services.engine, ApiKey, org)
    made = await create_key(admin, org)
    assert made.status_code == 303
    view = made.headers["location"]
    assert re.fullmatch(rf"/settings/{org.id}/keys/[0-9a-f-]{{36}}/shown", view)
    _, attributes = cookie_of(made)
    assert attributes["path"] == view
    assert attributes["httponly"] is True
    assert attributes["secure"] is True
    assert str(attributes["samesite"]).lower() == "strict"
    assert attributes["max-age"] == "300"

    first = await follow(admin, made)
    key = found(KEY, first)
    no_secret_in_urls(made, key)
    assert deletes_cookie(first, view)
    assert "It will not be shown again" in first.text
    assert (await client.get(AIRCRAFT, headers={"Authorization": f"Bearer {key}"})).is_success

    again = await admin.get(view)  # the reload
    assert again.status_code == 200
    assert again.headers["cache-control"] == "no-store"
    assert key not in again.text
    assert KEY_GONE in again.text
    assert f'href="{screen(org, "/keys/")}' in again.text  # the way to rotate it
    assert await count(services.engine, ApiKey, org) == before + 1


async def test_a_rotation_is_shown_once_and_a_reload_rotates_nothing(
    admin: httpx.AsyncClient, client: httpx.AsyncClient, services: Services, org: Org
) -> None:
    first = await follow(admin, await create_key(admin, org, "to rotate"))
    old = found(KEY, first)
    old_id = first.url.path.split("/")[-2]
    rotate = screen(org, f"/keys/{old_id}/rotate")
    token = await page_csrf(admin, rotate)
    answer = await admin.post(rotate, data={"csrf_token": token, "grace_hours": "2"})
    assert answer.status_code == 303
    shown = await follow(admin, answer)
    new = found(KEY, shown)
    no_secret_in_urls(answer, new, old)
    assert "Key rotated: your new key" in shown.text
    assert "Expiring" in shown.text  # what became of the old key, said beside the new one
    keys_now = await count(services.engine, ApiKey, org)

    for _ in range(2):  # reload, and reload again
        again = await admin.get(answer.headers["location"])
        assert again.status_code == 200
        assert new not in again.text
        assert KEY_GONE in again.text
    assert await count(services.engine, ApiKey, org) == keys_now
    listed = {k["prefix"]: k for k in (await admin.get(f"/api/orgs/{org.id}/api-keys")).json()}
    assert listed[old[:12]]["status"] == "expiring"  # rotated once: still in its grace
    assert listed[old[:12]]["replaced_by"] == listed[new[:12]]["id"]
    assert listed[new[:12]]["status"] == "active"
    for key in (old, new):
        assert (await client.get(AIRCRAFT, headers={"Authorization": f"Bearer {key}"})).is_success


# --- webhooks ------------------------------------------------------------------------------


async def test_a_new_webhooks_secret_is_shown_once_and_a_reload_adds_none(
    admin: httpx.AsyncClient, services: Services, org: Org
) -> None:
    made = await create_hook(admin, org)
    assert made.status_code == 303
    view = made.headers["location"]
    assert re.fullmatch(rf"/settings/{org.id}/webhooks/[0-9a-f-]{{36}}/shown", view)
    first = await follow(admin, made)
    secret = found(SECRET, first)
    no_secret_in_urls(made, secret)
    assert deletes_cookie(first, view)
    assert 'id="secret-whsec"' in first.text
    assert "It will not be shown again" in first.text

    again = await admin.get(view)
    assert again.status_code == 200
    assert again.headers["cache-control"] == "no-store"
    assert secret not in again.text
    assert SECRET_GONE in again.text
    assert f'href="{view.removesuffix("/shown")}/rotate-secret"' in again.text
    assert await count(services.engine, Subscription, org) == 1
    sub_id = uuid.UUID(view.split("/")[-2])
    current, _, _ = await stored_secrets(services.engine, services.secret_box, sub_id)
    assert current == secret


async def test_a_secret_rotation_is_shown_once_and_a_reload_rotates_nothing(
    admin: httpx.AsyncClient, services: Services, org: Org, clock: FakeClock
) -> None:
    made = await create_hook(admin, org)
    original = found(SECRET, await follow(admin, made))
    sub_id = uuid.UUID(made.headers["location"].split("/")[-2])
    rotate = screen(org, f"/webhooks/{sub_id}/rotate-secret")
    token = await page_csrf(admin, rotate)
    answer = await admin.post(rotate, data={"csrf_token": token, "grace_hours": "2"})
    shown = await follow(admin, answer)
    new = found(SECRET, shown)
    no_secret_in_urls(answer, new, original)
    assert "new signing secret" in shown.text
    assert "The previous secret also signs" in shown.text

    for _ in range(2):
        again = await admin.get(answer.headers["location"])
        assert again.status_code == 200
        assert new not in again.text
        assert original not in again.text
        assert SECRET_GONE in again.text
    # One rotation: the shown secret is the current one, and the original still signs in
    # its grace (a second rotation would have made `new` the previous and dropped it).
    current, previous, until = await stored_secrets(services.engine, services.secret_box, sub_id)
    assert (current, previous) == (new, original)
    assert until is not None
    assert until.replace(tzinfo=clock.now().tzinfo) > clock.now()


# --- two-factor recovery codes ---------------------------------------------------------------


async def test_recovery_codes_are_shown_once_after_turning_two_factor_on(
    admin: httpx.AsyncClient, clock: FakeClock
) -> None:
    page = "/settings/two-factor"
    token = await page_csrf(admin, page)
    assert (await admin.post(f"{page}/setup", data={"csrf_token": token})).status_code == 303
    pending = await admin.get(page)
    secret = found(re.compile(r'id="setup-key" class="mono" readonly value="([A-Z2-7]+)"'), pending)
    code = pyotp.TOTP(secret).at(clock.now())
    answer = await admin.post(
        f"{page}/confirm", data={"csrf_token": csrf_in(pending.text), "code": code}
    )
    assert answer.status_code == 303
    assert answer.headers["location"] == f"{page}/recovery-codes"
    shown = await follow(admin, answer)
    codes = CODES.findall(shown.text)
    assert len(codes) == 10
    no_secret_in_urls(answer, *codes)
    assert deletes_cookie(shown, f"{page}/recovery-codes")

    again = await admin.get(f"{page}/recovery-codes")
    assert again.status_code == 200
    assert again.headers["cache-control"] == "no-store"
    assert not any(c in again.text for c in codes)
    assert CODES_GONE in again.text
    on = await admin.get(page)
    assert "Recovery codes left: <strong>10</strong>" in on.text
    # Turning it off redirects too (a reload of its answer repeats nothing).
    clock.advance(seconds=60)
    code = pyotp.TOTP(secret).at(clock.now())
    off = await admin.post(f"{page}/off", data={"csrf_token": csrf_in(on.text), "code": code})
    assert off.status_code == 303
    assert off.headers["location"] == f"{page}?done=off"


async def test_the_security_form_redirects(admin: httpx.AsyncClient, org: Org) -> None:
    security = screen(org, "/security")
    token = await page_csrf(admin, security)
    saved = await admin.post(security, data={"csrf_token": token})
    assert saved.status_code == 303
    assert saved.headers["location"] == security


async def test_the_recovery_codes_view_shows_nothing_when_nothing_was_handed_over(
    admin: httpx.AsyncClient,
) -> None:
    page = await admin.get("/settings/two-factor/recovery-codes")
    assert page.status_code == 200
    assert CODES_GONE in page.text
    assert CODES.search(page.text) is None


# --- whose cookie, and which view ----------------------------------------------------------


async def test_another_session_of_the_same_admin_sees_nothing(
    admin: httpx.AsyncClient, services: Services, org: Org
) -> None:
    """A cookie copied to another session (the same person, elsewhere) shows nothing: it is
    bound to the session that acted."""
    made = await create_key(admin, org)
    view = made.headers["location"]
    value, _ = cookie_of(made)
    user = (await admin.get("/api/session")).json()["user"]["id"]
    async with signed_in_as(services, uuid.UUID(user)) as elsewhere:
        stolen = await carrying(elsewhere, view, value)
        assert stolen.status_code == 200
        assert KEY.search(stolen.text) is None
        assert KEY_GONE in stolen.text
    # Nor is the cookie spent by that: the session that acted still sees its key once.
    assert KEY.search((await follow(admin, made)).text) is not None


async def test_the_other_organizations_admin_gets_nothing(
    admin: httpx.AsyncClient, outsider: httpx.AsyncClient, org: Org, other: Org
) -> None:
    made = await create_hook(admin, org)
    view = made.headers["location"]
    value, _ = cookie_of(made)
    sub_id = view.split("/")[-2]
    for path in (view, f"/settings/{other.id}/webhooks/{sub_id}/shown"):
        refused = await carrying(outsider, path, value)
        assert refused.status_code == 404, path
        assert SECRET.search(refused.text) is None
    made = await create_key(admin, org)
    value, _ = cookie_of(made)
    refused = await carrying(outsider, made.headers["location"], value)
    assert refused.status_code == 404
    assert KEY.search(refused.text) is None


async def test_a_cookie_moved_to_another_view_shows_nothing(
    admin: httpx.AsyncClient, org: Org
) -> None:
    """The view's path is sealed with the secret: one key's cookie on another key's view
    (or a webhook's) shows nothing."""
    first, second = await create_key(admin, org, "one"), await create_key(admin, org, "two")
    value, _ = cookie_of(first)
    moved = await carrying(admin, second.headers["location"], value)
    assert KEY.search(moved.text) is None
    assert KEY_GONE in moved.text


async def test_a_stale_cookie_shows_nothing(
    admin: httpx.AsyncClient, org: Org, clock: FakeClock
) -> None:
    made = await create_key(admin, org)
    clock.advance(minutes=5)
    late = await follow(admin, made)
    assert KEY.search(late.text) is None
    assert KEY_GONE in late.text


async def session_id(services: Services, browser: httpx.AsyncClient) -> uuid.UUID:
    """The id of `browser`'s session, as the one-time cookie binds it."""
    digest = token_digest(browser.cookies[sessions.COOKIE])
    async with services.engine.connect() as conn:
        query = select(UserSession.id).where(UserSession.token_hash == digest)
        found: uuid.UUID = (await conn.execute(query)).scalar_one()
    return found


def _sealed(services: Services, held: object) -> str:
    return shown_once.box(services).seal(json.dumps(held))


HOSTILE: list[Callable[[Services, str, str], str]] = [
    lambda s, view, session: "not-sealed",
    lambda s, view, session: "x" * 3000,
    lambda s, view, session: "gAAAAAB" + "A" * 120,  # shaped like a token, opened by nothing
    # Sealed with the right key, but not what hand_over seals:
    lambda s, view, session: _sealed(s, ["a", "list"]),
    lambda s, view, session: _sealed(s, {"session": session, "view": view, "until": "later"}),
    lambda s, view, session: _sealed(
        s, {"session": session, "view": view, "until": 9e12, "secret": "not a dict"}
    ),
    lambda s, view, session: _sealed(
        s, {"session": session, "view": view, "until": 9e12, "secret": {"key": 42}}
    ),
    # With the webhooks' own box: a different purpose, a different key.
    lambda s, view, session: s.secret_box.seal(
        json.dumps({"session": session, "view": view, "until": 9e12, "secret": {"key": "k"}})
    ),
]


async def test_the_view_shows_what_its_cookie_holds_and_only_that(
    admin: httpx.AsyncClient, services: Services, org: Org
) -> None:
    """The control for the tests above and below: the key comes from the cookie alone, and a
    cookie set as they set theirs reaches the view."""
    made = await create_key(admin, org)
    value, _ = cookie_of(made)
    view = made.headers["location"]
    admin.cookies.delete(COOKIE)
    assert KEY_GONE in (await admin.get(view)).text
    assert KEY.search((await carrying(admin, view, value)).text) is not None
    held = {"key": "svc_pk_" + "A" * 43}
    sealed = _sealed(
        services,
        {
            "session": str(await session_id(services, admin)),
            "view": view,
            "until": 9e12,
            "secret": held,
        },
    )
    assert found(KEY, await carrying(admin, view, sealed)) == held["key"]


@pytest.mark.parametrize("forge", HOSTILE)
async def test_a_forged_cookie_shows_nothing_and_never_fails(
    admin: httpx.AsyncClient,
    services: Services,
    org: Org,
    forge: Callable[[Services, str, str], str],
) -> None:
    made = await follow(admin, await create_key(admin, org))
    view = made.url.path
    forged = forge(services, view, str(await session_id(services, admin)))
    page = await carrying(admin, view, forged)
    assert page.status_code == 200
    assert KEY.search(page.text) is None
    assert KEY_GONE in page.text
    codes = await carrying(admin, "/settings/two-factor/recovery-codes", forged)
    assert codes.status_code == 200
    assert CODES_GONE in codes.text


@pytest.mark.parametrize(
    "rest",
    [
        "/keys/not-an-id/shown",
        "/webhooks/not-an-id/shown",
        "/keys/0195f3a0-0000-7000-8000-000000000000/shown",
    ],
)
async def test_a_view_of_nothing_is_404(admin: httpx.AsyncClient, org: Org, rest: str) -> None:
    page = await admin.get(screen(org, rest))
    assert page.status_code == 404
    assert page.headers["cache-control"] == "no-store"


# --- every action of the screens answers with a redirect -----------------------------------


async def test_no_failed_form_hands_a_secret_over(admin: httpx.AsyncClient, org: Org) -> None:
    """A refused form is shown again with its errors (a reload repeats nothing, since nothing
    was done), and sets no one-time cookie."""
    token = await page_csrf(admin, screen(org, "/keys/new"))
    refused = await admin.post(screen(org, "/keys/new"), data={"csrf_token": token, "name": "x"})
    assert refused.status_code == 422
    assert not refused.headers.get_list("set-cookie")
    token = await page_csrf(admin, screen(org, "/webhooks/new"))
    refused = await admin.post(
        screen(org, "/webhooks/new"),
        data={"csrf_token": token, "name": "x", "url": "http://x", "events": ["*"]},
    )
    assert refused.status_code == 422
    assert not refused.headers.get_list("set-cookie")


# Every form of the screens, and where a test proves that its success answers 303 (so a
# reload repeats nothing); a refusal shows the form again with its errors, which repeats
# nothing either. A new form fails the test below until it is placed here.
REDIRECTING_FORMS = {
    "/login": "tests/web/test_access.py, tests/sessions/test_two_factor.py",
    "/login/two-factor": "tests/sessions/test_two_factor.py",
    "/logout": "tests/web/test_access.py",
    "/invitations/{token}/password": "tests/web/test_invitations.py",
    "/invitations/{token}/accept": "tests/web/test_invitations.py",
    "/password-reset/{token}": "tests/recovery/test_password_reset.py, test_two_factor.py",
    "/settings/two-factor/setup": "test_recovery_codes_are_shown_once_...",
    "/settings/two-factor/confirm": "test_recovery_codes_are_shown_once_...",
    "/settings/two-factor/off": "test_recovery_codes_are_shown_once_...",
    "/settings/{org_id}/security": "test_the_security_form_redirects",
    "/settings/{org_id}/keys/new": "test_a_new_key_is_shown_once_...",
    "/settings/{org_id}/keys/{key_id}/rotate": "test_a_rotation_is_shown_once_...",
    "/settings/{org_id}/keys/{key_id}/revoke": "tests/web/test_forms.py",
    "/settings/{org_id}/webhooks/new": "test_a_new_webhooks_secret_is_shown_once_...",
    "/settings/{org_id}/webhooks/{sub_id}/edit": "tests/web/test_forms.py",
    "/settings/{org_id}/webhooks/{sub_id}/delete": "tests/web/test_forms.py",
    "/settings/{org_id}/webhooks/{sub_id}/rotate-secret": "test_a_secret_rotation_is_...",
    "/settings/{org_id}/webhooks/{sub_id}/enable": "tests/web/test_forms.py",
    "/settings/{org_id}/webhooks/{sub_id}/test": "tests/webhooks/test_test_any_event.py",
    "/settings/{org_id}/webhooks/{sub_id}/deliveries/{delivery_id}/redeliver": (
        "tests/webhooks/test_redeliver.py"
    ),
    "/settings/{org_id}/webhooks/{sub_id}/recover": "tests/web/test_recover_screen.py",
}


def test_every_form_of_the_screens_is_one_that_redirects(services: Services) -> None:
    posted = {
        path
        for path, route in api_routes(create_app(services).routes)
        if isinstance(route, PageRoute) and "POST" in (route.methods or ())
    }
    assert posted == set(REDIRECTING_FORMS)
