"""Errors of the public API: one shape, and never a 500 or a trace for hostile input."""

from __future__ import annotations

import httpx
import pytest

from hangar.fleet.models import Aircraft
from hangar.keys.key_format import generate_key
from hangar.squawks.models import Squawk
from tests.fixtures.factories import Org
from tests.fixtures.fakes import FakeClock

P = "/api/v1/external"
GET_PATHS = [
    f"{P}/reservations",
    f"{P}/reservations.ics",
    f"{P}/aircraft",
    f"{P}/squawks",
    f"{P}/members",
    f"{P}/maintenance-logs",
    f"{P}/work-orders",
]
EXPECTED = {200, 400, 401, 403, 404, 405, 422, 429}


def assert_error(response: httpx.Response, status: int, code: str | None = None) -> None:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert isinstance(body["detail"], str)
    assert body["detail"]
    assert isinstance(body["code"], str)
    if code is not None:
        assert body["code"] == code
    if status != 422:
        assert set(body) == {"detail", "code"}


def assert_sane(response: httpx.Response) -> None:
    assert response.status_code in EXPECTED, response.text
    assert "Traceback" not in response.text
    assert 'File "' not in response.text
    if response.status_code >= 400:
        assert_error(response, response.status_code)


@pytest.mark.parametrize(
    "path",
    [
        "/",
        "/api",
        "/api/v1",
        f"{P}",
        f"{P}/nope",
        f"{P}/reservation",
        f"{P}/Aircraft",
        f"{P}/aircraft/123",
        f"{P}/reservations.json",
        "/api/v2/external/aircraft",
        "/api/v1/external/openapi.yaml",
        "/redoc",
        "/openapi.json",
    ],
)
async def test_unknown_paths_are_404(client: httpx.AsyncClient, org: Org, path: str) -> None:
    for headers in ({}, org.auth):
        assert_error(await client.get(path, headers=headers), 404, "NOT_FOUND")


@pytest.mark.parametrize("path", [*GET_PATHS, f"{P}/openapi.json", "/api/health"])
@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH", "DELETE"])
async def test_writes_on_read_paths_are_405(
    client: httpx.AsyncClient, org: Org, path: str, method: str
) -> None:
    response = await client.request(method, path, headers=org.auth, json={"x": 1})
    assert_error(response, 405, "METHOD_NOT_ALLOWED")


async def test_bad_parameters_are_422_with_errors(client: httpx.AsyncClient, org: Org) -> None:
    response = await client.get(
        f"{P}/squawks", params={"status": "closed", "is_grounding": "maybe"}, headers=org.auth
    )
    assert_error(response, 422, "VALIDATION_ERROR")
    body = response.json()
    assert set(body) == {"detail", "code", "errors"}
    assert {tuple(e["loc"]) for e in body["errors"]} == {
        ("query", "status"),
        ("query", "is_grounding"),
    }
    for error in body["errors"]:
        assert set(error) == {"loc", "msg"}
        assert isinstance(error["msg"], str)
        assert error["msg"]


async def test_a_422_does_not_echo_internal_detail(client: httpx.AsyncClient, org: Org) -> None:
    response = await client.get(f"{P}/work-orders", params={"status": "x" * 5000}, headers=org.auth)
    assert_error(response, 422, "VALIDATION_ERROR")
    assert len(response.content) < 2000


HOSTILE = [
    "x" * 60_000,
    "\x00",
    "open\x00",
    "a\x00b" * 100,
    "✈️🛩 ñandú 日本語",
    "\u202e\ufeff\u200b",
    "\ud7ff\ue000\U0010ffff",
    "' OR 1=1 --",
    "'; DROP TABLE squawks; --",
    '" OR ""="',
    "%00",
    "%",
    "%zz",
    "../../etc/passwd",
    "${jndi:ldap://x}",
    "{{7*7}}",
    "<script>alert(1)</script>",
    "-1",
    "99999999999999999999999999999",
    "1e309",
    "NaN",
    "9999-12-31T23:59:59-01:00",
    "0001-01-01T00:00:00+01:00",
    "00000000-0000-0000-0000-000000000000",
    "{00000000-0000-0000-0000-000000000000}",
    "urn:uuid:00000000-0000-0000-0000-000000000000",
    "null",
    "[]",
    " ",
]
PARAMS = [
    "status",
    "aircraft_id",
    "pilot_id",
    "is_grounding",
    "limit",
    "after",
    "start_after",
    "start_before",
]


@pytest.mark.parametrize("path", GET_PATHS)
async def test_hostile_query_values_never_500(
    client: httpx.AsyncClient, org: Org, other: Org, clock: FakeClock, path: str
) -> None:
    plane = await org.add(Aircraft)
    await org.add(Squawk, aircraft_id=plane["id"])
    their_plane = await other.add(Aircraft)
    await other.add(Squawk, aircraft_id=their_plane["id"], description="theirs")
    token = [("token", org.key)] if path.endswith(".ics") else []

    async def fetch(params: list[tuple[str, str]]) -> None:
        clock.advance(hours=1)  # a fresh minute and hour: no request here meets the limits
        response = await client.get(path, params=[*token, *params], headers=org.auth)
        assert_sane(response)
        assert response.status_code != 429
        assert "theirs" not in response.text

    for value in HOSTILE:
        for name in PARAMS:
            await fetch([(name, value)])
        # Several at once, and each repeated with conflicting values.
        short = value[:500]
        await fetch([(name, v) for name in PARAMS for v in (short, "open", short)])
        if path.endswith(".ics"):
            hostile_token = await client.get(path, params={"token": value})
            assert_error(hostile_token, 401, "UNAUTHORIZED")


async def test_hostile_keys_are_401(client: httpx.AsyncClient, org: Org) -> None:
    base = generate_key().key
    for value in [
        "svc_pk_" + "A" * 60_000,
        base[:-1] + "\x00",
        "svc_pk_' OR 1=1 --" + "A" * 25,
        "svc_pk_" + "é" * 43,
        org.key + "\x00",
        org.key + "," + org.key,
    ]:
        response = await client.get(
            f"{P}/aircraft", headers={b"Authorization": f"Bearer {value}".encode()}
        )
        assert_error(response, 401, "UNAUTHORIZED")
        feed = await client.get(f"{P}/reservations.ics", params={"token": value})
        assert_error(feed, 401, "UNAUTHORIZED")


async def test_two_authorization_headers_are_not_a_way_in(
    client: httpx.AsyncClient, org: Org
) -> None:
    response = await client.get(
        f"{P}/aircraft",
        headers=[
            ("Authorization", "Bearer svc_pk_nope"),
            ("Authorization", org.auth["Authorization"]),
        ],
    )
    assert_sane(response)


@pytest.mark.parametrize(
    "path",
    [
        f"{P}/%00",
        f"{P}/aircraft%00",
        f"{P}/" + "a" * 10_000,
        f"{P}/..%2f..%2fhealth",
        f"{P}/squawks%3Fstatus=open",
        f"{P}/✈",
    ],
)
async def test_hostile_paths_are_404(client: httpx.AsyncClient, org: Org, path: str) -> None:
    assert_error(await client.get(path, headers=org.auth), 404, "NOT_FOUND")
