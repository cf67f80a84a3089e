"""The same management POST sent again with the same Idempotency-Key is answered with the
first answer and `Idempotent-Replayed: true`, and done once (issue 42: two POSTs with one key
made two subscriptions; reloading after Rotate secret rotated again)."""

from __future__ import annotations

import json
import logging
import uuid

import httpx
import pytest
from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncEngine

from hangar.fleet.models import Aircraft
from hangar.foundation.crypto import SecretUnreadable
from hangar.idempotency import replay
from hangar.keys.models import ApiKey
from hangar.kit.container import Services
from hangar.orgs.models import Invitation
from hangar.webhooks.models import Subscription
from tests.fixtures.factories import Org
from tests.fixtures.idempotency import (
    NEW_KEY,
    NEW_WEBHOOK,
    api_keys,
    count,
    keyed,
    keys_of,
    webhooks,
)

REPLAYED = "Idempotent-Replayed"


def same_answer(first: httpx.Response, again: httpx.Response) -> None:
    assert again.status_code == first.status_code
    assert again.content == first.content
    assert again.headers["content-type"] == first.headers["content-type"]
    assert again.headers[REPLAYED] == "true"
    assert REPLAYED not in first.headers
    assert again.headers["cache-control"] == "no-store"  # it holds a secret, as the first


async def test_a_webhook_created_twice_with_one_key_is_one_subscription(
    boss: httpx.AsyncClient, org: Org, engine: AsyncEngine
) -> None:
    first = await boss.post(webhooks(org), json=NEW_WEBHOOK, headers=keyed("create-1"))
    assert first.status_code == 201, first.text
    # The same request, its JSON spaced and ordered otherwise: still the same request.
    body = json.dumps(dict(reversed(NEW_WEBHOOK.items())), indent=2)
    again = await boss.post(
        webhooks(org),
        content=body,
        headers={**keyed("create-1"), "Content-Type": "application/json"},
    )

    same_answer(first, again)
    assert again.json()["secret"] == first.json()["secret"]  # shown again, as Stripe does
    assert await count(engine, Subscription, org) == 1


async def test_without_a_key_each_post_is_done(
    boss: httpx.AsyncClient, org: Org, engine: AsyncEngine
) -> None:
    for _ in range(2):
        response = await boss.post(webhooks(org), json=NEW_WEBHOOK)
        assert response.status_code == 201
        assert REPLAYED not in response.headers
    assert await count(engine, Subscription, org) == 2
    assert await keys_of(engine, org) == []


async def test_rotate_secret_sent_again_rotates_once(
    boss: httpx.AsyncClient, org: Org, engine: AsyncEngine, services: Services
) -> None:
    made = (await boss.post(webhooks(org), json=NEW_WEBHOOK)).json()
    rotate = webhooks(org, made["id"], "rotate-secret")

    first = await boss.post(rotate, headers=keyed("rotate-1"))
    again = await boss.post(rotate, headers=keyed("rotate-1"))

    assert first.status_code == 200, first.text
    same_answer(first, again)
    async with engine.connect() as conn:
        sub = (
            await conn.execute(select(Subscription).where(Subscription.id == uuid.UUID(made["id"])))
        ).one()
    # The secret now signing is the first rotation's, and the one it replaced is the
    # creation's: the receiver that took the new secret from the first answer still verifies.
    assert services.secret_box.open(sub.secret_encrypted) == first.json()["secret"]
    assert services.secret_box.open(sub.previous_secret_encrypted) == made["secret"]


async def test_an_api_key_created_twice_with_one_key_is_one_key(
    boss: httpx.AsyncClient, org: Org, engine: AsyncEngine
) -> None:
    before = await count(engine, ApiKey, org)
    first = await boss.post(api_keys(org), json=NEW_KEY, headers=keyed("key-1"))
    again = await boss.post(api_keys(org), json=NEW_KEY, headers=keyed("key-1"))
    assert first.status_code == 201, first.text
    same_answer(first, again)
    assert await count(engine, ApiKey, org) == before + 1

    # Rotating it, and revoking it, likewise once each.
    key_id = first.json()["id"]
    rotated = [
        await boss.post(api_keys(org, key_id, "rotate"), headers=keyed("key-2")) for _ in "ab"
    ]
    same_answer(*rotated)
    assert await count(engine, ApiKey, org) == before + 2
    revoked = [
        await boss.post(api_keys(org, key_id, "revoke"), headers=keyed("key-3")) for _ in "ab"
    ]
    assert revoked[0].status_code == 200, revoked[0].text
    same_answer(*revoked)


async def test_an_invitation_sent_again_is_one_invitation(
    boss: httpx.AsyncClient, org: Org, engine: AsyncEngine
) -> None:
    # The invitation's own transaction (orgs.service.invite), not the request's: kept alike.
    body = {"email": "new@example.org", "first_name": "N", "last_name": "P", "role": "member"}
    before = await count(engine, Invitation, org)
    first = await boss.post(f"/api/orgs/{org.id}/members", json=body, headers=keyed("inv"))
    again = await boss.post(f"/api/orgs/{org.id}/members", json=body, headers=keyed("inv"))
    assert first.status_code == 201, first.text
    same_answer(first, again)
    assert await count(engine, Invitation, org) == before + 1


async def test_a_product_action_is_done_once_too(
    boss: httpx.AsyncClient, org: Org, engine: AsyncEngine
) -> None:
    # Every POST under /api/orgs/{org_id} acts through `acting`: the product's actions too.
    path = f"/api/orgs/{org.id}/aircraft"
    body = {"tail_number": "N12345", "aircraft_type": "C172"}
    first = await boss.post(path, json=body, headers=keyed("plane"))
    again = await boss.post(path, json=body, headers=keyed("plane"))
    assert first.status_code == 201, first.text
    same_answer(first, again)
    assert await count(engine, Aircraft, org) == 1


async def test_the_same_key_with_another_body_or_route_is_refused(
    boss: httpx.AsyncClient, org: Org, engine: AsyncEngine
) -> None:
    first = await boss.post(webhooks(org), json=NEW_WEBHOOK, headers=keyed("once"))
    assert first.status_code == 201

    other_body = await boss.post(
        webhooks(org), json={**NEW_WEBHOOK, "name": "other"}, headers=keyed("once")
    )
    other_route = await boss.post(api_keys(org), json=NEW_KEY, headers=keyed("once"))

    for refused in (other_body, other_route):
        assert refused.status_code == 422
        assert refused.json()["code"] == "IDEMPOTENCY_KEY_REUSED"
        assert set(refused.json()) >= {"detail", "code"}
        assert REPLAYED not in refused.headers
    assert await count(engine, Subscription, org) == 1
    # The first answer is still the key's.
    again = await boss.post(webhooks(org), json=NEW_WEBHOOK, headers=keyed("once"))
    same_answer(first, again)


async def test_a_4xx_the_action_gave_is_kept_and_replayed(
    boss: httpx.AsyncClient, org: Org
) -> None:
    missing = webhooks(org, "00000000-0000-4000-8000-000000000000", "rotate-secret")
    first = await boss.post(missing, headers=keyed("gone"))
    again = await boss.post(missing, headers=keyed("gone"))
    assert first.status_code == 404
    same_answer(first, again)


async def test_a_409_is_not_kept_so_the_same_request_can_succeed_later(
    boss: httpx.AsyncClient, org: Org, engine: AsyncEngine
) -> None:
    made = (await boss.post(webhooks(org), json=NEW_WEBHOOK)).json()
    async with engine.begin() as conn:
        await conn.execute(
            update(Subscription)
            .where(Subscription.id == uuid.UUID(made["id"]))
            .values(enabled=False)
        )
    recover = webhooks(org, made["id"], "recover")
    body = {"since": "2026-05-04T09:00:00Z"}

    refused = await boss.post(recover, json=body, headers=keyed("recover"))
    assert refused.status_code == 409
    assert refused.json()["code"] == "WEBHOOK_DISABLED"
    assert await keys_of(engine, org) == []

    assert (await boss.post(webhooks(org, made["id"], "enable"))).status_code == 200
    done = await boss.post(recover, json=body, headers=keyed("recover"))
    assert done.status_code == 202, done.text
    assert REPLAYED not in done.headers


async def test_refusals_before_the_action_keep_nothing(
    boss: httpx.AsyncClient, org: Org, other: Org, engine: AsyncEngine
) -> None:
    # Not a member of `other` (404), and no CSRF header (403): no key is claimed.
    elsewhere = await boss.post(webhooks(other), json=NEW_WEBHOOK, headers=keyed("k"))
    assert elsewhere.status_code == 404
    no_csrf = await boss.post(
        webhooks(org), json=NEW_WEBHOOK, headers={**keyed("k"), "X-CSRF-Token": "wrong"}
    )
    assert no_csrf.status_code == 403
    assert await keys_of(engine, org) == []
    assert await keys_of(engine, other) == []
    # The key is free for the request it was meant for.
    assert (await boss.post(webhooks(org), json=NEW_WEBHOOK, headers=keyed("k"))).status_code == 201


async def test_the_kept_answer_is_sealed_at_rest_and_never_logged(
    boss: httpx.AsyncClient,
    org: Org,
    engine: AsyncEngine,
    services: Services,
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.DEBUG):
        first = await boss.post(webhooks(org), json=NEW_WEBHOOK, headers=keyed("sealed"))
        await boss.post(webhooks(org), json=NEW_WEBHOOK, headers=keyed("sealed"))
    secret = first.json()["secret"]
    assert all(secret not in record.getMessage() for record in caplog.records)
    [row] = await keys_of(engine, org)
    assert (row.state, row.status) == ("done", 201)
    assert secret not in row.answer_sealed  # nor in any column
    assert all(secret not in str(value) for value in row)
    # Sealed under a purpose of its own: the webhook secrets' box does not open it.
    with pytest.raises(SecretUnreadable):
        services.secret_box.open(row.answer_sealed)
    kept = replay.Answer.opened(
        replay.answer_box(services.settings), replay.Kept(201, row.answer_sealed)
    )
    assert kept.body == first.content
