"""Credentials: prefix look-alikes, timing, revocation across processes, the end of a
rotation grace window, session fixation, CSRF on every unsafe route, sign-in throttling.

tests/auth and tests/sessions already cover the basics (401 shapes, revocation in one
process, a rotation window to the second, CSRF on sign-out and webhooks, ten failures then
429); these tests go further.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import statistics
import time
import uuid
from datetime import timedelta
from pathlib import Path

import httpx
import pytest
from scripts.scratch import two_servers
from sqlalchemy import select

from hangar.app import create_app
from hangar.audit.service import Who
from hangar.auth import sessions
from hangar.foundation.crypto import token_digest
from hangar.keys.authentication import MISSING, KeyAuthenticator
from hangar.keys.key_format import KEY_PREFIX, STORED_PREFIX_LENGTH
from hangar.keys.models import ApiKey
from hangar.keys.service import Rotation, rotate
from hangar.kit.container import Services
from hangar.kit.errors import ApiError
from hangar.kit.scopes import SCOPES
from tests.fixtures.clients import session_for
from tests.fixtures.environment import PASSWORD, PG_URL, REDIS_URL, SECRET
from tests.fixtures.external import API, READS
from tests.fixtures.factories import Org
from tests.fixtures.fakes import FakeClock
from tests.fixtures.routes import app_routes

FEED = f"{API}/reservations.ics"
OPERATIONS = [*READS, FEED]
ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"


def ADMIN(user_id: uuid.UUID) -> Who:
    return Who.person(user_id, "admin@example.org", None)


async def call(client: httpx.AsyncClient, path: str, key: str) -> httpx.Response:
    if path == FEED:
        return await client.get(path, params={"token": key})
    return await client.get(path, headers={"Authorization": f"Bearer {key}"})


def look_alike(key: str) -> str:
    """Same stored prefix (first 12 characters), every later character different."""
    rest = "".join(ALPHABET[(ALPHABET.index(c) + 1) % len(ALPHABET)] for c in key[12:])
    return key[:STORED_PREFIX_LENGTH] + rest


def assert_401(response: httpx.Response) -> None:
    assert response.status_code == 401, response.text
    assert response.json() == {
        "detail": "The API key is invalid or revoked",
        "code": "UNAUTHORIZED",
    }


# --- keys found by prefix never authenticate ---------------------------------------------


async def test_a_key_sharing_only_the_stored_prefix_is_401_everywhere(
    client: httpx.AsyncClient, org: Org
) -> None:
    for path in OPERATIONS:
        assert (await call(client, path, org.key)).status_code == 200, path
    for variant in (
        look_alike(org.key),
        org.key[:-1] + ("A" if org.key[-1] != "A" else "B"),  # only the last character
        org.key[:STORED_PREFIX_LENGTH] + org.key[STORED_PREFIX_LENGTH:][::-1],
    ):
        assert variant != org.key
        assert variant[:STORED_PREFIX_LENGTH] == org.key[:STORED_PREFIX_LENGTH]
        for path in OPERATIONS:
            assert_401(await call(client, path, variant))


async def test_the_stored_prefix_and_hash_are_not_keys(client: httpx.AsyncClient, org: Org) -> None:
    async with org.engine.connect() as conn:
        row = (
            await conn.execute(
                select(ApiKey.prefix, ApiKey.key_hash).where(
                    ApiKey.key_hash == token_digest(org.key)
                )
            )
        ).one()
    padded = row.prefix + "A" * (len(org.key) - len(row.prefix))
    for candidate in (row.prefix, row.key_hash, padded, KEY_PREFIX + row.key_hash[:43]):
        for path in OPERATIONS:
            assert (await call(client, path, candidate)).status_code == 401


# --- timing ----------------------------------------------------------------------------------


async def test_a_wrong_key_and_a_right_prefix_with_a_wrong_rest_take_the_same_time(
    services: Services, org: Org
) -> None:
    """Measured on the authentication function itself, interleaved, medians compared."""
    authenticator = KeyAuthenticator(services)
    near = look_alike(org.key)

    async def timed(key: str) -> float:
        started = time.perf_counter()
        with contextlib.suppress(ApiError):
            await authenticator.authenticate(key, "read:aircraft", missing=MISSING)
        return time.perf_counter() - started

    for _ in range(20):  # warm the pool and caches
        await timed(near)
        await timed(KEY_PREFIX + secrets.token_urlsafe(32))
    wrong: list[float] = []
    prefix: list[float] = []
    for i in range(400):
        random_key = KEY_PREFIX + secrets.token_urlsafe(32)
        pair = [(wrong, random_key), (prefix, near)]
        for bucket, key in pair if i % 2 else reversed(pair):
            bucket.append(await timed(key))
    m_wrong, m_prefix = statistics.median(wrong), statistics.median(prefix)
    # Both are one hash and one indexed miss. A prefix-then-compare lookup would add a
    # row fetch and a comparison; a generous bound keeps a busy machine from flaking.
    assert abs(m_wrong - m_prefix) < max(0.25 * max(m_wrong, m_prefix), 0.0005), (
        m_wrong,
        m_prefix,
    )


# --- the end of a rotation grace window, to the microsecond --------------------------------


async def test_a_rotated_key_is_401_the_instant_its_grace_window_ends(
    client: httpx.AsyncClient, org: Org, clock: FakeClock
) -> None:
    old = await org.key_with(*SCOPES)
    async with org.engine.begin() as conn:
        old_id = await conn.scalar(select(ApiKey.id).where(ApiKey.key_hash == token_digest(old)))
        assert old_id is not None
        rotated = await rotate(
            conn, org.id, ADMIN(org.admin_id), old_id, Rotation(grace_hours=1), clock.now()
        )
    new = rotated["new"]["key"]
    end = clock.now() + timedelta(hours=1)

    clock.set(end - timedelta(microseconds=1))
    for path in OPERATIONS:
        assert (await call(client, path, old)).status_code == 200, path
    clock.set(end)
    for path in OPERATIONS:
        assert_401(await call(client, path, old))
        assert (await call(client, path, new)).status_code == 200
    clock.set(end + timedelta(days=365))
    for path in OPERATIONS:
        assert_401(await call(client, path, old))


async def test_a_rotation_with_no_grace_ends_the_old_key_at_once(
    client: httpx.AsyncClient, org: Org, clock: FakeClock
) -> None:
    old = await org.key_with("read:aircraft")
    async with org.engine.begin() as conn:
        old_id = await conn.scalar(select(ApiKey.id).where(ApiKey.key_hash == token_digest(old)))
        assert old_id is not None
        await rotate(
            conn, org.id, ADMIN(org.admin_id), old_id, Rotation(grace_hours=0), clock.now()
        )
    assert_401(await call(client, f"{API}/aircraft", old))


# --- revocation across two server processes sharing PostgreSQL ----------------------------


def revocation_env(database_url: str) -> dict[str, str]:
    """The two servers' settings: this run's database, and its Redis when it has one."""
    env = {
        **os.environ,
        "HANGAR_DATABASE_URL": database_url,
        "HANGAR_SECRET_KEY": SECRET,
        "HANGAR_PUBLIC_URL": "http://127.0.0.1:8000",
        "HANGAR_REDIS_PREFIX": f"hangar-test-{uuid.uuid4().hex[:8]}",
    }
    if REDIS_URL:
        env["HANGAR_REDIS_URL"] = REDIS_URL
    return env


async def test_revocation_is_immediate_across_two_server_processes(
    services: Services, org: Org, database_url: str, tmp_path: Path
) -> None:
    if not PG_URL:
        pytest.skip("needs PostgreSQL (HANGAR_TEST_DATABASE_URL): two processes share it")
    email = f"revoker-{uuid.uuid4().hex[:8]}@example.org"
    await org.member("admin", email=email, password=PASSWORD)
    victim = await org.key_with(*SCOPES)
    async with org.engine.connect() as conn:
        key_id = await conn.scalar(select(ApiKey.id).where(ApiKey.key_hash == token_digest(victim)))
    async with (
        two_servers(revocation_env(database_url), tmp_path / "serve.log") as (first, second),
        httpx.AsyncClient(base_url=first, timeout=10) as a,
        httpx.AsyncClient(base_url=second, timeout=10) as b,
    ):
        for server in (a, b):  # both have seen (and may have cached) the key
            for path in OPERATIONS:
                assert (await call(server, path, victim)).status_code == 200, path
        signed = await a.post("/api/session", json={"email": email, "password": PASSWORD})
        assert signed.status_code == 200, signed.text
        revoked = await a.post(
            f"/api/orgs/{org.id}/api-keys/{key_id}/revoke",
            headers={"X-CSRF-Token": signed.json()["csrf_token"]},
        )
        assert revoked.status_code == 200, revoked.text
        assert revoked.json()["status"] == "revoked"
        # The very next request, on either process, is refused.
        for server in (b, a):
            for path in OPERATIONS:
                assert_401(await call(server, path, victim))


# --- session fixation ------------------------------------------------------------------------


async def sign_in(
    client: httpx.AsyncClient, email: str, password: str = PASSWORD
) -> httpx.Response:
    return await client.post("/api/session", json={"email": email, "password": password})


@pytest.fixture
async def victim_email(org: Org) -> str:
    email = f"victim-{uuid.uuid4().hex[:8]}@example.org"
    await org.member("admin", email=email, password=PASSWORD)
    return email


def fresh_client(services: Services) -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=create_app(services), raise_app_exceptions=False)
    return httpx.AsyncClient(transport=transport, base_url="https://hangar.example")


async def test_a_session_id_planted_before_sign_in_is_not_kept(
    services: Services, org: Org, victim_email: str
) -> None:
    planted = secrets.token_urlsafe(32)
    async with fresh_client(services) as browser:
        browser.cookies.set(sessions.COOKIE, planted, domain="hangar.example")
        signed = await sign_in(browser, victim_email)
        assert signed.status_code == 200
        issued = signed.cookies[sessions.COOKIE]
        assert issued != planted
    async with fresh_client(services) as attacker:
        attacker.cookies.set(sessions.COOKIE, planted, domain="hangar.example")
        assert (await attacker.get("/api/session")).status_code == 401


async def test_an_attackers_live_session_planted_in_a_browser_stays_the_attackers(
    services: Services, org: Org, other: Org, victim_email: str
) -> None:
    # The attacker holds a real session of their own (admin of another organization)...
    attacker_token, _ = await session_for(services, other.admin_id)
    async with fresh_client(services) as browser:
        browser.cookies.set(sessions.COOKIE, attacker_token, domain="hangar.example")
        signed = await sign_in(browser, victim_email)  # ...the victim signs in over it
        assert signed.cookies[sessions.COOKIE] != attacker_token
    async with fresh_client(services) as attacker:
        attacker.cookies.set(sessions.COOKIE, attacker_token, domain="hangar.example")
        me = await attacker.get("/api/session")
        assert me.status_code == 200
        assert me.json()["user"]["email"] != victim_email  # never upgraded to the victim
        assert [m["org_id"] for m in me.json()["memberships"]] == [str(other.id)]
        assert (await attacker.get(f"/api/orgs/{org.id}/api-keys")).status_code == 404


# --- CSRF on every unsafe session route ---------------------------------------------------------


def unsafe_routes(services: Services) -> list[tuple[str, str]]:
    routes: list[tuple[str, str]] = []
    for method, path in app_routes(create_app(services).routes):
        if not path.startswith("/api/") or method in ("GET", "HEAD", "OPTIONS"):
            continue
        if (method, path) != ("POST", "/api/session"):  # no session yet: throttled
            routes.append((method, path))
    # Signing out with the right token ends the session the test uses: do it last.
    return sorted(routes, key=lambda r: r == ("DELETE", "/api/session"))


def fill(path: str, org: Org) -> str:
    """The organization's id for {org_id}, a random id for any other path parameter."""
    return "/".join(
        str(org.id) if part == "{org_id}" else str(uuid.uuid4()) if part.startswith("{") else part
        for part in path.split("/")
    )


async def test_every_unsafe_session_route_demands_this_sessions_csrf_token(
    services: Services, org: Org
) -> None:
    unsafe = unsafe_routes(services)
    assert len(unsafe) >= 25, unsafe
    token, csrf = await session_for(services, org.admin_id)
    _, other_csrf = await session_for(services, org.admin_id)  # same user, another session
    async with fresh_client(services) as browser:
        browser.cookies.set(sessions.COOKIE, token, domain="hangar.example")
        for method, path in unsafe:
            url = fill(path, org)
            for headers in ({}, {"X-CSRF-Token": other_csrf}, {"X-CSRF-Token": csrf[:-1]}):
                response = await browser.request(method, url, json={}, headers=headers)
                assert response.status_code == 403, (method, path, response.text)
                assert response.json()["code"] == "CSRF_FAILED"
            # The right token gets past the CSRF check (to whatever the route says next).
            passed = await browser.request(method, url, json={}, headers={"X-CSRF-Token": csrf})
            assert passed.status_code != 403 or passed.json()["code"] != "CSRF_FAILED"
            assert passed.status_code < 500, (method, path, passed.text)


# --- sign-in throttling ------------------------------------------------------------------------


async def test_sign_in_throttle_cannot_be_dodged_by_spelling_the_email_differently(
    services: Services, org: Org, victim_email: str, clock: FakeClock
) -> None:
    spellings = [
        victim_email,
        victim_email.upper(),
        f"  {victim_email}",
        f"{victim_email}\t",
        victim_email.capitalize(),
    ]
    async with fresh_client(services) as guesser:
        for i in range(10):
            guess = await sign_in(guesser, spellings[i % len(spellings)], f"guess {i}")
            assert guess.status_code == 401
        for spelling in spellings:
            refused = await sign_in(guesser, spelling)  # even the right password
            assert refused.status_code == 429, spelling
            assert refused.json()["code"] == "RATE_LIMITED"
            assert "set-cookie" not in refused.headers
        # Another person's sign-in is not locked out by it.
        other_email = f"bystander-{uuid.uuid4().hex[:8]}@example.org"
        await org.member("member", email=other_email, password=PASSWORD)
        assert (await sign_in(guesser, other_email)).status_code == 200
        clock.advance(minutes=15)
        assert (await sign_in(guesser, victim_email)).status_code == 200
