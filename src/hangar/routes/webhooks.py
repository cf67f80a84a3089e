"""/api/orgs/{org_id}/webhooks: managing subscriptions, Enable, rotating the secret, Test,
the delivery log, Redeliver, Recover, health.

The actions are webhooks/service.py's, shared with the Org Settings screens; these routes
only present them as JSON, in the request's one transaction."""

from __future__ import annotations

from typing import Annotated
from urllib.parse import urlencode

from fastapi import APIRouter, Query, Request
from starlette.responses import Response

from hangar.http.access import acting
from hangar.http.responses import json_response
from hangar.http.routing import ORG_PREFIX, JsonRoute, Now, ServicesDep, Tx, no_content, path_id
from hangar.kit.params import Digits
from hangar.orgs.actors import Actor
from hangar.orgs.capabilities import ORG_SETTINGS
from hangar.webhooks import service
from hangar.webhooks.service import (
    DELIVERY,
    SUBSCRIPTION,
    EventToTest,
    NewSubscription,
    RecoverBody,
    SecretRotation,
    SubscriptionEdit,
)

router = APIRouter(prefix=f"{ORG_PREFIX}/webhooks", include_in_schema=False, route_class=JsonRoute)
Admin = Annotated[Actor, acting(ORG_SETTINGS)]


@router.get("")
async def list_subscriptions(actor: Admin, conn: Tx, now: Now) -> Response:
    return json_response(await service.list_all(conn, actor.org_id, now))


@router.post("", status_code=201)
async def create_subscription(
    services: ServicesDep, actor: Admin, conn: Tx, now: Now, body: NewSubscription
) -> Response:
    made = await service.create(conn, services, actor.org_id, body, now, by=actor.who)
    return json_response(made, 201)


@router.get("/{sub_id}")
async def get_subscription(actor: Admin, conn: Tx, now: Now, sub_id: str) -> Response:
    target = path_id(sub_id, SUBSCRIPTION)
    return json_response(await service.get(conn, actor.org_id, target, now=now))


@router.patch("/{sub_id}")
async def edit_subscription(
    services: ServicesDep, actor: Admin, conn: Tx, now: Now, sub_id: str, body: SubscriptionEdit
) -> Response:
    target = path_id(sub_id, SUBSCRIPTION)
    edited = await service.edit(conn, services, actor.org_id, target, body, now, by=actor.who)
    return json_response(edited)


@router.delete("/{sub_id}", status_code=204)
async def delete_subscription(actor: Admin, conn: Tx, now: Now, sub_id: str) -> Response:
    await service.delete(conn, actor.org_id, path_id(sub_id, SUBSCRIPTION), now, by=actor.who)
    return no_content()


@router.post("/{sub_id}/enable")
async def enable_subscription(actor: Admin, conn: Tx, now: Now, sub_id: str) -> Response:
    target = path_id(sub_id, SUBSCRIPTION)
    return json_response(await service.enable(conn, actor.org_id, target, now, by=actor.who))


# 200, not 201: the subscription keeps its id and nothing new is addressable (an API key's
# rotation answers 201 for the new key it issues). No body: the default grace.
@router.post("/{sub_id}/rotate-secret")
async def rotate_secret(
    services: ServicesDep,
    actor: Admin,
    conn: Tx,
    now: Now,
    sub_id: str,
    body: SecretRotation | None = None,
) -> Response:
    target = path_id(sub_id, SUBSCRIPTION)
    rotated = await service.rotate_secret(
        conn, services.secret_box, actor.org_id, target, body or SecretRotation(), now, by=actor.who
    )
    return json_response(rotated)


# No body, or `{}`: test.ping, as before `event` was added.
@router.post("/{sub_id}/test", status_code=202)
async def send_test(
    services: ServicesDep,
    actor: Admin,
    conn: Tx,
    now: Now,
    sub_id: str,
    body: EventToTest | None = None,
) -> Response:
    target = path_id(sub_id, SUBSCRIPTION)
    event = (body or EventToTest()).event
    delivery_id = await service.fire_test(
        conn, services, actor.org_id, target, now, by=actor.who, event=event
    )
    return json_response({"delivery_id": str(delivery_id)}, 202)


@router.get("/{sub_id}/deliveries")
async def list_deliveries(
    request: Request,
    services: ServicesDep,
    actor: Admin,
    conn: Tx,
    sub_id: str,
    limit: Annotated[int, Query(ge=1, le=200), Digits] = 50,
    status: str | None = None,
    event: str | None = None,
    event_id: str | None = None,
    resource_id: str | None = None,
    since: str | None = None,
    until: str | None = None,
    before: str | None = None,
) -> Response:
    # The body stays the bare array (interfaces.md §4): the next page is in the Link header,
    # as GitHub's paged lists say it, with every filter as given.
    target = path_id(sub_id, SUBSCRIPTION)
    filters = service.log_filters(status, event, event_id, resource_id, since, until)
    found = await service.deliveries(
        conn, services.cursor_keys, actor.org_id, target, limit, filters, before
    )
    response = json_response(found.deliveries)
    if found.older is not None:
        query = urlencode({"limit": limit, **filters.query(before=found.older)})
        response.headers["Link"] = f'<{request.url.path}?{query}>; rel="next"'
    return response


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
        conn, services, actor.org_id, target, delivery, now, by=actor.who
    )
    return json_response({"delivery_id": str(delivery), "redelivery_id": str(redelivery_id)}, 202)


# 202: the deliveries are queued, not yet sent; `deliveries` says how many (0: nothing missed).
@router.post("/{sub_id}/recover", status_code=202)
async def recover(
    services: ServicesDep, actor: Admin, conn: Tx, now: Now, sub_id: str, body: RecoverBody
) -> Response:
    target = path_id(sub_id, SUBSCRIPTION)
    recovered = await service.recover(conn, services, actor.org_id, target, body, now, by=actor.who)
    return json_response(recovered.view(), 202)
