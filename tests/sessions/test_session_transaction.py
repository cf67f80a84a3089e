"""The signed-in session is looked up (its idle window slid, an expired row deleted) in a short
transaction of its own, committed before the action's transaction begins: what the action
then does, refuses or rolls back changes nothing about the session."""

from __future__ import annotations

import sqlite3
import uuid
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from hangar.auth import sessions
from hangar.auth.models import UserSession
from hangar.db.engine import make_engine
from hangar.foundation.crypto import token_digest
from hangar.keys import service as key_service
from hangar.kit.container import Services
from tests.fixtures.clients import session_for, signed_in_as
from tests.fixtures.environment import PG_URL
from tests.fixtures.factories import Org
from tests.fixtures.fakes import FakeClock
from tests.fixtures.invites import browser


async def last_seen(engine: AsyncEngine, token: str) -> Any:
    digest = token_digest(token)
    async with engine.connect() as conn:
        query = select(UserSession.last_seen_at).where(UserSession.token_hash == digest)
        return (await conn.execute(query)).scalar_one_or_none()


async def revoked_key(org: Org, admin: httpx.AsyncClient) -> str:
    created = await admin.post(
        f"/api/orgs/{org.id}/api-keys", json={"name": "gone", "scopes": ["read:aircraft"]}
    )
    key_id: str = created.json()["id"]
    assert (await admin.post(f"/api/orgs/{org.id}/api-keys/{key_id}/revoke")).status_code == 200
    return key_id


@pytest.mark.parametrize(
    ("role", "request_of", "status"),
    [
        ("admin", lambda o, k: ("POST", f"/api/orgs/{o}/api-keys/{uuid.uuid4()}/rotate", {}), 404),
        ("admin", lambda o, k: ("POST", f"/api/orgs/{o}/api-keys/{k}/rotate", {}), 409),
        (
            "admin",
            lambda o, k: ("POST", f"/api/orgs/{o}/api-keys", {"json": {"name": "x"}}),
            422,
        ),
        ("admin", lambda o, k: ("PATCH", f"/api/orgs/{o}/webhooks/{k}", {"json": {}}), 404),
        ("instructor", lambda o, k: ("GET", f"/api/orgs/{o}/api-keys", {}), 403),
        ("admin", lambda o, k: ("GET", f"/settings/{o}/keys/{k}/rotate", {}), 200),
        ("admin", lambda o, k: ("GET", f"/settings/{o}/webhooks/{k}/edit", {}), 404),
    ],
)
async def test_a_refused_request_still_slides_the_idle_window(
    services: Services,
    org: Org,
    other: Org,
    clock: FakeClock,
    role: str,
    request_of: Any,
    status: int,
) -> None:
    user_id = org.admin_id if role == "admin" else await org.member(role)
    async with signed_in_as(services, org.admin_id) as admin:
        key_id = await revoked_key(org, admin)
    token, csrf = await session_for(services, user_id)
    clock.advance(hours=1)
    method, path, extra = request_of(org.id, key_id)
    async with browser(services) as caller:
        caller.cookies.set(sessions.COOKIE, token, domain="hangar.example")
        caller.headers["X-CSRF-Token"] = csrf
        response = await caller.request(method, path, **extra)
    assert response.status_code == status, response.text
    assert await last_seen(services.engine, token) == clock.now()


async def test_a_json_401_for_an_expired_session_deletes_its_row(
    services: Services, org: Org, other: Org, clock: FakeClock
) -> None:
    token, csrf = await session_for(services, org.admin_id)
    clock.advance(hours=2, minutes=1)
    async with browser(services) as client:
        client.cookies.set(sessions.COOKIE, token, domain="hangar.example")
        response = await client.post(
            f"/api/orgs/{org.id}/api-keys",
            json={"name": "late", "scopes": ["read:aircraft"]},
            headers={"X-CSRF-Token": csrf},
        )
    assert response.status_code == 401
    assert response.json()["code"] == "UNAUTHORIZED"
    digest = token_digest(token)
    async with services.engine.connect() as conn:
        found = await conn.scalar(select(UserSession.id).where(UserSession.token_hash == digest))
    assert found is None


async def test_an_invalid_sign_in_body_is_422_while_the_database_is_down(
    services: Services, tmp_path: Path
) -> None:
    dead = make_engine(f"sqlite:///{tmp_path / 'gone' / 'hangar.db'}")
    try:
        async with browser(replace(services, engine=dead)) as client:
            invalid = await client.post("/api/session", json={"email": "a@example.org"})
            valid = await client.post(
                "/api/session", json={"email": "a@example.org", "password": "whatever"}
            )
    finally:
        await dead.dispose()
    assert invalid.status_code == 422
    assert invalid.json()["code"] == "VALIDATION_ERROR"
    assert valid.status_code == 503


@pytest.mark.skipif(bool(PG_URL), reason="SQLite's one writer: PostgreSQL locks rows")
async def test_on_sqlite_a_session_touch_does_not_hold_the_write_lock_for_the_request(
    services: Services, org: Org, other: Org, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = services.settings.database_url.removeprefix("sqlite:///")
    probed: list[str] = []
    list_keys = key_service.list_keys

    async def list_then_probe(conn: AsyncConnection, *args: Any, **kwargs: Any) -> Any:
        # Mid-request, after the touch: another writer gets the lock at once.
        other_writer = sqlite3.connect(path, timeout=0, isolation_level=None)
        try:
            other_writer.execute("BEGIN IMMEDIATE")
            other_writer.execute("ROLLBACK")
            probed.append("free")
        except sqlite3.OperationalError as exc:
            probed.append(str(exc))
        finally:
            other_writer.close()
        return await list_keys(conn, *args, **kwargs)

    monkeypatch.setattr(key_service, "list_keys", list_then_probe)
    async with signed_in_as(services, org.admin_id) as admin:
        clock.advance(seconds=sessions.TOUCH_EVERY.total_seconds() + 1)
        listed = await admin.get(f"/api/orgs/{org.id}/api-keys")
        clock.advance(seconds=sessions.TOUCH_EVERY.total_seconds() + 1)
        page = await admin.get(f"/settings/{org.id}/keys")
    assert listed.status_code == 200
    assert page.status_code == 200
    assert probed == ["free", "free"]
