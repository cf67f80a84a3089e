"""While the first request with a key runs, the same key is answered 409
IDEMPOTENCY_KEY_IN_USE; a claim whose process died is taken over once ABANDONED_AFTER has
passed (the injected clock); a 5xx or a raised error lets the key go, so the same request runs
again."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from hangar.idempotency import replay
from hangar.idempotency.replay import ABANDONED_AFTER, Scope
from hangar.kit.container import Services
from hangar.webhooks import service as webhooks_service
from hangar.webhooks.models import Subscription
from tests.fixtures.factories import Org
from tests.fixtures.fakes import FakeClock
from tests.fixtures.idempotency import NEW_WEBHOOK, count, keyed, keys_of, webhooks

# How long a test waits for a request it holds to reach the action: an await on an event,
# bounded so that a broken test fails instead of hanging (not a sleep: it ends at once).
REACHED_S = 10


def held(monkeypatch: pytest.MonkeyPatch) -> tuple[asyncio.Event, asyncio.Event]:
    """webhooks.service.create held before it begins, until the test lets it go: (reached,
    go)."""
    reached, go = asyncio.Event(), asyncio.Event()
    real: Callable[..., Awaitable[Any]] = webhooks_service.create

    async def create(*args: Any, **kwargs: Any) -> Any:
        reached.set()
        await go.wait()
        return await real(*args, **kwargs)

    monkeypatch.setattr(webhooks_service, "create", create)
    return reached, go


async def test_the_same_key_while_the_first_runs_is_409_and_then_replays(
    boss: httpx.AsyncClient, org: Org, engine: AsyncEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    reached, go = held(monkeypatch)
    first = asyncio.create_task(boss.post(webhooks(org), json=NEW_WEBHOOK, headers=keyed("twice")))
    await asyncio.wait_for(reached.wait(), REACHED_S)

    second = await boss.post(webhooks(org), json=NEW_WEBHOOK, headers=keyed("twice"))
    assert second.status_code == 409
    assert second.json()["code"] == "IDEMPOTENCY_KEY_IN_USE"
    assert set(second.json()) == {"detail", "code"}

    go.set()
    answered = await first
    assert answered.status_code == 201, answered.text
    third = await boss.post(webhooks(org), json=NEW_WEBHOOK, headers=keyed("twice"))
    assert third.status_code == 201
    assert third.headers["Idempotent-Replayed"] == "true"
    assert third.content == answered.content
    assert await count(engine, Subscription, org) == 1


async def test_another_key_meanwhile_is_not_held_up(
    boss: httpx.AsyncClient, org: Org, engine: AsyncEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    reached, go = held(monkeypatch)
    first = asyncio.create_task(boss.post(webhooks(org), json=NEW_WEBHOOK, headers=keyed("a")))
    await asyncio.wait_for(reached.wait(), REACHED_S)
    reached.clear()
    second = asyncio.create_task(boss.post(webhooks(org), json=NEW_WEBHOOK, headers=keyed("b")))
    await asyncio.wait_for(reached.wait(), REACHED_S)  # it reached the action too
    go.set()
    assert [(await t).status_code for t in (first, second)] == [201, 201]
    assert await count(engine, Subscription, org) == 2


async def claim_as_a_dead_process(services: Services, org: Org, key: str) -> None:
    """The claim a process left when it died mid-action: the same request's."""
    same = replay.fingerprint("POST", webhooks(org), "", json.dumps(NEW_WEBHOOK).encode())
    scope = Scope(org.id, org.admin_id, key)
    claimed = await replay.claim(services.engine, scope, same, services.clock.now())
    assert isinstance(claimed, replay.Claimed)


async def test_a_dead_processs_claim_is_409_until_abandoned_then_taken_over(
    boss: httpx.AsyncClient, org: Org, services: Services, clock: FakeClock, engine: AsyncEngine
) -> None:
    await claim_as_a_dead_process(services, org, "orphan")

    clock.advance(seconds=ABANDONED_AFTER.total_seconds() - 1)
    waiting = await boss.post(webhooks(org), json=NEW_WEBHOOK, headers=keyed("orphan"))
    assert waiting.status_code == 409
    assert waiting.json()["code"] == "IDEMPOTENCY_KEY_IN_USE"
    # Another request with that key is still another request.
    other = await boss.post(
        webhooks(org), json={**NEW_WEBHOOK, "name": "b"}, headers=keyed("orphan")
    )
    assert other.status_code == 422

    clock.advance(seconds=1)
    taken = await boss.post(webhooks(org), json=NEW_WEBHOOK, headers=keyed("orphan"))
    assert taken.status_code == 201, taken.text
    assert "Idempotent-Replayed" not in taken.headers
    again = await boss.post(webhooks(org), json=NEW_WEBHOOK, headers=keyed("orphan"))
    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.content == taken.content
    assert await count(engine, Subscription, org) == 1


async def test_a_5xx_is_not_kept_and_the_same_request_runs_again(
    boss: httpx.AsyncClient, org: Org, engine: AsyncEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = webhooks_service.create

    async def broken(*args: Any, **kwargs: Any) -> Any:
        monkeypatch.setattr(webhooks_service, "create", real)  # once
        raise RuntimeError("hangar's own failure")

    monkeypatch.setattr(webhooks_service, "create", broken)
    failed = await boss.post(webhooks(org), json=NEW_WEBHOOK, headers=keyed("retry"))
    assert failed.status_code == 500
    assert await keys_of(engine, org) == []

    done = await boss.post(webhooks(org), json=NEW_WEBHOOK, headers=keyed("retry"))
    assert done.status_code == 201, done.text
    assert "Idempotent-Replayed" not in done.headers
    assert await count(engine, Subscription, org) == 1
