"""A key is the organization's and the account's: the same key sent by the other
organization's admin, or by another admin of the same one, is a key of its own, runs its own
request and never replays our answer (which holds our webhook's secret)."""

from __future__ import annotations

import httpx
from sqlalchemy.ext.asyncio import AsyncEngine

from hangar.kit.container import Services
from hangar.webhooks.models import Subscription
from tests.fixtures.clients import signed_in_as
from tests.fixtures.factories import Org
from tests.fixtures.idempotency import NEW_WEBHOOK, count, keyed, keys_of, webhooks


async def test_the_other_organizations_same_key_is_its_own(
    boss: httpx.AsyncClient,
    their_boss: httpx.AsyncClient,
    org: Org,
    other: Org,
    engine: AsyncEngine,
) -> None:
    ours = await boss.post(webhooks(org), json=NEW_WEBHOOK, headers=keyed("shared"))
    theirs = await their_boss.post(webhooks(other), json=NEW_WEBHOOK, headers=keyed("shared"))

    assert ours.status_code == theirs.status_code == 201
    assert "Idempotent-Replayed" not in theirs.headers
    assert theirs.json()["secret"] != ours.json()["secret"]
    assert await count(engine, Subscription, org) == await count(engine, Subscription, other) == 1
    assert [r.user_id for r in await keys_of(engine, org)] == [org.admin_id]
    assert [r.user_id for r in await keys_of(engine, other)] == [other.admin_id]

    # Each replays its own answer only.
    again = await their_boss.post(webhooks(other), json=NEW_WEBHOOK, headers=keyed("shared"))
    assert again.content == theirs.content


async def test_another_admins_same_key_is_their_own(
    boss: httpx.AsyncClient, org: Org, services: Services, engine: AsyncEngine
) -> None:
    colleague = await org.member("admin")
    ours = await boss.post(webhooks(org), json=NEW_WEBHOOK, headers=keyed("k-1"))
    async with signed_in_as(services, colleague) as them:
        theirs = await them.post(webhooks(org), json=NEW_WEBHOOK, headers=keyed("k-1"))

    assert theirs.status_code == 201
    assert "Idempotent-Replayed" not in theirs.headers
    assert theirs.json()["id"] != ours.json()["id"]
    assert await count(engine, Subscription, org) == 2
