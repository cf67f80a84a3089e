"""HTTP as RFC 9110 says: every 401 carries a challenge (§11.6.1, §15.5.2), every 405 an
Allow naming what the path answers (§15.5.6), and HEAD answers wherever GET does (§9.3.2),
with the GET's status and headers and no body: authenticated and rate-limited like the GET.
"""

from __future__ import annotations

import re
import socket
from datetime import timedelta
from typing import Any

import httpx
import pytest
from prometheus_client import REGISTRY
from sqlalchemy import update

from hangar.auth import sessions
from hangar.foundation.crypto import token_digest
from hangar.http.head import HeadAsGet
from hangar.keys.key_format import generate_key
from hangar.keys.models import ApiKey
from hangar.kit.errors import SESSION_CHALLENGE
from tests.fixtures.actions import url
from tests.fixtures.factories import Org, one_of_each
from tests.fixtures.fakes import FakeClock
from tests.fixtures.live_server import LiveServer
from tests.fixtures.pages import sign_in_with_form

P = "/api/v1/external"
AIRCRAFT = f"{P}/aircraft"
FEED = f"{P}/reservations.ics"
NO_KEY = 'Bearer realm="hangar"'
BAD_KEY = 'Bearer realm="hangar", error="invalid_token"'


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def assert_401(response: httpx.Response, challenge: str, code: str = "UNAUTHORIZED") -> None:
    assert response.status_code == 401, response.text
    assert response.headers["www-authenticate"] == challenge
    # The body is the contract's, untouched: {detail, code} and nothing else.
    body = response.json()
    assert set(body) == {"detail", "code"}
    assert body["code"] == code


async def end_key(org: Org, key: str, **ended: Any) -> None:
    async with org.engine.begin() as conn:
        await conn.execute(update(ApiKey).where(ApiKey.key_hash == token_digest(key)).values(ended))


# --- 401: WWW-Authenticate ------------------------------------------------------------------


async def test_the_public_api_challenges_bearer_without_an_error_when_no_key_came(
    client: httpx.AsyncClient,
) -> None:
    assert_401(await client.get(AIRCRAFT), NO_KEY)
    # A scheme it does not take is no key at all (RFC 6750 §3.1: no error code).
    assert_401(await client.get(AIRCRAFT, headers={"Authorization": "Basic dTpw"}), NO_KEY)
    assert_401(await client.get(AIRCRAFT, headers={"Authorization": "Bearer "}), NO_KEY)
    missing = (await client.get(AIRCRAFT)).json()
    assert missing["detail"] == "A bearer token is required: send Authorization: Bearer <API_KEY>"


async def test_a_key_presented_and_refused_is_invalid_token(
    client: httpx.AsyncClient, org: Org, clock: FakeClock
) -> None:
    revoked, expired = await org.key_with("read:aircraft"), await org.key_with("read:aircraft")
    await end_key(org, revoked, revoked_at=clock.now())
    await end_key(org, expired, expires_at=clock.now() - timedelta(seconds=1))
    for key in ("svc_pk_short", generate_key().key, revoked, expired):
        response = await client.get(AIRCRAFT, headers=bearer(key))
        assert_401(response, BAD_KEY)
        assert response.json()["detail"] == "The API key is invalid or revoked"
    assert (await client.get(AIRCRAFT, headers=org.auth)).status_code == 200


async def test_the_feed_challenges_for_its_query_key(client: httpx.AsyncClient) -> None:
    # Still a bearer token (RFC 6750 §2.3 carries one in the query): the same challenges.
    assert_401(await client.get(FEED), NO_KEY)
    assert_401(await client.get(FEED, params={"token": generate_key().key}), BAD_KEY)


async def test_a_key_without_the_scope_is_told_which_scope_in_its_403(
    client: httpx.AsyncClient, org: Org
) -> None:
    key = await org.key_with("read:squawks")
    response = await client.get(AIRCRAFT, headers=bearer(key))
    assert response.status_code == 403
    assert response.json()["code"] == "INSUFFICIENT_SCOPE"
    assert response.headers["www-authenticate"] == (
        'Bearer realm="hangar", error="insufficient_scope", scope="read:aircraft"'
    )


async def test_the_session_api_challenges_with_its_cookie_never_bearer(
    client: httpx.AsyncClient, org: Org
) -> None:
    assert SESSION_CHALLENGE.startswith("Cookie ")
    assert f'cookie-name="{sessions.COOKIE}"' in SESSION_CHALLENGE
    assert_401(await client.get("/api/session"), SESSION_CHALLENGE)
    client.cookies.set(sessions.COOKIE, "not-a-session")
    assert_401(await client.get(url(org, "webhooks")), SESSION_CHALLENGE)
    client.cookies.clear()
    # An unsafe method is refused before its body is read, with the same challenge.
    assert_401(await client.post(url(org, "webhooks"), json={}), SESSION_CHALLENGE)
    wrong = {"email": "nobody@example.org", "password": "not the password"}
    assert_401(
        await client.post("/api/session", json=wrong), SESSION_CHALLENGE, "INVALID_CREDENTIALS"
    )


async def test_the_sign_in_forms_401_carries_the_challenge_too(
    client: httpx.AsyncClient,
) -> None:
    response = await sign_in_with_form(client, "nobody@example.org", "not the password")
    assert response.status_code == 401, response.text
    assert response.headers["www-authenticate"] == SESSION_CHALLENGE
    assert "text/html" in response.headers["content-type"]


# --- 405: Allow ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path", "allow"),
    [
        ("DELETE", AIRCRAFT, "GET, HEAD"),
        ("POST", f"{P}/reservations", "GET, HEAD"),
        ("PUT", FEED, "GET, HEAD"),
        ("POST", f"{P}/openapi.json", "GET, HEAD"),
        ("POST", "/api/health", "GET, HEAD"),
        ("PUT", "/api/session", "GET, HEAD, POST, DELETE"),
        ("DELETE", "/login", "GET, HEAD, POST"),
        ("POST", "/docs", "GET, HEAD"),
    ],
)
async def test_a_405_names_every_method_the_path_answers(
    client: httpx.AsyncClient, method: str, path: str, allow: str
) -> None:
    response = await client.request(method, path, headers={"X-CSRF-Token": "x"})
    assert response.status_code == 405, response.text
    assert response.headers["allow"] == allow
    assert response.json() == {"detail": "Method Not Allowed", "code": "METHOD_NOT_ALLOWED"}


async def test_allow_gathers_the_routes_that_share_a_path(
    client: httpx.AsyncClient, org: Org
) -> None:
    # A collection and one of its members: a GET and a POST, a GET, a PATCH and a DELETE,
    # each its own route (Starlette's Allow named only the first one's).
    assert (await client.put(url(org, "webhooks"))).headers["allow"] == "GET, HEAD, POST"
    member = await client.post(url(org, f"webhooks/{org.id}"))
    assert member.status_code == 405
    assert member.headers["allow"] == "GET, HEAD, PATCH, DELETE"


async def test_head_on_a_path_without_get_is_405_without_a_body(
    client: httpx.AsyncClient, org: Org
) -> None:
    response = await client.head(url(org, f"webhooks/{org.id}/enable"))
    assert response.status_code == 405
    assert response.headers["allow"] == "POST"
    assert response.content == b""


# --- HEAD --------------------------------------------------------------------------------------


def comparable(response: httpx.Response) -> dict[str, str]:
    """The headers a HEAD must share with its GET: all but the request's own id, and of a
    cookie set, all but its value (the sign-in form's token is new on every answer)."""
    found = {k: v for k, v in response.headers.items() if k != "x-request-id"}
    if "set-cookie" in found:
        found["set-cookie"] = re.sub(r"=[^;]*", "=", found["set-cookie"], count=1)
    return found


async def assert_head_is_get(client: httpx.AsyncClient, path: str, **kwargs: Any) -> httpx.Response:
    got = await client.get(path, **kwargs)
    head = await client.head(path, **kwargs)
    assert head.status_code == got.status_code, path
    assert head.content == b"", path
    assert comparable(head) == comparable(got), path
    assert "content-length" in head.headers or got.status_code == 304, path
    return got


async def test_head_answers_every_operation_of_the_public_api(
    client: httpx.AsyncClient, org: Org, other: Org
) -> None:
    await one_of_each(org)
    await one_of_each(other)
    document = (await client.get(f"{P}/openapi.json")).json()
    gets = [path for path, item in document["paths"].items() if "get" in item]
    assert len(gets) == 9
    assert not any("head" in item for item in document["paths"].values())
    for path in gets:
        params = {"token": org.key} if path == FEED else None
        headers = None if path == FEED else org.auth
        got = await assert_head_is_get(client, path, params=params, headers=headers)
        assert got.status_code == 200, (path, got.text)
        assert other.key not in got.text


async def test_head_answers_the_pages_and_the_operators_endpoints(
    client: httpx.AsyncClient, admin: httpx.AsyncClient, org: Org
) -> None:
    for path in ("/docs", "/login", "/changelog", f"{P}/openapi.json", "/api/health"):
        assert (await assert_head_is_get(client, path)).status_code == 200, path
    assert (await assert_head_is_get(client, "/static/style.css")).status_code == 200
    # A signed-in screen, and a redirect to sign in (its Location kept).
    screen = await assert_head_is_get(admin, f"/settings/{org.id}/keys")
    assert screen.status_code == 200
    assert (await assert_head_is_get(client, f"/settings/{org.id}/keys")).status_code == 303
    assert (await assert_head_is_get(client, "/no-such-page")).status_code == 404


async def test_head_is_authenticated_like_get(client: httpx.AsyncClient, org: Org) -> None:
    for response in (
        await client.head(AIRCRAFT),
        await client.head(FEED),
    ):
        assert response.status_code == 401
        assert response.headers["www-authenticate"] == NO_KEY
        assert response.content == b""
        assert int(response.headers["content-length"]) > 0  # the GET's JSON body's length
    bad = await client.head(AIRCRAFT, headers=bearer(generate_key().key))
    assert (bad.status_code, bad.headers["www-authenticate"]) == (401, BAD_KEY)
    unscoped = await client.head(AIRCRAFT, headers=bearer(await org.key_with("read:squawks")))
    assert unscoped.status_code == 403


async def test_head_spends_the_keys_rate_limit_like_get(
    client: httpx.AsyncClient, org: Org
) -> None:
    key = await org.key_with("read:aircraft")
    for _ in range(60):
        assert (await client.head(AIRCRAFT, headers=bearer(key))).status_code == 200
    spent = await client.head(AIRCRAFT, headers=bearer(key))
    assert spent.status_code == 429
    assert spent.content == b""
    assert (await client.get(AIRCRAFT, headers=bearer(key))).status_code == 429
    assert (await client.get(AIRCRAFT, headers=org.auth)).status_code == 200  # its own budget


async def test_head_is_counted_as_head_under_its_route(client: httpx.AsyncClient) -> None:
    labels = {"operation": "/api/health", "method": "HEAD", "status": "200"}

    def counted() -> float:
        return REGISTRY.get_sample_value("hangar_http_requests_total", labels) or 0.0

    before = counted()
    assert (await client.head("/api/health")).status_code == 200
    assert counted() == before + 1


async def test_the_layer_leaves_the_servers_scope_saying_head() -> None:
    """The server reads its own scope to write no body and to log the method: only the app's
    copy says GET."""
    seen: list[str] = []
    sent: list[dict[str, Any]] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        seen.append(scope["method"])
        scope["route"] = "the route"
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"part", "more_body": True})
        await send({"type": "http.response.body", "body": b"end"})

    async def send(message: Any) -> None:
        sent.append(message)

    scope: dict[str, Any] = {"type": "http", "method": "HEAD", "path": "/"}
    await HeadAsGet(app)(scope, None, send)  # type: ignore[arg-type]
    assert seen == ["GET"]
    assert scope["method"] == "HEAD"
    assert scope["route"] == "the route"  # for the request metrics
    assert [m["type"] for m in sent] == ["http.response.start", "http.response.body"]
    assert sent[1] == {"type": "http.response.body", "body": b"", "more_body": False}


def _raw(port: int, request: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
        conn.sendall(request)
        chunks = []
        while chunk := conn.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def test_over_the_wire_head_has_the_gets_length_and_no_body(api_server: LiveServer) -> None:
    def ask(method: str) -> tuple[bytes, bytes]:
        answer = _raw(
            api_server.port,
            f"{method} /docs HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode(),
        )
        head, _, body = answer.partition(b"\r\n\r\n")
        return head, body

    _, get_body = ask("GET")
    head_head, head_body = ask("HEAD")
    assert head_head.startswith(b"HTTP/1.1 200 ")
    assert head_body == b""
    length = re.search(rb"(?im)^content-length: (\d+)\r?$", head_head)
    assert length is not None
    assert int(length[1]) == len(get_body) > 0
    assert b"transfer-encoding" not in head_head.lower()
