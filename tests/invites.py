"""Helpers for invitation tests: inviting through the admin's API, clients of people who are
not signed in yet (each its own cookie jar), and what the database holds behind an invitation."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from hangar.app import create_app
from hangar.orgs.invitations import token_hash
from hangar.orgs.models import Invitation, Membership, User
from hangar.services import Services
from tests.factories import Org

BASE_URL = "https://hangar.example"


@asynccontextmanager
async def browser(services: Services) -> AsyncIterator[httpx.AsyncClient]:
    """A client with no session: a person's own browser, or an attacker's."""
    transport = httpx.ASGITransport(app=create_app(services), raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url=BASE_URL) as client:
        yield client


async def invite(
    admin: httpx.AsyncClient, org: Org, email: str, role: str = "member", **fields: Any
) -> dict[str, Any]:
    """POST /api/orgs/{org}/members as `admin`; the 201 body."""
    body = {"email": email, "first_name": "Given", "last_name": "Family", "role": role, **fields}
    response = await admin.post(f"/api/orgs/{org.id}/members", json=body)
    assert response.status_code == 201, response.text
    created: dict[str, Any] = response.json()
    return created


def token_of(created: dict[str, Any]) -> str:
    prefix = f"{BASE_URL}/invitations/"
    url = str(created["invitation_url"])
    assert url.startswith(prefix), url
    return url.removeprefix(prefix)


async def sign_in(client: httpx.AsyncClient, email: str, password: str) -> httpx.Response:
    """POST /api/session; on success the client sends the session's CSRF header from now on."""
    response = await client.post("/api/session", json={"email": email, "password": password})
    if response.status_code == 200:
        client.headers["X-CSRF-Token"] = response.json()["csrf_token"]
    return response


async def set_password(client: httpx.AsyncClient, token: str, password: str) -> httpx.Response:
    """POST /api/invitations/{token}/password; on success, as sign_in."""
    response = await client.post(f"/api/invitations/{token}/password", json={"password": password})
    if response.status_code == 200:
        client.headers["X-CSRF-Token"] = response.json()["csrf_token"]
    return response


def org_ids(session_body: dict[str, Any]) -> set[str]:
    return {m["org_id"] for m in session_body["memberships"]}


def id_time(user_id: str | uuid.UUID) -> datetime:
    """When a UUIDv7 was made: its first 48 bits are milliseconds since the epoch."""
    value = user_id if isinstance(user_id, uuid.UUID) else uuid.UUID(user_id)
    return datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=value.int >> 80)


@dataclass(frozen=True)
class UserRow:
    email: str | None
    has_password: bool


async def user_row(engine: AsyncEngine, user_id: str | uuid.UUID) -> UserRow | None:
    """The users row behind an id (an account, or an invitation's placeholder), if any."""
    wanted = user_id if isinstance(user_id, uuid.UUID) else uuid.UUID(user_id)
    async with engine.connect() as conn:
        row = (
            await conn.execute(select(User.email, User.password_hash).where(User.id == wanted))
        ).first()
    return None if row is None else UserRow(row.email, row.password_hash is not None)


async def account_id(engine: AsyncEngine, email: str) -> uuid.UUID | None:
    async with engine.connect() as conn:
        found: uuid.UUID | None = await conn.scalar(select(User.id).where(User.email == email))
    return found


@dataclass(frozen=True)
class Held:
    """The membership an invitation was made for, as the database holds it now."""

    user_id: uuid.UUID
    status: str
    email: str
    accepted: bool


async def held(org: Org, created: dict[str, Any]) -> Held:
    """The membership behind an admin's 201 (found by its invitation, as its user changes on
    acceptance)."""
    async with org.engine.connect() as conn:
        row = (
            await conn.execute(
                select(
                    Membership.user_id,
                    Membership.status,
                    Membership.email,
                    Invitation.accepted_at,
                )
                .join(Invitation, Invitation.membership_id == Membership.id)
                .where(
                    Membership.org_id == org.id,
                    Invitation.token_hash == token_hash_of(created),
                )
            )
        ).one()
    return Held(row.user_id, row.status, row.email, row.accepted_at is not None)


def token_hash_of(created: dict[str, Any]) -> str:
    return token_hash(token_of(created))
