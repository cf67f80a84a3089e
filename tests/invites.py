"""Helpers for invitation tests: inviting through the admin's API, and clients of people who
are not signed in yet (each its own cookie jar)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx

from hangar.app import create_app
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
