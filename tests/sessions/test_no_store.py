"""No cache keeps a session, management or product answer (issue 41, point 7): they carry
credentials (a new key, a webhook secret, an invitation link, the session's CSRF token) or
an organization's data for one signed-in user. Every JSON route answers `Cache-Control:
no-store`, whatever its status: a success, a refusal, a validation error, an unknown id."""

from __future__ import annotations

import re
import uuid

import httpx
import pytest

from hangar.app import create_app
from hangar.http.routing import JsonRoute
from hangar.kit.container import Services
from tests.fixtures.factories import Org
from tests.fixtures.routes import api_routes

pytestmark = pytest.mark.usefixtures("other")  # a second organization, never shown


def json_routes(services: Services) -> list[tuple[str, str]]:
    found = []
    for path, route in api_routes(create_app(services).routes):
        if isinstance(route, JsonRoute):
            found += [(method, path) for method in sorted(route.methods or ())]
    return found


async def test_every_json_route_answers_no_store_whatever_its_status(
    services: Services, org: Org, admin: httpx.AsyncClient
) -> None:
    routes = json_routes(services)
    assert len(routes) > 30  # the session, management and product routes, not a few
    statuses = set()
    for method, template in routes:
        path = template.replace("{org_id}", str(org.id))
        path = re.sub(r"\{[a-z_]+\}", lambda _: str(uuid.uuid4()), path)
        body: dict[str, str] | None = {} if method in ("POST", "PUT", "PATCH") else None
        answer = await admin.request(method, path, json=body)
        statuses.add(answer.status_code)
        assert answer.headers.get("cache-control") == "no-store", (method, template, answer)
    assert {200, 404, 422} <= statuses  # successes, unknown ids and validation errors alike


async def test_a_new_key_and_the_session_are_never_kept(
    services: Services, org: Org, admin: httpx.AsyncClient
) -> None:
    made = await admin.post(
        f"/api/orgs/{org.id}/api-keys", json={"name": "ci", "scopes": ["read:aircraft"]}
    )
    assert made.status_code == 201, made.text
    assert made.headers["cache-control"] == "no-store"
    session = await admin.get("/api/session")
    assert "csrf_token" in session.json()
    assert session.headers["cache-control"] == "no-store"
    anonymous = httpx.ASGITransport(app=create_app(services))
    async with httpx.AsyncClient(transport=anonymous, base_url=admin.base_url) as stranger:
        refused = await stranger.get("/api/session")
    assert refused.status_code == 401
    assert refused.headers["cache-control"] == "no-store"
