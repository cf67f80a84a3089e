"""/settings/{org_id}/webhooks: subscriptions, Enable, Rotate secret and Test. (A
subscription's page, with its health, delivery log, Redeliver and Recover:
web.webhook_deliveries.)

Validation is the management API's own: its request models (webhooks.service) and then the
command functions (webhooks.subscriptions), whose refusals are shown beside the field they
concern. Every action answers with a redirect (303), so a reload never repeats it: creating
a subscription or rotating its secret redirects to its one-time view, `/{sub_id}/shown`,
which shows the secret once. It is carried there sealed in a short-lived cookie
(web.shown_once), never in a URL, and a reload of the view shows no secret.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, TypedDict
from urllib.parse import urlencode

from fastapi import APIRouter, Request
from sqlalchemy.ext.asyncio import AsyncConnection
from starlette.responses import Response

from hangar.http.routing import Now, ServicesDep, Tx, path_id
from hangar.kit.container import Services
from hangar.web import shown_once
from hangar.web.access import Admin, AdminForm, AdminPage, Submitted
from hangar.web.events import EVENTS
from hangar.web.forms import grace_hours, submit
from hangar.web.pages import PageRoute, redirect, render
from hangar.webhooks import service
from hangar.webhooks.events.catalogue import ALL_EVENTS, TEST_PING
from hangar.webhooks.service import (
    SUBSCRIPTION,
    NewSubscription,
    NewSubscriptionView,
    SecretRotation,
    SubscriptionEdit,
    SubscriptionView,
)
from hangar.webhooks.subscriptions.signing_secrets import whsec_form

router = APIRouter(prefix="/settings/{org_id}/webhooks", route_class=PageRoute)


class Values(TypedDict):
    """What the subscription form shows in its fields."""

    name: str
    url: str
    events: list[str]


def status_words(sub: SubscriptionView) -> str:
    failures = sub["consecutive_failures"]
    # The recorder stops the counter at the fifth (webhooks.records): a disabled one says 5.
    run = f"{failures} consecutive failed deliver{'y' if failures == 1 else 'ies'}"
    if not sub["enabled"]:
        # Test resets the counter without enabling, so a disabled one may show zero.
        return f"Disabled after {run}" if failures else "Disabled"
    if failures:
        return f"Enabled, {run}"
    return "Enabled"


def page_context(admin: Admin, **context: Any) -> dict[str, Any]:
    """What every webhook screen shows besides its own: the section, the status words, the
    event catalogue."""
    return admin.page(
        section="webhooks",
        status_words=status_words,
        events=EVENTS,
        all_events=ALL_EVENTS,
        **context,
    )


@router.get("")
async def list_subscriptions(
    request: Request, services: ServicesDep, admin: AdminPage, conn: Tx, now: Now
) -> Response:
    found = await service.list_all(conn, admin.org_id, now)
    return render(
        request,
        "webhooks.html",
        **page_context(
            admin,
            subs=found,
            done=request.query_params.get("done", ""),
            limit=services.settings.max_subscriptions_per_org,
        ),
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
        **page_context(admin, sub=sub, values=values, errors=errors or {}),
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
        lambda body: service.create(conn, services, admin.org_id, body, now, by=admin.who),
        "events",
    )
    if created is not None:
        return _to_shown(services, admin, created, rotated=False)
    return _form(request, admin, status=422, values=values, errors=errors)


def _shown_path(admin: Admin, sub_id: str | uuid.UUID) -> str:
    return f"/settings/{admin.org_id}/webhooks/{sub_id}/shown"


def _to_shown(
    services: Services, admin: Admin, made: NewSubscriptionView, *, rotated: bool
) -> Response:
    """The answer to a create or a rotation, once it has committed: to the subscription's
    one-time view, the new secret handed over in its cookie."""
    held = {"secret": made["secret"], "rotated": rotated}
    view = _shown_path(admin, made["id"])
    return shown_once.hand_over(services, admin.viewer.session, view, held)


@router.get("/{sub_id}/shown")
async def shown(
    request: Request, services: ServicesDep, admin: AdminPage, conn: Tx, sub_id: str
) -> Response:
    """A new subscription's, or a rotation's, one-time view: the signing secret on the first
    visit after the action's redirect, by this session; afterwards (a reload, Back, another
    session) that it was shown once, and no secret."""
    sub = await _one(conn, admin, sub_id)  # another organization's subscription: 404
    view = _shown_path(admin, sub["id"])
    held = shown_once.take(request, services, admin.viewer.session, view) or {}
    secret = held.get("secret")
    if isinstance(secret, str):
        new = NewSubscriptionView(**sub, secret=secret, secret_whsec=whsec_form(secret))
        context = page_context(admin, sub=new, rotated=held.get("rotated") is True)
    else:
        context = page_context(admin, sub=sub, gone=True)
    page = render(request, "webhook_secret.html", **context)
    return shown_once.forget(page, services, view)


async def _one(
    conn: AsyncConnection, admin: Admin, sub_id: str, now: datetime | None = None
) -> SubscriptionView:
    return await service.get(conn, admin.org_id, path_id(sub_id, SUBSCRIPTION), now=now)


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
        lambda body: service.edit(conn, services, admin.org_id, target, body, now, by=admin.who),
        "events",
    )
    if edited is not None:
        return redirect(f"/settings/{admin.org_id}/webhooks?done=saved")
    return _form(request, admin, status=422, sub=sub, values=values, errors=errors)


@router.get("/{sub_id}/delete")
async def delete_form(request: Request, admin: AdminPage, conn: Tx, sub_id: str) -> Response:
    sub = await _one(conn, admin, sub_id)
    return render(request, "webhook_delete.html", **page_context(admin, sub=sub))


@router.post("/{sub_id}/delete")
async def delete(posted: AdminForm, conn: Tx, now: Now, sub_id: str) -> Response:
    admin = posted.admin
    await service.delete(conn, admin.org_id, path_id(sub_id, SUBSCRIPTION), now, by=admin.who)
    return redirect(f"/settings/{admin.org_id}/webhooks?done=deleted")


def _rotate_form(
    request: Request,
    admin: Admin,
    sub: SubscriptionView,
    *,
    status: int = 200,
    grace: str = "",
    errors: dict[str, str] | None = None,
) -> Response:
    return render(
        request,
        "webhook_rotate.html",
        status,
        **page_context(
            admin,
            sub=sub,
            grace=grace or str(service.DEFAULT_GRACE_HOURS),
            max_grace=service.MAX_GRACE_HOURS,
            errors=errors or {},
        ),
    )


@router.get("/{sub_id}/rotate-secret")
async def rotate_secret_form(
    request: Request, admin: AdminPage, conn: Tx, now: Now, sub_id: str
) -> Response:
    return _rotate_form(request, admin, await _one(conn, admin, sub_id, now))


@router.post("/{sub_id}/rotate-secret")
async def rotate_secret(
    request: Request, services: ServicesDep, posted: AdminForm, conn: Tx, now: Now, sub_id: str
) -> Response:
    admin = posted.admin
    body, grace, errors = grace_hours(
        posted.text("grace_hours"),
        SecretRotation,
        service.DEFAULT_GRACE_HOURS,
        service.MAX_GRACE_HOURS,
    )
    if body is None:
        sub = await _one(conn, admin, sub_id, now)
        return _rotate_form(request, admin, sub, status=422, grace=grace, errors=errors)
    target = path_id(sub_id, SUBSCRIPTION)
    box = services.secret_box
    rotated = await service.rotate_secret(conn, box, admin.org_id, target, body, now, by=admin.who)
    return _to_shown(services, admin, rotated, rotated=True)


@router.post("/{sub_id}/enable")
async def enable(posted: AdminForm, conn: Tx, now: Now, sub_id: str) -> Response:
    admin = posted.admin
    await service.enable(conn, admin.org_id, path_id(sub_id, SUBSCRIPTION), now, by=admin.who)
    return redirect(f"/settings/{admin.org_id}/webhooks?done=enabled")


@router.post("/{sub_id}/test")
async def test(
    services: ServicesDep, posted: AdminForm, conn: Tx, now: Now, sub_id: str
) -> Response:
    admin = posted.admin
    target = path_id(sub_id, SUBSCRIPTION)
    event = posted.text("event") or TEST_PING
    await service.fire_test(conn, services, admin.org_id, target, now, by=admin.who, event=event)
    query = urlencode({"done": "test", "event": event})
    return redirect(f"/settings/{admin.org_id}/webhooks/{target}/deliveries?{query}")
