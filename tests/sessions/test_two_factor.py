"""Two-factor sign-in through the session API (interfaces.md §9): enrolment with a code from
the app, the code asked after the password, recovery codes, turning it off, the budgets, and
an organization that requires it of its admins. Codes are made as an authenticator app makes
them (pyotp) at the injected clock's time."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
import pyotp
import pytest
from sqlalchemy import text

from hangar.accounts.service import password_reset
from hangar.app import create_app
from hangar.auth.challenges import CHALLENGE_COOKIE
from hangar.kit.container import Services
from tests.fixtures.factories import Org
from tests.fixtures.fakes import FakeClock
from tests.fixtures.pages import csrf_in, login_form, password_form
from tests.fixtures.sign_ins import PASSWORD

ENROL = "/api/session/two-factor"


@asynccontextmanager
async def browser(services: Services) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=create_app(services), raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="https://hangar.example") as c:
        yield c


async def signed_in(c: httpx.AsyncClient, email: str) -> httpx.Response:
    answer = await c.post("/api/session", json={"email": email, "password": PASSWORD})
    if answer.status_code == 200:
        c.headers["X-CSRF-Token"] = answer.json()["csrf_token"]
    return answer


async def enrolled(c: httpx.AsyncClient, clock: FakeClock) -> tuple[pyotp.TOTP, list[str]]:
    """Two-factor sign-in turned on for `c`'s account: its app, and its recovery codes. The
    clock moves on two steps, so the step before now's has no code used yet."""
    made = await c.post(ENROL)
    assert made.status_code == 200, made.text
    body = made.json()
    assert set(body) == {"secret", "otpauth_uri", "qr_svg"}
    app = pyotp.TOTP(body["secret"])
    confirmed = await c.post(f"{ENROL}/confirm", json={"code": app.at(clock.now())})
    assert confirmed.status_code == 200, confirmed.text
    clock.advance(seconds=60)
    return app, confirmed.json()["recovery_codes"]


async def turned_on(
    services: Services, email: str, clock: FakeClock
) -> tuple[pyotp.TOTP, list[str]]:
    """Two-factor sign-in turned on for `email`'s account, in a browser of its own."""
    async with browser(services) as c:
        await signed_in(c, email)
        return await enrolled(c, clock)


@pytest.fixture
async def person(org: Org, other: Org) -> str:
    email = f"pilot-{org.id.hex[-12:]}@example.org"
    await org.member("admin", email=email, password=PASSWORD)
    return email


async def test_enrolment_shows_a_secret_a_uri_and_a_qr_code_and_needs_a_first_code(
    services: Services, person: str, clock: FakeClock
) -> None:
    async with browser(services) as c:
        assert (await signed_in(c, person)).status_code == 200
        body = (await c.post(ENROL)).json()
        assert re.fullmatch(r"[A-Z2-7]{32}", body["secret"])
        uri = pyotp.parse_uri(body["otpauth_uri"])
        assert isinstance(uri, pyotp.TOTP)
        assert (uri.secret, uri.digits, uri.interval, uri.issuer) == (
            body["secret"],
            6,
            30,
            "hangar",
        )
        assert uri.name == person
        assert body["qr_svg"].startswith("<svg")
        assert "<title>" in body["qr_svg"]
        app = pyotp.TOTP(body["secret"])
        # Not on until confirmed: signing in still takes the password alone.
        async with browser(services) as again:
            assert (await signed_in(again, person)).status_code == 200
        wrong = await c.post(f"{ENROL}/confirm", json={"code": "000000"})
        assert (wrong.status_code, wrong.json()["code"]) == (422, "INVALID_TWO_FACTOR_CODE")
        confirmed = await c.post(f"{ENROL}/confirm", json={"code": app.at(clock.now())})
        assert confirmed.status_code == 200
        codes = confirmed.json()["recovery_codes"]
        assert len(codes) == len(set(codes)) == 10
        assert all(re.fullmatch(r"[a-z2-7]{4}(-[a-z2-7]{4}){3}", code) for code in codes)
        again_enrol = await c.post(ENROL)
        assert (again_enrol.status_code, again_enrol.json()["code"]) == (409, "TWO_FACTOR_ENABLED")
    # Sealed: the database holds neither the secret nor a recovery code.
    stored = []
    async with services.engine.connect() as conn:
        for table in ("two_factor", "recovery_codes"):
            rows = await conn.execute(text(f"SELECT * FROM {table}"))  # noqa: S608
            stored += [str(value) for row in rows for value in row]
    stored_text = " ".join(stored)
    assert body["secret"] not in stored_text
    assert not any(c in stored_text or c.replace("-", "") in stored_text for c in codes)


async def test_the_code_comes_after_the_password_and_is_never_used_twice(
    services: Services, person: str, clock: FakeClock, org: Org
) -> None:
    app, _ = await turned_on(services, person, clock)
    async with browser(services) as c:
        asked = await signed_in(c, person)
        assert (asked.status_code, asked.json()["code"]) == (401, "TWO_FACTOR_REQUIRED")
        assert "hangar_session" not in asked.headers.get("set-cookie", "")
        assert CHALLENGE_COOKIE in c.cookies
        # No session yet: the challenge is not one.
        assert (await c.get("/api/session")).status_code == 401
        wrong = await c.post(f"{ENROL}/verify", json={"code": "123456"})
        assert (wrong.status_code, wrong.json()["code"]) == (401, "INVALID_TWO_FACTOR_CODE")
        # A code of the step before (a phone a little behind) is accepted.
        done = await c.post(
            f"{ENROL}/verify", json={"code": app.at(clock.now(), counter_offset=-1)}
        )
        assert done.status_code == 200, done.text
        assert done.json()["memberships"][0]["org_id"] == str(org.id)
        assert (await c.get("/api/session")).status_code == 200
        assert CHALLENGE_COOKIE not in c.cookies
    # The same code again, or an earlier one, in its window: refused. The next step's: not.
    async with browser(services) as c:
        await signed_in(c, person)
        for used in (
            app.at(clock.now(), counter_offset=-1),
            app.at(clock.now(), counter_offset=-2),
        ):
            again = await c.post(f"{ENROL}/verify", json={"code": used})
            assert again.status_code == 401
        assert (
            await c.post(f"{ENROL}/verify", json={"code": app.at(clock.now())})
        ).status_code == 200
    # Two steps ahead is too far, as is two behind.
    async with browser(services) as c:
        await signed_in(c, person)
        far = await c.post(f"{ENROL}/verify", json={"code": app.at(clock.now(), counter_offset=2)})
        assert far.status_code == 401


async def test_a_challenge_lasts_five_minutes_and_serves_one_session(
    services: Services, person: str, clock: FakeClock
) -> None:
    app, _ = await turned_on(services, person, clock)
    async with browser(services) as c:
        assert (
            await c.post(f"{ENROL}/verify", json={"code": app.at(clock.now())})
        ).status_code == 401
        await signed_in(c, person)
        clock.advance(minutes=5)
        late = await c.post(f"{ENROL}/verify", json={"code": app.at(clock.now())})
        assert (late.status_code, late.json()["code"]) == (401, "UNAUTHORIZED")
        clock.advance(seconds=30)
        await signed_in(c, person)
        # One code, two tries at once with the one challenge: one session.
        code = {"code": app.at(clock.now())}
        both = await asyncio.gather(
            c.post(f"{ENROL}/verify", json=code), c.post(f"{ENROL}/verify", json=code)
        )
        assert sorted(r.status_code for r in both) == [200, 401]


async def test_each_recovery_code_signs_in_once(
    services: Services, person: str, clock: FakeClock
) -> None:
    _, codes = await turned_on(services, person, clock)
    for given in (codes[0], codes[1].upper().replace("-", " ")):
        async with browser(services) as c:
            await signed_in(c, person)
            used = await c.post(f"{ENROL}/verify", json={"recovery_code": given})
            assert used.status_code == 200, used.text
    async with browser(services) as c:
        await signed_in(c, person)
        again = await c.post(f"{ENROL}/verify", json={"recovery_code": codes[0]})
        assert again.status_code == 401
        both = await c.post(f"{ENROL}/verify", json={"code": "123456", "recovery_code": codes[2]})
        assert (both.status_code, both.json()["code"]) == (422, "VALIDATION_ERROR")


async def test_wrong_codes_are_budgeted_per_account_before_they_are_checked(
    services: Services, person: str, clock: FakeClock
) -> None:
    app, _ = await turned_on(services, person, clock)
    async with browser(services) as c:
        await signed_in(c, person)
        tries = await asyncio.gather(
            *(c.post(f"{ENROL}/verify", json={"code": f"{n:06d}"}) for n in range(30))
        )
        assert sorted(r.status_code for r in tries).count(401) <= 10
        assert any(r.status_code == 429 and "Retry-After" in r.headers for r in tries)
        # Spent: even the right code waits.
        right = await c.post(f"{ENROL}/verify", json={"code": app.at(clock.now())})
        assert right.status_code == 429
        clock.advance(minutes=15)
        right = await c.post(f"{ENROL}/verify", json={"code": app.at(clock.now())})
        assert right.status_code == 401  # the challenge itself ran out meanwhile
        await signed_in(c, person)
        right = await c.post(f"{ENROL}/verify", json={"code": app.at(clock.now())})
        assert right.status_code == 200


async def test_turning_it_off_takes_a_code(
    services: Services, person: str, clock: FakeClock
) -> None:
    async with browser(services) as c:
        await signed_in(c, person)
        app, codes = await enrolled(c, clock)
        wrong = await c.request("DELETE", ENROL, json={"code": "000000"})
        assert (wrong.status_code, wrong.json()["code"]) == (422, "INVALID_TWO_FACTOR_CODE")
        no_csrf = await c.request(
            "DELETE", ENROL, json={"code": app.at(clock.now())}, headers={"X-CSRF-Token": ""}
        )
        assert no_csrf.status_code == 403
        off = await c.request("DELETE", ENROL, json={"recovery_code": codes[3]})
        assert off.status_code == 204
    async with browser(services) as c:
        assert (await signed_in(c, person)).status_code == 200


async def test_an_organization_can_require_it_of_its_admins(
    services: Services, person: str, clock: FakeClock, org: Org, other: Org
) -> None:
    second = f"second-{org.id.hex[-12:]}@example.org"
    await org.member("admin", email=second, password=PASSWORD)
    mechanic = f"mech-{org.id.hex[-12:]}@example.org"
    await org.member("mechanic", email=mechanic, password=PASSWORD)
    other_admin = f"elsewhere-{other.id.hex[-12:]}@example.org"
    await other.member("admin", email=other_admin, password=PASSWORD)
    settings = f"/api/orgs/{org.id}"
    async with browser(services) as first, browser(services) as c2, browser(services) as c3:
        await signed_in(first, person)
        await signed_in(c2, second)
        # Not without it yourself: it would lock you out.
        refused = await first.patch(settings, json={"require_two_factor": True})
        assert (refused.status_code, refused.json()["code"]) == (409, "TWO_FACTOR_REQUIRED")
        await enrolled(first, clock)
        on = await first.patch(settings, json={"require_two_factor": True})
        assert on.status_code == 200, on.text
        assert set(on.json()) == {"id", "name", "require_two_factor"}
        assert (on.json()["id"], on.json()["require_two_factor"]) == (str(org.id), True)
        # The other admin, still without it, is kept out of Org Settings, told why.
        for path in (f"{settings}/api-keys", f"{settings}/webhooks", settings):
            kept_out = await c2.get(path)
            assert (kept_out.status_code, kept_out.json()["code"]) == (403, "TWO_FACTOR_REQUIRED")
        assert (
            await c2.post(f"{settings}/members", json={"email": "x@example.org", "role": "member"})
        ).status_code == 403
        # ...but is still signed in, and still a member: only Org Settings waits.
        assert (await c2.get("/api/session")).status_code == 200
        # A mechanic is asked nothing; another organization is untouched.
        await signed_in(c3, mechanic)
        assert (await c3.get(f"{settings}/api-keys")).json()["code"] == "FORBIDDEN"
        async with browser(services) as elsewhere:
            await signed_in(elsewhere, other_admin)
            assert (await elsewhere.get(f"/api/orgs/{other.id}/api-keys")).status_code == 200
        # Once the second admin sets it up, they are let in.
        await enrolled(c2, clock)
        assert (await c2.get(f"{settings}/api-keys")).status_code == 200
        off = await c2.patch(settings, json={"require_two_factor": False})
        assert off.json()["require_two_factor"] is False
        bad = await c2.patch(settings, json={"require_two_factor": "yes"})
        assert bad.status_code == 422


async def test_the_sign_in_form_redirects_to_the_code_page(
    services: Services, person: str, clock: FakeClock
) -> None:
    """The right password of an account with two-factor sign-in answers 303 to the code's
    page (issue 42): a reload of that page asks for the code again and sends no password."""
    app, _ = await turned_on(services, person, clock)
    async with browser(services) as c:
        form = await c.get("/login?next=/settings/two-factor")
        filled = login_form(form.text, person, PASSWORD, next="/settings/two-factor")
        asked = await c.post("/login", data=filled)
        assert asked.status_code == 303
        code_page = asked.headers["location"]
        assert code_page == "/login/two-factor?next=%2Fsettings%2Ftwo-factor"
        assert CHALLENGE_COOKIE in c.cookies
        assert "hangar_session" not in c.cookies
        for _ in range(2):  # the page, and its reload
            page = await c.get(code_page)
            assert page.status_code == 200
            assert page.headers["cache-control"] == "no-store"
            assert "Authentication code or recovery code" in page.text
            assert 'name="next" value="/settings/two-factor"' in page.text
        verified = await c.post(
            "/login/two-factor",
            data={
                "csrf_token": csrf_in(page.text),
                "code": app.at(clock.now()),
                "next": "/settings/two-factor",
            },
        )
        assert verified.status_code == 303
        assert verified.headers["location"] == "/settings/two-factor"
        assert (await c.get("/api/session")).status_code == 200
    # No sign-in waiting (never begun, or done): the code's page sends to the password.
    async with browser(services) as c:
        for path, back in [
            ("/login/two-factor", "/login"),
            ("/login/two-factor?next=/settings/x", "/login?next=/settings/x"),
            ("/login/two-factor?next=https://evil.example/", "/login"),
        ]:
            away = await c.get(path)
            assert away.status_code == 303
            assert away.headers["location"] == back


async def test_a_recovery_link_sets_the_password_but_the_code_is_still_asked(
    services: Services, person: str, clock: FakeClock
) -> None:
    """The operator's password-reset link reaches a mailbox: it is no second factor. The
    password it sets takes effect, and the page then asks for the code, as /login does."""
    app, _ = await turned_on(services, person, clock)
    async with services.engine.begin() as conn:
        reset = await password_reset.issue_reset(conn, person, clock.now())
    async with browser(services) as c:
        page = await c.get(f"/password-reset/{reset.token}")
        chosen = await c.post(
            f"/password-reset/{reset.token}", data=password_form(page.text, "a new password")
        )
        # To the code's page (issue 42: a reload asks for the code, it sends nothing again).
        assert chosen.status_code == 303
        assert chosen.headers["location"] == "/login/two-factor?next=%2Fsettings"
        chosen = await c.get(chosen.headers["location"])
        assert chosen.status_code == 200
        assert "Authentication code or recovery code" in chosen.text
        assert "hangar_session" not in c.cookies
        assert (await c.get("/api/session")).status_code == 401
        verified = await c.post(
            "/login/two-factor",
            data={
                "csrf_token": csrf_in(chosen.text),
                "code": app.at(clock.now()),
                "next": "/settings",
            },
        )
        assert verified.status_code == 303
        assert verified.headers["location"] == "/settings"
        assert (await c.get("/api/session")).status_code == 200
    async with browser(services) as c:  # the new password is the one
        answer = await c.post("/api/session", json={"email": person, "password": "a new password"})
        assert answer.json()["code"] == "TWO_FACTOR_REQUIRED"
