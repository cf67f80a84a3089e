"""An entry is written in the action's own transaction: an action that fails or rolls back
leaves no entry, and an entry that cannot be written undoes the action with it."""

from __future__ import annotations

import httpx
import pytest
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncConnection

from hangar.audit import commands
from hangar.audit.models import AuditEntry
from hangar.audit.service import OPERATOR
from hangar.keys import service as keys
from hangar.keys.models import ApiKey
from hangar.keys.service import NewKey
from hangar.kit.container import Services
from tests.fixtures.audit import stored
from tests.fixtures.factories import Org
from tests.fixtures.fakes import FakeClock


async def key_count(services: Services, org: Org) -> int:
    """The organization's keys besides the one its fixture made."""
    async with services.engine.connect() as conn:
        found = await conn.scalar(
            select(func.count()).where(ApiKey.org_id == org.id, ApiKey.name.in_(("gone", "x")))
        )
    return int(found or 0)


async def test_an_action_rolled_back_leaves_no_entry(
    services: Services, org: Org, clock: FakeClock
) -> None:
    seen: list[int] = []

    async def fails_after_its_write() -> None:
        async with services.engine.begin() as conn:
            body = NewKey(name="gone", scopes=["read:aircraft"])
            await keys.create(conn, org.id, OPERATOR, body, clock.now())
            seen.append(len(await stored_in(conn, org)))  # written, in this transaction
            raise RuntimeError("the action fails after its write")

    with pytest.raises(RuntimeError):
        await fails_after_its_write()
    assert seen == [1]
    assert await stored(services.engine, org.id) == []
    assert await key_count(services, org) == 0


async def stored_in(conn: AsyncConnection, org: Org) -> list[object]:
    """The organization's entries as `conn`'s own transaction sees them."""
    rows = await conn.execute(select(AuditEntry.id).where(AuditEntry.org_id == org.id))
    return list(rows.all())


async def test_refused_actions_record_nothing(
    admin: httpx.AsyncClient, org: Org, services: Services
) -> None:
    base = f"/api/orgs/{org.id}"
    # Requiring two-factor without having it: 409, nothing changed, nothing recorded.
    refused = await admin.patch(base, json={"require_two_factor": True})
    assert refused.status_code == 409
    made = (
        await admin.post(f"{base}/api-keys", json={"name": "k", "scopes": ["read:aircraft"]})
    ).json()
    # Revoking twice records once; a revoked key cannot be rotated (409).
    assert (await admin.post(f"{base}/api-keys/{made['id']}/revoke")).status_code == 200
    assert (await admin.post(f"{base}/api-keys/{made['id']}/revoke")).status_code == 200
    assert (await admin.post(f"{base}/api-keys/{made['id']}/rotate")).status_code == 409
    # An invitation refused (not an email): 422, nothing recorded.
    bad = {"email": "nope", "first_name": "A", "last_name": "B", "role": "member"}
    assert (await admin.post(f"{base}/members", json=bad)).status_code == 422
    recorded = sorted(r["action"] for r in await stored(services.engine, org.id))
    assert recorded == ["key.created", "key.revoked"]


async def test_an_entry_that_cannot_be_written_undoes_the_action(
    admin: httpx.AsyncClient, org: Org, services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refused(details: object) -> dict[str, object]:
        raise ValueError("the entry is refused")

    monkeypatch.setattr(commands, "_checked", refused)
    made = await admin.post(
        f"/api/orgs/{org.id}/api-keys", json={"name": "x", "scopes": ["read:aircraft"]}
    )
    assert made.status_code == 500
    assert await key_count(services, org) == 0
    assert await stored(services.engine, org.id) == []
