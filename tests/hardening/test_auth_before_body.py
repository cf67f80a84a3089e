"""Every route that needs a session refuses a request without one before reading a byte of its
body (issue 24, point 2): the app is called with a `receive` that records being asked, and
the refusal closes the connection so the server never reads the body either."""

from __future__ import annotations

import uuid
from typing import Any

import orjson
from starlette.types import Message

from hangar.accounts.service.sign_in import ADDRESS_LIMITS
from hangar.app import create_app
from hangar.auth.sessions import COOKIE
from hangar.http.routing import JsonRoute
from hangar.kit.container import Services
from tests.fixtures.clients import session_for
from tests.fixtures.factories import Org
from tests.fixtures.routes import api_routes

# Within every route's cap (64 KiB at the least), so that only who sends it can refuse it.
BODY = orjson.dumps({"pad": "x" * 60_000})
UNSAFE = {"POST", "PUT", "PATCH", "DELETE"}


def session_routes(services: Services) -> list[tuple[str, str]]:
    """(method, path) of every JSON route under /api/orgs/ that takes a body."""
    found = []
    for path, route in api_routes(create_app(services).routes):
        if path.startswith("/api/orgs/"):
            assert isinstance(route, JsonRoute), f"{path} is not a JsonRoute"
            found += [(m, path) for m in sorted((route.methods or set()) & UNSAFE)]
    return found


async def call(
    services: Services, method: str, path: str, headers: list[tuple[bytes, bytes]]
) -> tuple[int, dict[bytes, bytes], bool]:
    """The status and headers of one request with BODY, and whether the app read the body."""
    app = create_app(services)
    read = False
    answer: dict[str, Any] = {}

    async def receive() -> Message:
        nonlocal read
        read = True
        return {"type": "http.request", "body": BODY, "more_body": False}

    async def send(message: Message) -> None:
        if message["type"] == "http.response.start":
            answer.update(message)

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "https",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [
            (b"host", b"hangar.example"),
            (b"content-type", b"application/json"),
            *(
                []
                if b"content-length" in dict(headers)
                else [(b"content-length", str(len(BODY)).encode())]
            ),
            *headers,
        ],
        "client": ("198.51.100.7", 50000),
        "server": ("hangar.example", 443),
        "state": {},
    }
    await app(scope, receive, send)
    return answer["status"], dict(answer["headers"]), read


def concrete(path: str, org: Org) -> str:
    return path.replace("{org_id}", str(org.id)).replace("{", "").replace("}", "")


async def test_no_session_is_refused_before_the_body_on_every_session_route(
    services: Services, org: Org
) -> None:
    routes = session_routes(services)
    assert len(routes) > 20  # members, keys, webhooks, fleet, reservations, squawks, ...
    for method, path in routes:
        for headers in ([], [(b"cookie", f"{COOKIE}=forged-{uuid.uuid4().hex}".encode())]):
            status, answered, read = await call(services, method, concrete(path, org), headers)
            assert (method, path, status) == (method, path, 401)
            assert not read, f"{method} {path} read the body of an anonymous request"
            assert answered[b"connection"] == b"close"


async def test_a_session_without_its_csrf_token_is_refused_before_the_body(
    services: Services, org: Org
) -> None:
    token, _ = await session_for(services, org.admin_id)
    cookie = [(b"cookie", f"{COOKIE}={token}".encode())]
    status, _, read = await call(services, "POST", f"/api/orgs/{org.id}/webhooks", cookie)
    assert status == 403
    assert not read


async def test_a_signed_in_request_still_has_its_body_read(services: Services, org: Org) -> None:
    token, csrf = await session_for(services, org.admin_id)
    headers = [(b"cookie", f"{COOKIE}={token}".encode()), (b"x-csrf-token", csrf.encode())]
    status, answered, read = await call(services, "POST", f"/api/orgs/{org.id}/webhooks", headers)
    # Read, and refused for what it says (no name, no url), not for who sent it.
    assert read
    assert status == 422
    assert b"connection" not in answered


async def test_a_small_refused_body_keeps_its_connection(services: Services, org: Org) -> None:
    # Skipping a few bytes costs less than a new connection; only large bodies close it.
    small = [(b"content-length", b"100")]
    status, answered, read = await call(services, "POST", f"/api/orgs/{org.id}/squawks", small)
    assert (status, read) == (401, False)
    assert b"connection" not in answered


async def test_a_spent_address_is_refused_sign_in_before_its_body(services: Services) -> None:
    for _ in range(ADDRESS_LIMITS[0].count):
        await services.limiter.hit(
            "sign-in:address:198.51.100.7", ADDRESS_LIMITS, services.clock.now()
        )
    small = [(b"content-length", b"100")]
    status, answered, read = await call(services, "POST", "/api/session", small)
    assert (status, read) == (429, False)
    assert int(answered[b"retry-after"]) > 0
