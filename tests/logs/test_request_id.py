"""Every answer of the app carries X-Request-ID: the client's when it is sane, a new one
otherwise, refusals and errors included."""

from __future__ import annotations

import re

import httpx
import pytest

from hangar.app import create_app
from hangar.http.access_log import current_request
from hangar.kit.container import Services
from hangar.logs.request_id import MAX_LENGTH

NEW_ID = re.compile(r"[0-9a-f]{32}")


@pytest.mark.parametrize(
    "sent",
    ["abc-123", "x" * MAX_LENGTH, "!~{}\"'\\", "9f1c2a0b-8d7e-4c1b-a1f0-0c2b3d4e5f60"],
)
async def test_a_sane_request_id_is_kept(client: httpx.AsyncClient, sent: str) -> None:
    response = await client.get("/api/health", headers={"X-Request-ID": sent})
    assert response.headers["x-request-id"] == sent


@pytest.mark.parametrize(
    "sent",
    [b"", b"x" * (MAX_LENGTH + 1), b"a b", b"caf\xc3\xa9", b"a\tb", b"a\x7fb", None],
)
async def test_any_other_request_id_is_replaced(
    client: httpx.AsyncClient, sent: bytes | None
) -> None:
    headers = {} if sent is None else {b"X-Request-ID": sent}
    response = await client.get("/api/health", headers=headers)
    assert NEW_ID.fullmatch(response.headers["x-request-id"])
    again = await client.get("/api/health", headers=headers)
    assert again.headers["x-request-id"] != response.headers["x-request-id"]


async def test_errors_and_refusals_carry_it(services: Services) -> None:
    app = create_app(services)

    async def broken() -> None:
        raise RuntimeError("a bug")

    app.add_api_route("/broken", broken)
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="https://hangar.example") as c:
        answers = [
            await c.get("/no/such/page", headers={"X-Request-ID": "404"}),
            await c.get("/api/v1/external/aircraft", headers={"X-Request-ID": "401"}),
            await c.post(
                "/api/session",
                content=b"{}",
                headers={"X-Request-ID": "413", "Content-Length": str(10**6)},
            ),
            await c.post("/api/session", json={"email": 1}, headers={"X-Request-ID": "422"}),
            await c.get("/broken", headers={"X-Request-ID": "500"}),
        ]
    assert [(str(a.status_code), a.headers["x-request-id"]) for a in answers] == [
        ("404", "404"),
        ("401", "401"),
        ("413", "413"),
        ("422", "422"),
        ("500", "500"),
    ]


async def test_the_id_is_bound_only_while_its_request_is_served(
    client: httpx.AsyncClient,
) -> None:
    await client.get("/api/health", headers={"X-Request-ID": "done"})
    assert current_request.get() is None
