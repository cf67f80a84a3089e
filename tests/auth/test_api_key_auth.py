"""Authenticating the public API by key: 401 for every bad key, 403 for a missing scope."""

from __future__ import annotations

from datetime import timedelta

import httpx
import pytest
from sqlalchemy import select, update

from hangar.audit.service import Who
from hangar.foundation.crypto import token_digest
from hangar.keys.key_format import generate_key
from hangar.keys.models import ApiKey
from hangar.keys.service import Rotation, rotate
from hangar.kit.scopes import SCOPES
from tests.fixtures.factories import Org
from tests.fixtures.fakes import FakeClock

AIRCRAFT = "/api/v1/external/aircraft"
FEED = "/api/v1/external/reservations.ics"
# The eight operations that need a scope, and the one each needs (GET /organization takes
# any valid key: tests/external/test_organization.py).
OPERATIONS = [
    ("/api/v1/external/reservations", "read:reservations"),
    (FEED, "read:reservations"),
    (AIRCRAFT, "read:aircraft"),
    ("/api/v1/external/squawks", "read:squawks"),
    ("/api/v1/external/members", "read:members"),
    ("/api/v1/external/maintenance-logs", "read:maintenance"),
    ("/api/v1/external/work-orders", "read:maintenance"),
    ("/api/v1/external/events", "read:events"),
]
HEADER_OPERATIONS = [op for op in OPERATIONS if op[0] != FEED]


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


async def call(client: httpx.AsyncClient, path: str, key: str) -> httpx.Response:
    if path == FEED:
        return await client.get(path, params={"token": key})
    return await client.get(path, headers=bearer(key))


def assert_401(response: httpx.Response, message: str) -> None:
    assert response.status_code == 401, response.text
    body = response.json()
    assert set(body) == {"detail", "code"}
    assert body["code"] == "UNAUTHORIZED"
    assert message in body["detail"].lower()


async def key_id(org: Org, key: str) -> object:
    async with org.engine.connect() as conn:
        return await conn.scalar(select(ApiKey.id).where(ApiKey.key_hash == token_digest(key)))


@pytest.mark.parametrize(("path", "scope"), HEADER_OPERATIONS)
async def test_no_authorization_header_is_401_bearer_required(
    client: httpx.AsyncClient, org: Org, path: str, scope: str
) -> None:
    assert_401(await client.get(path), "bearer token is required")


@pytest.mark.parametrize(
    "header",
    [
        "Basic dXNlcjpwYXNz",
        "Token {key}",
        "ApiKey {key}",
        "{key}",
        "Bearer",
        "Bearer ",
        "Bearer    ",
    ],
)
async def test_anything_but_a_bearer_is_401_bearer_required(
    client: httpx.AsyncClient, org: Org, header: str
) -> None:
    response = await client.get(AIRCRAFT, headers={"Authorization": header.format(key=org.key)})
    assert_401(response, "bearer token is required")


async def test_the_bearer_scheme_is_case_insensitive(client: httpx.AsyncClient, org: Org) -> None:
    response = await client.get(AIRCRAFT, headers={"Authorization": f"bearer {org.key}"})
    assert response.status_code == 200


def _malformed(key: str) -> list[str]:
    body = key.removeprefix("svc_pk_")
    return [
        "svc_sk_" + body,  # wrong prefix
        "SVC_PK_" + body,
        "pk_" + body,
        body,  # no prefix at all
        key[:-1],  # 42 characters after the prefix
        key + "A",  # 44
        key[:-1] + "+",  # characters outside the URL-safe alphabet
        key[:-1] + "/",
        key[:-1] + "=",
        key[:-1] + ".",
        key[:-1] + "é",
        "svc_pk_" + "!" * 43,
        "svc_pk_",
        "x",
    ]


async def test_malformed_keys_are_401_invalid(client: httpx.AsyncClient, org: Org) -> None:
    for bad in _malformed(org.key):
        response = await client.get(AIRCRAFT, headers={b"Authorization": f"Bearer {bad}".encode()})
        assert_401(response, "invalid or revoked")


async def test_an_unknown_well_formed_key_is_401_invalid(
    client: httpx.AsyncClient, org: Org
) -> None:
    unknown = generate_key().key
    assert_401(await client.get(AIRCRAFT, headers=bearer(unknown)), "invalid or revoked")
    # One character off a real key is just as unknown.
    flipped = org.key[:-1] + ("A" if org.key[-1] != "A" else "B")
    assert_401(await client.get(AIRCRAFT, headers=bearer(flipped)), "invalid or revoked")


async def test_a_revoked_key_is_401_invalid_at_once(
    client: httpx.AsyncClient, org: Org, clock: FakeClock
) -> None:
    key = await org.key_with("read:aircraft")
    assert (await client.get(AIRCRAFT, headers=bearer(key))).status_code == 200
    async with org.engine.begin() as conn:
        await conn.execute(
            update(ApiKey)
            .where(ApiKey.key_hash == token_digest(key))
            .values(revoked_at=clock.now())
        )
    assert_401(await client.get(AIRCRAFT, headers=bearer(key)), "invalid or revoked")
    clock.advance(days=400)  # revocation does not wear off
    assert_401(await client.get(AIRCRAFT, headers=bearer(key)), "invalid or revoked")
    assert (await client.get(AIRCRAFT, headers=org.auth)).status_code == 200


async def test_a_rotated_key_works_through_its_grace_window_then_is_401(
    client: httpx.AsyncClient, org: Org, clock: FakeClock
) -> None:
    old = await org.key_with("read:aircraft", "read:squawks")
    async with org.engine.begin() as conn:
        rotated = await rotate(
            conn,
            org.id,
            Who.person(org.admin_id, "admin@example.org", None),
            await key_id(org, old),  # type: ignore[arg-type]
            Rotation(grace_hours=24),
            clock.now(),
        )
    new = rotated["new"]["key"]
    assert rotated["new"]["scopes"] == ["read:aircraft", "read:squawks"]
    for key in (old, new):
        assert (await client.get(AIRCRAFT, headers=bearer(key))).status_code == 200

    clock.advance(hours=23, minutes=59, seconds=59)
    assert (await client.get(AIRCRAFT, headers=bearer(old))).status_code == 200

    clock.advance(seconds=2)
    assert_401(await client.get(AIRCRAFT, headers=bearer(old)), "invalid or revoked")
    assert (await client.get(AIRCRAFT, headers=bearer(new))).status_code == 200
    clock.advance(days=30)
    assert_401(await client.get(AIRCRAFT, headers=bearer(old)), "invalid or revoked")


async def test_the_calendar_feed_answers_401_for_a_missing_or_bad_token(
    client: httpx.AsyncClient, org: Org
) -> None:
    missing = await client.get(FEED, headers=org.auth)  # the header is not read here
    assert missing.status_code == 401
    assert missing.json()["code"] == "UNAUTHORIZED"
    assert_401(await client.get(FEED, params={"token": "svc_pk_nope"}), "invalid or revoked")
    assert_401(await client.get(FEED, params={"token": generate_key().key}), "invalid or revoked")


@pytest.mark.parametrize(("path", "scope"), OPERATIONS)
async def test_each_operation_refuses_a_key_without_its_scope(
    client: httpx.AsyncClient, org: Org, path: str, scope: str
) -> None:
    # Every other scope, read:members.full included: none of them stands in for this one.
    lacking = await org.key_with(*(s for s in SCOPES if s != scope))
    response = await call(client, path, lacking)

    assert response.status_code == 403
    body = response.json()
    assert set(body) == {"detail", "code"}
    assert body["code"] == "INSUFFICIENT_SCOPE"
    assert scope in body["detail"]


@pytest.mark.parametrize(("path", "scope"), OPERATIONS)
async def test_each_operation_serves_a_key_holding_only_its_scope(
    client: httpx.AsyncClient, org: Org, path: str, scope: str
) -> None:
    response = await call(client, path, await org.key_with(scope))
    assert response.status_code == 200, response.text


@pytest.mark.parametrize(("path", "scope"), OPERATIONS)
async def test_a_legacy_key_without_scopes_is_403_everywhere(
    client: httpx.AsyncClient, org: Org, path: str, scope: str
) -> None:
    response = await call(client, path, await org.legacy_key())
    assert response.status_code == 403
    assert response.json()["code"] == "INSUFFICIENT_SCOPE"
    assert scope in response.json()["detail"]


async def test_members_full_alone_does_not_open_members(
    client: httpx.AsyncClient, org: Org
) -> None:
    key = await org.key_with("read:members.full")
    response = await client.get("/api/v1/external/members", headers=bearer(key))

    assert response.status_code == 403
    body = response.json()
    assert body["code"] == "INSUFFICIENT_SCOPE"
    assert "read:members" in body["detail"]
    assert "read:members.full" not in body["detail"]
    assert "@" not in response.text


@pytest.mark.parametrize("ended", ["revoked_at", "expires_at"])
@pytest.mark.parametrize("scope", ["read:aircraft", "read:squawks"])
async def test_a_revoked_or_expired_key_is_401_invalid_before_any_scope_question(
    client: httpx.AsyncClient, org: Org, clock: FakeClock, ended: str, scope: str
) -> None:
    """Whether or not the key holds the scope asked for: 401, never 200 or 403."""
    key = await org.key_with(scope)
    async with org.engine.begin() as conn:
        await conn.execute(
            update(ApiKey)
            .where(ApiKey.key_hash == token_digest(key))
            .values({ended: clock.now() - timedelta(seconds=1)})
        )
    assert_401(await client.get(AIRCRAFT, headers=bearer(key)), "invalid or revoked")


# A query that the operations taking `limit` or `status` refuse with 422 once the key is
# accepted (the others ignore what they do not take).
_BAD_QUERY = {"limit": "0", "status": "no-such-status"}
_VALIDATING = {
    "/api/v1/external/reservations",
    "/api/v1/external/squawks",
    "/api/v1/external/work-orders",
    "/api/v1/external/events",
}


@pytest.mark.parametrize(("path", "scope"), OPERATIONS)
async def test_the_key_is_judged_before_the_parameters(
    client: httpx.AsyncClient, org: Org, path: str, scope: str
) -> None:
    """401 and 403 come before 422: a caller without a valid key, or without the scope,
    learns nothing about the parameters an operation takes."""
    unknown = generate_key().key

    async def bad_query_with(key: str) -> httpx.Response:
        if path == FEED:
            return await client.get(path, params={**_BAD_QUERY, "token": key})
        return await client.get(path, params=_BAD_QUERY, headers=bearer(key))

    assert_401(await bad_query_with(unknown), "invalid or revoked")
    other_scope = next(s for s in SCOPES if s != scope and not s.startswith(scope))
    refused = await bad_query_with(await org.key_with(other_scope))
    assert refused.status_code == 403, refused.text
    assert refused.json()["code"] == "INSUFFICIENT_SCOPE"
    accepted = await bad_query_with(await org.key_with(scope))
    assert accepted.status_code == (422 if path in _VALIDATING else 200), accepted.text
