"""POST/GET/DELETE /api/session"""

from __future__ import annotations

import httpx
import pytest

from hangar.auth.sessions import COOKIE
from tests.fixtures.factories import Org
from tests.fixtures.fakes import FakeClock

PASSWORD = "correct horse battery"


@pytest.fixture
async def admin_email(org: Org, other: Org) -> str:
    email = f"chief-{org.id.hex[-12:]}@example.org"
    await org.member("admin", email=email, password=PASSWORD)
    return email


async def sign_in(
    client: httpx.AsyncClient, email: str, password: str = PASSWORD
) -> httpx.Response:
    return await client.post("/api/session", json={"email": email, "password": password})


async def test_sign_in_returns_user_csrf_and_memberships(
    client: httpx.AsyncClient, org: Org, admin_email: str
) -> None:
    response = await sign_in(client, admin_email.upper())

    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"user", "csrf_token", "memberships"}
    assert body["user"]["email"] == admin_email
    assert len(body["csrf_token"]) >= 32
    assert body["memberships"] == [
        {
            "org_id": str(org.id),
            "org_name": body["memberships"][0]["org_name"],
            "role_name": "admin",
            "capabilities": [
                "org.settings",
                "members.manage",
                "fleet.manage",
                "maintenance.manage",
                "reservations.manage",
                "reservations.own",
                "squawks.report",
                "squawks.manage",
            ],
        }
    ]
    cookie = response.headers["set-cookie"]
    assert cookie.startswith(f"{COOKIE}=")
    lowered = cookie.lower()
    assert "httponly" in lowered
    assert "samesite=lax" in lowered
    assert "secure" in lowered  # the test service's public URL is https
    assert "path=/" in lowered


@pytest.mark.parametrize("case", ["wrong password", "unknown email"])
async def test_bad_credentials_are_401_with_one_message(
    client: httpx.AsyncClient, admin_email: str, case: str
) -> None:
    email = admin_email if case == "wrong password" else "nobody@example.org"
    response = await sign_in(client, email, "not the password")
    assert response.status_code == 401
    assert response.json() == {"detail": "Wrong email or password", "code": "INVALID_CREDENTIALS"}
    assert "set-cookie" not in response.headers


async def test_every_sign_in_gets_a_new_session(
    client: httpx.AsyncClient, admin_email: str
) -> None:
    first = (await sign_in(client, admin_email)).cookies[COOKIE]
    second = (await sign_in(client, admin_email)).cookies[COOKIE]
    assert first != second


async def test_who_am_i_needs_a_session(client: httpx.AsyncClient, admin_email: str) -> None:
    anonymous = await client.get("/api/session")
    assert anonymous.status_code == 401
    assert anonymous.json()["code"] == "UNAUTHORIZED"

    signed = await sign_in(client, admin_email)
    again = await client.get("/api/session")
    assert again.status_code == 200
    assert again.json()["csrf_token"] == signed.json()["csrf_token"]


async def test_sign_out_needs_csrf_and_ends_the_session_everywhere(
    client: httpx.AsyncClient, admin_email: str
) -> None:
    signed = await sign_in(client, admin_email)
    token = signed.cookies[COOKIE]
    csrf = signed.json()["csrf_token"]

    no_csrf = await client.delete("/api/session")
    assert no_csrf.status_code == 403
    assert no_csrf.json()["code"] == "CSRF_FAILED"
    wrong = await client.delete("/api/session", headers={"X-CSRF-Token": csrf[:-1] + "x"})
    assert wrong.status_code == 403

    out = await client.delete("/api/session", headers={"X-CSRF-Token": csrf})
    assert out.status_code == 204

    # The same cookie, presented by anyone, no longer works.
    client.cookies.set(COOKIE, token, domain="hangar.example")
    assert (await client.get("/api/session")).status_code == 401


async def test_session_expires_when_idle_and_at_its_absolute_end(
    client: httpx.AsyncClient, admin_email: str, clock: FakeClock
) -> None:
    await sign_in(client, admin_email)
    clock.advance(hours=1, minutes=59)
    assert (await client.get("/api/session")).status_code == 200
    clock.advance(hours=1, minutes=59)
    assert (await client.get("/api/session")).status_code == 200
    clock.advance(hours=2)
    assert (await client.get("/api/session")).status_code == 401

    await sign_in(client, admin_email)
    for _ in range(11):
        clock.advance(hours=1)
        assert (await client.get("/api/session")).status_code == 200
    clock.advance(hours=1)
    assert (await client.get("/api/session")).status_code == 401


async def test_repeated_failures_for_one_email_are_throttled(
    client: httpx.AsyncClient, admin_email: str, clock: FakeClock
) -> None:
    for _ in range(10):
        assert (await sign_in(client, admin_email, "guess")).status_code == 401
    throttled = await sign_in(client, admin_email)
    assert throttled.status_code == 429
    assert throttled.json()["code"] == "RATE_LIMITED"
    clock.advance(minutes=15)
    assert (await sign_in(client, admin_email)).status_code == 200


async def test_successful_sign_ins_spend_no_budget(
    client: httpx.AsyncClient, admin_email: str
) -> None:
    for _ in range(12):
        assert (await sign_in(client, admin_email)).status_code == 200
    for _ in range(9):
        assert (await sign_in(client, admin_email, "guess")).status_code == 401
    assert (await sign_in(client, admin_email)).status_code == 200


async def test_keys_and_cookies_do_not_cross_over(
    client: httpx.AsyncClient, org: Org, admin_email: str
) -> None:
    # An API key is no session...
    assert (await client.get("/api/session", headers=org.auth)).status_code == 401
    # ...and a session is no API key.
    await sign_in(client, admin_email)
    response = await client.get("/api/v1/external/aircraft")
    assert response.status_code == 401
    assert response.json()["code"] == "UNAUTHORIZED"


async def test_malformed_sign_in_body_is_422(client: httpx.AsyncClient) -> None:
    response = await client.post("/api/session", json={"email": "a@b.c"})
    assert response.status_code == 422
    body = response.json()
    assert body["code"] == "VALIDATION_ERROR"
    assert body["errors"][0]["loc"] == ["body", "password"]
    garbage = await client.post(
        "/api/session", content=b"\xff{", headers={"content-type": "application/json"}
    )
    assert garbage.status_code == 422
