"""/api/orgs/{org_id}/webhooks: managing subscriptions, Enable, Test, the delivery log."""

from __future__ import annotations

import uuid
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from pydantic import Field
from starlette.responses import Response

from hangar.auth.ratelimit import Limit
from hangar.kit.bodies import RequestBody
from hangar.kit.errors import ApiError
from hangar.kit.params import Digits
from hangar.kit.responses import json_response
from hangar.kit.routing import path_id, services_of
from hangar.orgs.access import Actor, acting
from hangar.orgs.capabilities import ORG_SETTINGS
from hangar.services import Services
from hangar.webhooks import catalogue, outbox
from hangar.webhooks import subscriptions as subs

router = APIRouter(prefix="/api/orgs/{org_id}/webhooks", include_in_schema=False)
Admin = Annotated[Actor, acting(ORG_SETTINGS)]
TEST_FIRE_LIMITS = (Limit(10, 3600, "10 test fires per hour"),)


class NewSubscription(RequestBody):
    name: str = Field(min_length=1, max_length=200)
    url: str = Field(max_length=4096)
    events: list[str] = Field(max_length=20)


class SubscriptionEdit(RequestBody):
    name: str | None = Field(None, min_length=1, max_length=200)
    url: str | None = Field(None, max_length=4096)
    events: list[str] | None = Field(None, max_length=20)


@router.get("")
async def list_subscriptions(request: Request, actor: Admin) -> Response:
    async with services_of(request).engine.connect() as conn:
        return json_response(await subs.list_subscriptions(conn, actor.org_id))


# Each action once, for this API and the Org Settings screens alike (one implementation,
# two presentations): validation, scoping and the transaction live here, not in either.


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


@router.post("", status_code=201)
async def create_subscription(request: Request, actor: Admin, body: NewSubscription) -> Response:
    return json_response(await create(services_of(request), actor.org_id, body), 201)


@router.get("/{sub_id}")
async def get_subscription(request: Request, actor: Admin, sub_id: str) -> Response:
    async with services_of(request).engine.connect() as conn:
        return json_response(
            await subs.get_subscription(conn, actor.org_id, path_id(sub_id, subs.SUBSCRIPTION))
        )


@router.patch("/{sub_id}")
async def edit_subscription(
    request: Request, actor: Admin, sub_id: str, body: SubscriptionEdit
) -> Response:
    return json_response(
        await edit(services_of(request), actor.org_id, path_id(sub_id, subs.SUBSCRIPTION), body)
    )


@router.delete("/{sub_id}", status_code=204)
async def delete_subscription(request: Request, actor: Admin, sub_id: str) -> Response:
    await delete(services_of(request), actor.org_id, path_id(sub_id, subs.SUBSCRIPTION))
    return Response(status_code=204)


@router.post("/{sub_id}/enable")
async def enable_subscription(request: Request, actor: Admin, sub_id: str) -> Response:
    return json_response(
        await enable(services_of(request), actor.org_id, path_id(sub_id, subs.SUBSCRIPTION))
    )


async def fire_test(services: Services, org_id: uuid.UUID, sub_id: uuid.UUID) -> uuid.UUID:
    """The Test action, shared by this API and the Org Settings screens: queue a signed
    test.ping for one subscription (10 per hour); a disabled one gets its counter reset."""
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


@router.post("/{sub_id}/test", status_code=202)
async def test_subscription(request: Request, actor: Admin, sub_id: str) -> Response:
    delivery_id = await fire_test(
        services_of(request), actor.org_id, path_id(sub_id, subs.SUBSCRIPTION)
    )
    return json_response({"delivery_id": str(delivery_id)}, 202)


@router.get("/{sub_id}/deliveries")
async def list_deliveries(
    request: Request,
    actor: Admin,
    sub_id: str,
    limit: Annotated[int, Query(ge=1, le=200), Digits] = 50,
) -> Response:
    async with services_of(request).engine.connect() as conn:
        return json_response(
            await subs.recent_deliveries(
                conn, actor.org_id, path_id(sub_id, subs.SUBSCRIPTION), limit
            )
        )
