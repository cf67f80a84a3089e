"""/settings/{org_id}/webhooks: subscriptions, Enable, Test, the delivery log with the
subscription's health above it, and Redeliver.

Validation is the management API's own: its request models (webhooks.service) and then the
command functions (webhooks.subscriptions), whose refusals are shown beside the field they
concern. The secret exists in plain text only in the response to the creating POST.
"""

from __future__ import annotations

from typing import Any, TypedDict

from fastapi import APIRouter, Request
from sqlalchemy.ext.asyncio import AsyncConnection
from starlette.responses import Response

from hangar.http.routing import Now, ServicesDep, Tx, path_id
from hangar.web.access import Admin, AdminForm, AdminPage, Submitted
from hangar.web.events import EVENTS
from hangar.web.forms import submit
from hangar.web.health_chart import charts
from hangar.web.pages import PageRoute, redirect, render
from hangar.webhooks import service
from hangar.webhooks.catalogue import ALL_EVENTS
from hangar.webhooks.service import (
    DELIVERY,
    REDELIVERY_LIMITS,
    SUBSCRIPTION,
    NewSubscription,
    SubscriptionEdit,
    SubscriptionView,
    duration_words,
    percent_words,
)

router = APIRouter(prefix="/settings/{org_id}/webhooks", route_class=PageRoute)

DELIVERIES_SHOWN = 20


class Values(TypedDict):
    """What the subscription form shows in its fields."""

    name: str
    url: str
    events: list[str]


def status_words(sub: SubscriptionView) -> str:
    failures = sub["consecutive_failures"]
    if not sub["enabled"]:
        # Test resets the counter without enabling, so a disabled one may show zero.
        return (
            f"Disabled after {failures} consecutive failed deliveries" if failures else "Disabled"
        )
    if failures:
        return f"Enabled, {failures} consecutive failed deliveries"
    return "Enabled"


def _page(admin: Admin, **context: Any) -> dict[str, Any]:
    return admin.page(
        section="webhooks",
        status_words=status_words,
        events=EVENTS,
        all_events=ALL_EVENTS,
        **context,
    )


@router.get("")
async def list_subscriptions(request: Request, admin: AdminPage, conn: Tx) -> Response:
    found = await service.list_all(conn, admin.org_id)
    return render(
        request,
        "webhooks.html",
        **_page(admin, subs=found, done=request.query_params.get("done", "")),
    )


def _form(
    request: Request,
    admin: Admin,
    *,
    status: int = 200,
    sub: SubscriptionView | None = None,
    values: Values | None = None,
    errors: dict[str, str] | None = None,
) -> Response:
    values = values or (
        Values(name=sub["name"], url=sub["url"], events=sub["events"])
        if sub
        else Values(name="", url="", events=[])
    )
    return render(
        request,
        "webhook_form.html",
        status,
        **_page(admin, sub=sub, values=values, errors=errors or {}),
    )


def _posted(posted: Submitted) -> Values:
    return Values(
        name=posted.text("name").strip(),
        url=posted.text("url").strip(),
        events=posted.texts("events"),
    )


@router.get("/new")
async def new_form(request: Request, admin: AdminPage) -> Response:
    return _form(request, admin)


@router.post("/new")
async def create(
    request: Request, services: ServicesDep, posted: AdminForm, conn: Tx, now: Now
) -> Response:
    admin, values = posted.admin, _posted(posted)
    created, errors = await submit(
        NewSubscription,
        values,
        lambda body: service.create(conn, services, admin.org_id, body, now),
        "events",
    )
    if created is not None:
        return render(request, "webhook_secret.html", **_page(admin, sub=created))
    return _form(request, admin, status=422, values=values, errors=errors)


async def _one(conn: AsyncConnection, admin: Admin, sub_id: str) -> SubscriptionView:
    return await service.get(conn, admin.org_id, path_id(sub_id, SUBSCRIPTION))


@router.get("/{sub_id}/edit")
async def edit_form(request: Request, admin: AdminPage, conn: Tx, sub_id: str) -> Response:
    return _form(request, admin, sub=await _one(conn, admin, sub_id))


@router.post("/{sub_id}/edit")
async def edit(
    request: Request, services: ServicesDep, posted: AdminForm, conn: Tx, now: Now, sub_id: str
) -> Response:
    admin, values = posted.admin, _posted(posted)
    sub = await _one(conn, admin, sub_id)
    target = path_id(sub_id, SUBSCRIPTION)
    edited, errors = await submit(
        SubscriptionEdit,
        values,
        lambda body: service.edit(conn, services, admin.org_id, target, body, now),
        "events",
    )
    if edited is not None:
        return redirect(f"/settings/{admin.org_id}/webhooks?done=saved")
    return _form(request, admin, status=422, sub=sub, values=values, errors=errors)


@router.get("/{sub_id}/delete")
async def delete_form(request: Request, admin: AdminPage, conn: Tx, sub_id: str) -> Response:
    sub = await _one(conn, admin, sub_id)
    return render(request, "webhook_delete.html", **_page(admin, sub=sub))


@router.post("/{sub_id}/delete")
async def delete(posted: AdminForm, conn: Tx, now: Now, sub_id: str) -> Response:
    admin = posted.admin
    await service.delete(conn, admin.org_id, path_id(sub_id, SUBSCRIPTION), now)
    return redirect(f"/settings/{admin.org_id}/webhooks?done=deleted")


@router.post("/{sub_id}/enable")
async def enable(posted: AdminForm, conn: Tx, now: Now, sub_id: str) -> Response:
    admin = posted.admin
    await service.enable(conn, admin.org_id, path_id(sub_id, SUBSCRIPTION), now)
    return redirect(f"/settings/{admin.org_id}/webhooks?done=enabled")


@router.post("/{sub_id}/test")
async def test(
    services: ServicesDep, posted: AdminForm, conn: Tx, now: Now, sub_id: str
) -> Response:
    admin = posted.admin
    target = path_id(sub_id, SUBSCRIPTION)
    await service.fire_test(conn, services, admin.org_id, target, now)
    return redirect(f"/settings/{admin.org_id}/webhooks/{target}/deliveries?done=test")


@router.get("/{sub_id}/deliveries")
async def deliveries(
    request: Request, services: ServicesDep, admin: AdminPage, conn: Tx, now: Now, sub_id: str
) -> Response:
    target = path_id(sub_id, SUBSCRIPTION)
    sub = await service.get(conn, admin.org_id, target)
    health = await service.subscription_health(conn, services, admin.org_id, target, now)
    found = await service.deliveries(conn, admin.org_id, target, DELIVERIES_SHOWN)
    return render(
        request,
        "deliveries.html",
        **_page(
            admin,
            sub=sub,
            health=health,
            charts=charts(health),
            duration_words=duration_words,
            percent_words=percent_words,
            deliveries=found,
            pending=any(d["status"] == "pending" for d in found),
            done=request.query_params.get("done", ""),
            redelivery_limit=REDELIVERY_LIMITS[0].label,
        ),
    )


@router.post("/{sub_id}/deliveries/{delivery_id}/redeliver")
async def redeliver(
    services: ServicesDep, posted: AdminForm, conn: Tx, now: Now, sub_id: str, delivery_id: str
) -> Response:
    admin = posted.admin
    target = path_id(sub_id, SUBSCRIPTION)
    delivery = path_id(delivery_id, DELIVERY)
    await service.redeliver(conn, services, admin.org_id, target, delivery, admin.user_id, now)
    return redirect(f"/settings/{admin.org_id}/webhooks/{target}/deliveries?done=redelivered")
