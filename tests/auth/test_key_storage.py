"""API keys at rest: the SHA-256 and the first twelve characters, never the key itself."""

from __future__ import annotations

import hashlib
import re
from datetime import UTC, datetime

import httpx
import pytest
from sqlalchemy import select

from hangar.app import create_app
from hangar.foundation.crypto import token_digest
from hangar.keys.issuing import issue_key
from hangar.keys.key_format import generate_key, is_well_formed
from hangar.keys.models import ApiKey
from hangar.kit.container import Services
from hangar.kit.errors import ApiError
from tests.fixtures.factories import T0, Org
from tests.fixtures.fakes import FakeClock

AIRCRAFT = "/api/v1/external/aircraft"
KEY_FORMAT = re.compile(r"svc_pk_[A-Za-z0-9_-]{43}")


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def test_a_key_is_the_prefix_and_43_url_safe_characters() -> None:
    keys = [generate_key() for _ in range(500)]
    assert len({k.key for k in keys}) == 500
    for new in keys:
        assert KEY_FORMAT.fullmatch(new.key), new.key
        assert len(new.key) == len("svc_pk_") + 43
        assert is_well_formed(new.key)
        assert new.key_hash == hashlib.sha256(new.key.encode()).hexdigest()
        assert new.prefix == new.key[:12]
    # Over 500 keys every character of the URL-safe alphabet shows up somewhere.
    assert set("".join(k.key[7:] for k in keys)) >= set("_-")


async def test_only_the_hash_and_first_twelve_characters_are_stored(org: Org) -> None:
    key = await org.key_with("read:aircraft", "read:squawks")
    async with org.engine.connect() as conn:
        rows = (await conn.execute(select(ApiKey.__table__))).mappings().all()
    row = next(r for r in rows if r["key_hash"] == hashlib.sha256(key.encode()).hexdigest())

    assert re.fullmatch(r"[0-9a-f]{64}", row["key_hash"])
    assert row["prefix"] == key[:12]
    assert row["scopes"] == ["read:aircraft", "read:squawks"]
    secret_part = key[12:]
    for r in rows:  # no column of any key row holds the key, or the part not shown
        for column, value in r.items():
            assert key not in str(value), column
            assert secret_part not in str(value), column
            assert key.removeprefix("svc_pk_") not in str(value), column


async def test_issuing_a_key_without_scopes_is_refused(org: Org) -> None:
    async with org.engine.begin() as conn:
        with pytest.raises(ApiError) as refused:
            await issue_key(conn, org.id, name="none", scopes=[], now=T0)
    assert refused.value.status == 422
    assert refused.value.code == "API_KEY_SCOPES_REQUIRED"


async def _last_used(org: Org, key: str) -> datetime | None:
    async with org.engine.connect() as conn:
        return await conn.scalar(
            select(ApiKey.last_used_at).where(ApiKey.key_hash == token_digest(key))
        )


async def test_last_used_at_is_written_at_most_once_a_minute(
    client: httpx.AsyncClient, services: Services, org: Org, clock: FakeClock
) -> None:
    key = await org.key_with("read:aircraft")
    assert await _last_used(org, key) is None
    first = clock.now()

    assert (await client.get(AIRCRAFT, headers=bearer(key))).status_code == 200
    assert await _last_used(org, key) == first

    clock.advance(seconds=30)
    await client.get(AIRCRAFT, headers=bearer(key))
    clock.advance(seconds=29)
    await client.get(AIRCRAFT, headers=bearer(key))
    assert await _last_used(org, key) == first

    clock.advance(seconds=1)
    await client.get(AIRCRAFT, headers=bearer(key))
    assert clock.now() == datetime(2026, 5, 4, 10, 1, 30, tzinfo=UTC)
    assert await _last_used(org, key) == clock.now()

    # A second app (another process) goes by the stored time, not its own memory.
    clock.advance(seconds=20)
    transport = httpx.ASGITransport(app=create_app(services), raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="https://hangar.example") as c2:
        assert (await c2.get(AIRCRAFT, headers=bearer(key))).status_code == 200
        assert await _last_used(org, key) == datetime(2026, 5, 4, 10, 1, 30, tzinfo=UTC)
        clock.advance(seconds=40)
        await c2.get(AIRCRAFT, headers=bearer(key))
        assert await _last_used(org, key) == datetime(2026, 5, 4, 10, 2, 30, tzinfo=UTC)


async def test_last_used_at_is_per_key(
    client: httpx.AsyncClient, org: Org, clock: FakeClock
) -> None:
    one = await org.key_with("read:aircraft")
    two = await org.key_with("read:aircraft")
    await client.get(AIRCRAFT, headers=bearer(one))
    clock.advance(seconds=10)
    await client.get(AIRCRAFT, headers=bearer(two))
    assert await _last_used(org, one) == datetime(2026, 5, 4, 10, 0, 30, tzinfo=UTC)
    assert await _last_used(org, two) == datetime(2026, 5, 4, 10, 0, 40, tzinfo=UTC)
