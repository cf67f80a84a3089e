"""The subscription actions: list, get, create, edit, delete, enable, Test, the delivery log.

Each action once, for the management API (webhooks/routes.py) and the Org Settings screens
(web/webhooks.py) alike: one implementation, two presentations. Validation, scoping and the
transaction live here, not in either caller.
"""

from __future__ import annotations

import uuid
from typing import Any

from pydantic import Field

from hangar.kit.bodies import RequestBody
from hangar.kit.errors import ApiError
from hangar.kit.ratelimit import Limit
from hangar.kit.services import Services
from hangar.webhooks import catalogue, outbox
from hangar.webhooks import subscriptions as subs

TEST_FIRE_LIMITS = (Limit(10, 3600, "10 test fires per hour"),)


class NewSubscription(RequestBody):
    name: str = Field(min_length=1, max_length=200)
    url: str = Field(max_length=4096)
    events: list[str] = Field(max_length=20)


class SubscriptionEdit(RequestBody):
    name: str | None = Field(None, min_length=1, max_length=200)
    url: str | None = Field(None, max_length=4096)
    events: list[str] | None = Field(None, max_length=20)


async def list_all(services: Services, org_id: uuid.UUID) -> list[dict[str, Any]]:
    async with services.engine.connect() as conn:
        return await subs.list_subscriptions(conn, org_id)


async def get(services: Services, org_id: uuid.UUID, sub_id: uuid.UUID) -> dict[str, Any]:
    async with services.engine.connect() as conn:
        return await subs.get_subscription(conn, org_id, sub_id)


async def deliveries(
    services: Services, org_id: uuid.UUID, sub_id: uuid.UUID, limit: int
) -> list[dict[str, Any]]:
    async with services.engine.connect() as conn:
        return await subs.recent_deliveries(conn, org_id, sub_id, limit)


async def with_deliveries(
    services: Services, org_id: uuid.UUID, sub_id: uuid.UUID, limit: int
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """One subscription and its latest deliveries, read on one connection."""
    async with services.engine.connect() as conn:
        sub = await subs.get_subscription(conn, org_id, sub_id)
        return sub, await subs.recent_deliveries(conn, org_id, sub_id, limit)


async def create(services: Services, org_id: uuid.UUID, body: NewSubscription) -> dict[str, Any]:
    async with services.engine.begin() as conn:
        return await subs.create_subscription(
            conn,
            org_id,
            name=body.name,
            url=body.url,
            events=body.events,
            box=services.secret_box,
            resolver=services.resolver,
            now=services.clock.now(),
        )


async def edit(
    services: Services, org_id: uuid.UUID, sub_id: uuid.UUID, body: SubscriptionEdit
) -> dict[str, Any]:
    async with services.engine.begin() as conn:
        return await subs.edit_subscription(
            conn,
            org_id,
            sub_id,
            name=body.name,
            url=body.url,
            events=body.events,
            resolver=services.resolver,
            now=services.clock.now(),
        )


async def delete(services: Services, org_id: uuid.UUID, sub_id: uuid.UUID) -> None:
    async with services.engine.begin() as conn:
        await subs.delete_subscription(conn, org_id, sub_id, services.clock.now())


async def enable(services: Services, org_id: uuid.UUID, sub_id: uuid.UUID) -> dict[str, Any]:
    async with services.engine.begin() as conn:
        return await subs.enable_subscription(conn, org_id, sub_id, services.clock.now())


async def fire_test(services: Services, org_id: uuid.UUID, sub_id: uuid.UUID) -> uuid.UUID:
    """The Test action: queue a signed test.ping for one subscription (10 per hour); a
    disabled one gets its counter reset."""
    now = services.clock.now()
    async with services.engine.begin() as conn:
        sub = await subs.get_subscription(conn, org_id, sub_id, lock=True)
        refused = await services.limiter.hit(f"test-fire:{sub_id}", TEST_FIRE_LIMITS, now)
        if refused is not None:
            raise ApiError(429, "RATE_LIMITED", f"Test limit reached: {refused.label}")
        if not sub["enabled"]:
            await subs.reset_failures(conn, sub_id)
        return await outbox.enqueue_to(
            conn,
            org_id,
            sub_id,
            catalogue.TEST_PING,
            catalogue.ping(f"Test delivery to {sub['name']} from hangar"),
            now,
        )
