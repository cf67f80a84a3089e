"""/api/orgs/{org_id}/webhooks: managing subscriptions, Enable, Test, the delivery log.

The actions are webhooks/service.py's, shared with the Org Settings screens; these routes
only present them as JSON."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from starlette.responses import Response

from hangar.kit.params import Digits
from hangar.kit.responses import json_response
from hangar.kit.routing import ServicesDep, path_id
from hangar.orgs.access import Actor, acting
from hangar.orgs.capabilities import ORG_SETTINGS
from hangar.webhooks import service
from hangar.webhooks.service import NewSubscription, SubscriptionEdit
from hangar.webhooks.subscriptions import SUBSCRIPTION

router = APIRouter(prefix="/api/orgs/{org_id}/webhooks", include_in_schema=False)
Admin = Annotated[Actor, acting(ORG_SETTINGS)]


@router.get("")
async def list_subscriptions(services: ServicesDep, actor: Admin) -> Response:
    return json_response(await service.list_all(services, actor.org_id))


@router.post("", status_code=201)
async def create_subscription(
    services: ServicesDep, actor: Admin, body: NewSubscription
) -> Response:
    return json_response(await service.create(services, actor.org_id, body), 201)


@router.get("/{sub_id}")
async def get_subscription(services: ServicesDep, actor: Admin, sub_id: str) -> Response:
    target = path_id(sub_id, SUBSCRIPTION)
    return json_response(await service.get(services, actor.org_id, target))


@router.patch("/{sub_id}")
async def edit_subscription(
    services: ServicesDep, actor: Admin, sub_id: str, body: SubscriptionEdit
) -> Response:
    target = path_id(sub_id, SUBSCRIPTION)
    return json_response(await service.edit(services, actor.org_id, target, body))


@router.delete("/{sub_id}", status_code=204)
async def delete_subscription(services: ServicesDep, actor: Admin, sub_id: str) -> Response:
    await service.delete(services, actor.org_id, path_id(sub_id, SUBSCRIPTION))
    return Response(status_code=204)


@router.post("/{sub_id}/enable")
async def enable_subscription(services: ServicesDep, actor: Admin, sub_id: str) -> Response:
    target = path_id(sub_id, SUBSCRIPTION)
    return json_response(await service.enable(services, actor.org_id, target))


@router.post("/{sub_id}/test", status_code=202)
async def test_subscription(services: ServicesDep, actor: Admin, sub_id: str) -> Response:
    target = path_id(sub_id, SUBSCRIPTION)
    delivery_id = await service.fire_test(services, actor.org_id, target)
    return json_response({"delivery_id": str(delivery_id)}, 202)


@router.get("/{sub_id}/deliveries")
async def list_deliveries(
    services: ServicesDep,
    actor: Admin,
    sub_id: str,
    limit: Annotated[int, Query(ge=1, le=200), Digits] = 50,
) -> Response:
    target = path_id(sub_id, SUBSCRIPTION)
    found = await service.deliveries(services, actor.org_id, target, limit)
    return json_response(found)
