"""/api/orgs/{org_id}/api-keys: list, create, rotate, revoke."""

from __future__ import annotations

import httpx
import pytest

from hangar.keys.key_format import is_well_formed
from tests.fixtures.factories import Org
from tests.fixtures.fakes import FakeClock

AIRCRAFT = "/api/v1/external/aircraft"
VIEW_FIELDS = {
    "id",
    "name",
    "prefix",
    "scopes",
    "status",
    "created_at",
    "created_by",
    "last_used_at",
    "expires_at",
    "replaced_by",
}


def keys_url(org: Org) -> str:
    return f"/api/orgs/{org.id}/api-keys"


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


async def create(admin: httpx.AsyncClient, org: Org, **body: object) -> httpx.Response:
    return await admin.post(keys_url(org), json={"name": "fleet sync", **body})


async def test_create_shows_the_key_once_then_only_its_prefix(
    admin: httpx.AsyncClient, client: httpx.AsyncClient, org: Org
) -> None:
    response = await create(admin, org, scopes=["read:aircraft", "read:squawks"])

    assert response.status_code == 201
    created = response.json()
    assert set(created) == VIEW_FIELDS | {"key"}
    assert is_well_formed(created["key"])
    assert created["prefix"] == created["key"][:12]
    assert created["scopes"] == ["read:aircraft", "read:squawks"]
    assert created["status"] == "active"
    assert (await client.get(AIRCRAFT, headers=bearer(created["key"]))).status_code == 200

    listed = (await admin.get(keys_url(org))).json()
    mine = next(k for k in listed if k["id"] == created["id"])
    assert set(mine) == VIEW_FIELDS
    assert created["key"] not in str(listed)


@pytest.mark.parametrize(
    ("scopes", "code"),
    [
        ([], "API_KEY_SCOPES_REQUIRED"),
        (None, "API_KEY_SCOPES_REQUIRED"),
        (["read:aircraft", "write:aircraft"], "UNKNOWN_SCOPE"),
    ],
)
async def test_create_refuses_missing_or_unknown_scopes(
    admin: httpx.AsyncClient, org: Org, scopes: list[str] | None, code: str
) -> None:
    response = await create(admin, org, scopes=scopes)
    assert response.status_code == 422
    assert response.json()["code"] == code


async def test_rotation_keeps_scopes_and_honours_the_grace_window(
    admin: httpx.AsyncClient, client: httpx.AsyncClient, org: Org, clock: FakeClock
) -> None:
    old = (await create(admin, org, scopes=["read:aircraft"])).json()

    rotated = await admin.post(f"{keys_url(org)}/{old['id']}/rotate", json={"grace_hours": 1})

    assert rotated.status_code == 201
    new, old_view = rotated.json()["new"], rotated.json()["old"]
    assert new["scopes"] == ["read:aircraft"]
    assert new["key"] != old["key"]
    assert old_view["status"] == "expiring"
    assert old_view["replaced_by"] == new["id"]
    for key in (old["key"], new["key"]):
        assert (await client.get(AIRCRAFT, headers=bearer(key))).status_code == 200
    clock.advance(minutes=59, seconds=59)
    assert (await client.get(AIRCRAFT, headers=bearer(old["key"]))).status_code == 200
    clock.advance(seconds=1)
    assert (await client.get(AIRCRAFT, headers=bearer(old["key"]))).status_code == 401
    assert (await client.get(AIRCRAFT, headers=bearer(new["key"]))).status_code == 200
    listed = {k["id"]: k["status"] for k in (await admin.get(keys_url(org))).json()}
    assert listed[old["id"]] == "expired"
    again = await admin.post(f"{keys_url(org)}/{old['id']}/rotate", json={})
    assert again.status_code == 409
    assert again.json()["code"] == "API_KEY_NOT_ACTIVE"


async def test_rotation_grace_defaults_to_24_hours_and_is_bounded(
    admin: httpx.AsyncClient, org: Org, clock: FakeClock
) -> None:
    old = (await create(admin, org, scopes=["read:aircraft"])).json()
    for hours in (-1, 169, "soon"):
        bad = await admin.post(f"{keys_url(org)}/{old['id']}/rotate", json={"grace_hours": hours})
        assert bad.status_code == 422
    rotated = (await admin.post(f"{keys_url(org)}/{old['id']}/rotate")).json()
    assert clock.now().isoformat() == "2026-05-04T10:00:30+00:00"
    assert rotated["old"]["expires_at"] == "2026-05-05T10:00:30Z"


async def test_a_key_without_scopes_cannot_be_rotated(admin: httpx.AsyncClient, org: Org) -> None:
    await org.legacy_key()
    legacy = next(k for k in (await admin.get(keys_url(org))).json() if k["name"] == "legacy")
    response = await admin.post(f"{keys_url(org)}/{legacy['id']}/rotate", json={})
    assert response.status_code == 422
    assert response.json()["code"] == "API_KEY_SCOPES_REQUIRED"


async def test_revocation_is_immediate_and_final(
    admin: httpx.AsyncClient, client: httpx.AsyncClient, org: Org
) -> None:
    created = (await create(admin, org, scopes=["read:aircraft"])).json()
    revoked = await admin.post(f"{keys_url(org)}/{created['id']}/revoke")
    assert revoked.status_code == 200
    assert revoked.json()["status"] == "revoked"
    assert (await client.get(AIRCRAFT, headers=bearer(created["key"]))).status_code == 401
    rotate = await admin.post(f"{keys_url(org)}/{created['id']}/rotate", json={})
    assert rotate.status_code == 409


async def test_only_org_settings_and_only_this_org(
    member: httpx.AsyncClient, outsider: httpx.AsyncClient, admin: httpx.AsyncClient, org: Org
) -> None:
    forbidden = await member.get(keys_url(org))
    assert forbidden.status_code == 403
    assert forbidden.json()["code"] == "FORBIDDEN"
    assert "org.settings" in forbidden.json()["detail"]

    created = (await create(admin, org, scopes=["read:aircraft"])).json()
    for method, path in (
        ("GET", keys_url(org)),
        ("POST", f"{keys_url(org)}/{created['id']}/revoke"),
        ("POST", f"{keys_url(org)}/{created['id']}/rotate"),
    ):
        response = await outsider.request(method, path, json={})
        assert response.status_code == 404
        assert response.json()["code"] == "NOT_FOUND"


async def test_unknown_key_id_is_404(admin: httpx.AsyncClient, org: Org, other: Org) -> None:
    theirs = (await admin.get(keys_url(org))).json()
    assert theirs  # the fixture org has its own key
    for key_id in ("nope", "00000000-0000-7000-8000-000000000000"):
        response = await admin.post(f"{keys_url(org)}/{key_id}/revoke")
        assert response.status_code == 404
