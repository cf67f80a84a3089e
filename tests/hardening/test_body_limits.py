"""Request bodies are capped per route (hangar.http.limits.BodyLimit), before the app reads
them; the largest valid body of each capped route still passes.

The memory side, against a real server, is in test_http_bounds.py; the latency of others
while such bodies arrive is bench G12b and G12d.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from hangar.fleet.models import Aircraft
from hangar.http.limits import (
    DEFAULT_BODY_BYTES,
    MAINTENANCE_LOG_BODY_BYTES,
    SIGN_IN_BODY_BYTES,
    BodyLimit,
    Message,
    Scope,
    body_cap,
)
from tests.fixtures.factories import Org


@pytest.mark.parametrize(
    ("path", "cap"),
    [
        ("/api/session", SIGN_IN_BODY_BYTES),
        ("/login", SIGN_IN_BODY_BYTES),
        ("/api/orgs/0197/maintenance-logs", MAINTENANCE_LOG_BODY_BYTES),
        ("/api/orgs/0197/work-orders", DEFAULT_BODY_BYTES),
        ("/api/orgs/0197/webhooks", DEFAULT_BODY_BYTES),
        ("/settings/0197/keys/new", DEFAULT_BODY_BYTES),
        ("/api/v1/external/aircraft", DEFAULT_BODY_BYTES),
        ("/no/such/route", DEFAULT_BODY_BYTES),
    ],
)
def test_each_route_has_its_cap(path: str, cap: int) -> None:
    assert body_cap(path) == cap
    assert SIGN_IN_BODY_BYTES <= DEFAULT_BODY_BYTES == 64 * 1024


class Recorder:
    """A stand-in app that records whether it ran and reads the whole body."""

    def __init__(self) -> None:
        self.ran = False
        self.body = b""

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        self.ran = True
        while True:
            message = await receive()
            self.body += message.get("body", b"")
            if not message.get("more_body"):
                break
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})


def http_scope(path: str, headers: list[tuple[bytes, bytes]]) -> Scope:
    return {"type": "http", "method": "POST", "path": path, "headers": headers}


async def run(app: Any, scope: Scope, chunks: list[bytes]) -> tuple[list[Message], int]:
    """Runs `app` on `chunks` of body; returns what it sent and how many receives it made."""
    sent: list[Message] = []
    received = 0

    async def receive() -> Message:
        nonlocal received
        received += 1
        if received > len(chunks):
            return {"type": "http.disconnect"}
        return {
            "type": "http.request",
            "body": chunks[received - 1],
            "more_body": received < len(chunks),
        }

    async def send(message: Message) -> None:
        sent.append(message)

    await app(scope, receive, send)
    return sent, received


def assert_413(sent: list[Message], cap: int) -> None:
    start, body = sent
    assert start["status"] == 413
    headers = dict(start["headers"])
    assert headers[b"connection"] == b"close"
    assert headers[b"content-type"] == b"application/json"
    error = json.loads(body["body"])
    assert error["code"] == "REQUEST_TOO_LARGE"
    assert f"{cap:,}" in error["detail"]


async def test_a_declared_length_over_the_cap_is_refused_before_anything_is_read() -> None:
    app = Recorder()
    scope = http_scope("/api/session", [(b"content-length", b"%d" % (SIGN_IN_BODY_BYTES + 1))])

    sent, receives = await run(BodyLimit(app), scope, [b"x" * (SIGN_IN_BODY_BYTES + 1)])

    assert_413(sent, SIGN_IN_BODY_BYTES)
    assert receives == 0
    assert not app.ran


async def test_a_body_of_unknown_length_is_cut_off_at_the_cap_and_the_app_answer_dropped() -> None:
    app = Recorder()
    scope = http_scope("/api/orgs/x/webhooks", [(b"transfer-encoding", b"chunked")])
    chunk = b"x" * 16384

    sent, receives = await run(BodyLimit(app), scope, [chunk] * 100)  # 1.6 MB offered

    assert_413(sent, DEFAULT_BODY_BYTES)
    assert app.ran
    assert len(app.body) <= DEFAULT_BODY_BYTES
    assert receives == DEFAULT_BODY_BYTES // len(chunk) + 1  # not one receive past the cap


async def test_a_sign_in_body_of_unknown_length_over_the_cap_never_reaches_the_app() -> None:
    # Anyone may post to sign in: a chunked body is read to its end (at most the cap) before
    # the app runs, so an oversized one costs no routing at all.
    app = Recorder()
    scope = http_scope("/api/session", [(b"transfer-encoding", b"chunked")])
    chunk = b"x" * 16384

    sent, receives = await run(BodyLimit(app), scope, [chunk] * 100)

    assert_413(sent, SIGN_IN_BODY_BYTES)
    assert not app.ran
    assert receives == SIGN_IN_BODY_BYTES // len(chunk) + 1


async def test_a_sign_in_body_of_unknown_length_within_the_cap_reaches_the_app_whole() -> None:
    app = Recorder()
    scope = http_scope("/api/session", [(b"transfer-encoding", b"chunked")])

    sent, _ = await run(BodyLimit(app), scope, [b'{"email": ', b'"a@b.example"}'])

    assert sent[0]["status"] == 200
    assert app.body == b'{"email": "a@b.example"}'


@pytest.mark.parametrize(
    "headers",
    [
        [(b"content-length", b"%d" % DEFAULT_BODY_BYTES)],
        [(b"transfer-encoding", b"chunked")],
    ],
)
async def test_a_body_at_the_cap_reaches_the_app_whole(headers: list[tuple[bytes, bytes]]) -> None:
    app = Recorder()
    chunks = [b"x" * (DEFAULT_BODY_BYTES // 4)] * 4

    sent, _ = await run(BodyLimit(app), http_scope("/api/orgs/x/webhooks", headers), chunks)

    assert sent[0]["status"] == 200
    assert app.body == b"".join(chunks)


async def test_a_request_without_a_body_passes_straight_through() -> None:
    seen: list[tuple[Any, Any]] = []

    async def app(scope: Scope, receive: Any, send: Any) -> None:
        seen.append((receive, send))

    async def receive() -> Message:
        raise AssertionError("not called")

    async def send(message: Message) -> None:
        raise AssertionError("not called")

    scope = http_scope("/api/v1/external/aircraft", [(b"authorization", b"Bearer x")])
    await BodyLimit(app)(scope, receive, send)

    assert seen == [(receive, send)]  # the server's own callables, not wrappers


# --- through the real app ---------------------------------------------------------------------


async def test_signing_in_with_a_body_over_its_cap_is_413(client: httpx.AsyncClient) -> None:
    big = {"email": "a@example.com", "password": "p" * SIGN_IN_BODY_BYTES}

    declared = await client.post("/api/session", json=big)

    async def stream() -> AsyncIterator[bytes]:
        yield json.dumps(big).encode()

    chunked = await client.post(
        "/api/session", content=stream(), headers={"content-type": "application/json"}
    )

    for response in (declared, chunked):
        assert response.status_code == 413
        assert response.json()["code"] == "REQUEST_TOO_LARGE"
        assert response.headers["connection"] == "close"


async def test_the_largest_valid_sign_in_body_is_not_refused(client: httpx.AsyncClient) -> None:
    """An email of 320 and a password of 1,024 astral characters, every one escaped (12
    bytes each): a plain 401, not a 413."""
    email = "a" * 308 + "@example.com"
    body = json.dumps({"email": email, "password": "\U0001f6e9" * 1024}).encode()
    assert len(body) > 12_000

    response = await client.post(
        "/api/session", content=body, headers={"content-type": "application/json"}
    )

    assert response.status_code == 401, response.text


async def test_the_largest_maintenance_log_entry_is_accepted(
    admin: httpx.AsyncClient, org: Org
) -> None:
    """100,000 characters of work performed, sent by Python's json (\\uXXXX for each one):
    about 600 KB, far above the default cap, within this route's."""
    plane = str((await org.add(Aircraft))["id"])
    text = "é" * 100_000
    body = json.dumps({"aircraft_id": plane, "event_type": "annual", "work_performed": text})
    assert DEFAULT_BODY_BYTES < len(body) < MAINTENANCE_LOG_BODY_BYTES

    response = await admin.post(
        f"/api/orgs/{org.id}/maintenance-logs",
        content=body,
        headers={"content-type": "application/json"},
    )

    assert response.status_code == 201, response.text[:300]
    assert response.json()["work_performed"] == text
