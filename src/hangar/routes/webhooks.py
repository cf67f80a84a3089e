"""/api/orgs/{org_id}/webhooks: managing subscriptions, Enable, Test, the delivery log,
Redeliver, health.

The actions are webhooks/service.py's, shared with the Org Settings screens; these routes
only present them as JSON, in the request's one transaction."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from starlette.responses import Response

from hangar.http.access import acting
from hangar.http.responses import json_response
from hangar.http.routing import ORG_PREFIX, JsonRoute, Now, ServicesDep, Tx, no_content, path_id
from hangar.kit.params import Digits
from hangar.orgs.actors import Actor
from hangar.orgs.capabilities import ORG_SETTINGS
from hangar.webhooks import service
from hangar.webhooks.service import DELIVERY, SUBSCRIPTION, NewSubscription, SubscriptionEdit

router = APIRouter(prefix=f"{ORG_PREFIX}/webhooks", include_in_schema=False, route_class=JsonRoute)
Admin = Annotated[Actor, acting(ORG_SETTINGS)]


@router.get("")
async def list_subscriptions(actor: Admin, conn: Tx) -> Response:
    return json_response(await service.list_all(conn, actor.org_id))


@router.post("", status_code=201)
async def create_subscription(
    services: ServicesDep, actor: Admin, conn: Tx, now: Now, body: NewSubscription
) -> Response:
    return json_response(await service.create(conn, services, actor.org_id, body, now), 201)


@router.get("/{sub_id}")
async def get_subscription(actor: Admin, conn: Tx, sub_id: str) -> Response:
    return json_response(await service.get(conn, actor.org_id, path_id(sub_id, SUBSCRIPTION)))


@router.patch("/{sub_id}")
async def edit_subscription(
    services: ServicesDep, actor: Admin, conn: Tx, now: Now, sub_id: str, body: SubscriptionEdit
) -> Response:
    target = path_id(sub_id, SUBSCRIPTION)
    return json_response(await service.edit(conn, services, actor.org_id, target, body, now))


@router.delete("/{sub_id}", status_code=204)
async def delete_subscription(actor: Admin, conn: Tx, now: Now, sub_id: str) -> Response:
    await service.delete(conn, actor.org_id, path_id(sub_id, SUBSCRIPTION), now)
    return no_content()


@router.post("/{sub_id}/enable")
async def enable_subscription(actor: Admin, conn: Tx, now: Now, sub_id: str) -> Response:
    target = path_id(sub_id, SUBSCRIPTION)
    return json_response(await service.enable(conn, actor.org_id, target, now))


@router.post("/{sub_id}/test", status_code=202)
async def test_subscription(
    services: ServicesDep, actor: Admin, conn: Tx, now: Now, sub_id: str
) -> Response:
    target = path_id(sub_id, SUBSCRIPTION)
    delivery_id = await service.fire_test(conn, services, actor.org_id, target, now)
    return json_response({"delivery_id": str(delivery_id)}, 202)


@router.get("/{sub_id}/deliveries")
async def list_deliveries(
    actor: Admin,
    conn: Tx,
    sub_id: str,
    limit: Annotated[int, Query(ge=1, le=200), Digits] = 50,
) -> Response:
    target = path_id(sub_id, SUBSCRIPTION)
    return json_response(await service.deliveries(conn, actor.org_id, target, limit))


@router.get("/{sub_id}/health")
async def subscription_health(
    services: ServicesDep, actor: Admin, conn: Tx, now: Now, sub_id: str
) -> Response:
    target = path_id(sub_id, SUBSCRIPTION)
    return json_response(
        await service.subscription_health(conn, services, actor.org_id, target, now)
    )


@router.post("/{sub_id}/deliveries/{delivery_id}/redeliver", status_code=202)
async def redeliver(
    services: ServicesDep, actor: Admin, conn: Tx, now: Now, sub_id: str, delivery_id: str
) -> Response:
    target = path_id(sub_id, SUBSCRIPTION)
    delivery = path_id(delivery_id, DELIVERY)
    redelivery_id = await service.redeliver(
        conn, services, actor.org_id, target, delivery, actor.user_id, now
    )
    return json_response({"delivery_id": str(delivery), "redelivery_id": str(redelivery_id)}, 202)
