"""/settings/{org_id}/webhooks: subscriptions, Enable, Rotate secret, Test, the delivery log
with the subscription's health above it, Redeliver, and Recover (the page's `#recover`).

Validation is the management API's own: its request models (webhooks.service) and then the
command functions (webhooks.subscriptions), whose refusals are shown beside the field they
concern. Every action answers with a redirect (303), so a reload never repeats it: creating
a subscription or rotating its secret redirects to its one-time view, `/{sub_id}/shown`,
which shows the secret once. It is carried there sealed in a short-lived cookie
(web.shown_once), never in a URL, and a reload of the view shows no secret.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import Any, TypedDict
from urllib.parse import urlencode

from fastapi import APIRouter, Request
from sqlalchemy.ext.asyncio import AsyncConnection
from starlette.responses import Response

from hangar.http.routing import Now, ServicesDep, Tx, path_id
from hangar.kit.container import Services
from hangar.kit.errors import ApiError
from hangar.web import shown_once
from hangar.web.access import Admin, AdminForm, AdminPage, Submitted
from hangar.web.delivery_log import log_view
from hangar.web.events import EVENTS
from hangar.web.forms import grace_hours, parse, submit
from hangar.web.health_chart import charts
from hangar.web.pages import PageRoute, redirect, render
from hangar.webhooks import service
from hangar.webhooks.events.catalogue import ALL_EVENTS, TEST_PING
from hangar.webhooks.events.samples import TESTABLE
from hangar.webhooks.service import (
    DELIVERY,
    REDELIVERY_LIMITS,
    SUBSCRIPTION,
    TEST_FIRE_LIMITS,
    NewSubscription,
    NewSubscriptionView,
    RecoverBody,
    SecretRotation,
    SubscriptionEdit,
    SubscriptionView,
    duration_words,
    percent_words,
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


def _page(admin: Admin, **context: Any) -> dict[str, Any]:
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
        **_page(
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
        context = _page(admin, sub=new, rotated=held.get("rotated") is True)
    else:
        context = _page(admin, sub=sub, gone=True)
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
    return render(request, "webhook_delete.html", **_page(admin, sub=sub))


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
        **_page(
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


class RecoverForm(TypedDict):
    """The Recover form as the page shows it: `since` as its field holds it (UTC, to the
    minute, as a datetime-local field takes it) and what was refused, by field."""

    since: str
    errors: dict[str, str]


def _field_time(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M")


@router.get("/{sub_id}/deliveries")
async def deliveries(
    request: Request, services: ServicesDep, admin: AdminPage, conn: Tx, now: Now, sub_id: str
) -> Response:
    return await _deliveries_page(request, services, admin, conn, now, sub_id)


async def _deliveries_page(
    request: Request,
    services: Services,
    admin: Admin,
    conn: AsyncConnection,
    now: datetime,
    sub_id: str,
    *,
    status: int = 200,
    recover: RecoverForm | None = None,
) -> Response:
    """The subscription's page: its health, Recover and its delivery log. With `recover`,
    the answer to a Recover form it refused (shown again with why, and never reloading
    itself: the reload would post the form again)."""
    target = path_id(sub_id, SUBSCRIPTION)
    sub = await service.get(conn, admin.org_id, target)
    health = await service.subscription_health(conn, services, admin.org_id, target, now)
    url = f"/settings/{admin.org_id}/webhooks/{target}/deliveries"
    log = await log_view(
        conn, services.cursor_keys, admin.org_id, target, url, request.query_params
    )
    if recover is None:
        since = await service.recover_from(conn, services, sub, now)
        recover = RecoverForm(since=_field_time(since), errors={})
    retention = services.settings.delivery_retention_days
    shown = log.context()
    if status != 200:
        shown["pending"] = False
    return render(
        request,
        "deliveries.html",
        status if status != 200 else (400 if log.bad else 200),
        **_page(
            admin,
            sub=sub,
            health=health,
            charts=charts(health),
            duration_words=duration_words,
            percent_words=percent_words,
            done=request.query_params.get("done", "") if status == 200 else "",
            testable=TESTABLE,
            tested=_tested(request.query_params.get("event")),
            test_limit=TEST_FIRE_LIMITS[0].label,
            redelivery_limit=REDELIVERY_LIMITS[0].label,
            recover=recover,
            recovery=await service.latest_recovery(conn, target),
            # To the minute, the first whole one inside retention: the field's least value.
            recover_earliest=_field_time(now - timedelta(days=retention, minutes=-1)),
            recover_latest=_field_time(now),
            max_recovered=service.MAX_RECOVERED,
            **shown,
        ),
    )


def _tested(event: str | None) -> str:
    """The event the last Test sent, as its redirect names it (one the page offers only)."""
    return event if event in TESTABLE else TEST_PING


@router.post("/{sub_id}/deliveries/{delivery_id}/redeliver")
async def redeliver(
    services: ServicesDep, posted: AdminForm, conn: Tx, now: Now, sub_id: str, delivery_id: str
) -> Response:
    admin = posted.admin
    target = path_id(sub_id, SUBSCRIPTION)
    delivery = path_id(delivery_id, DELIVERY)
    await service.redeliver(conn, services, admin.org_id, target, delivery, now, by=admin.who)
    return redirect(f"/settings/{admin.org_id}/webhooks/{target}/deliveries?done=redelivered")


def _as_utc(typed: str) -> str:
    """The form's time as the API takes it: a datetime-local field sends no offset, and the
    screens speak UTC, so one without an offset is UTC; one with an offset keeps it."""
    try:
        parsed = datetime.fromisoformat(typed)
    except ValueError:
        return typed  # refused by the request model, in words below
    return typed if parsed.tzinfo is not None else f"{typed}Z"


@router.post("/{sub_id}/recover")
async def recover(
    request: Request, services: ServicesDep, posted: AdminForm, conn: Tx, now: Now, sub_id: str
) -> Response:
    admin = posted.admin
    target = path_id(sub_id, SUBSCRIPTION)
    typed = posted.text("since").strip()
    body, refused = parse(RecoverBody, {"since": _as_utc(typed)})
    status = 422
    if body is None:
        refused = {"since": "Enter a date and time in UTC, such as 2026-05-03T10:00."}
    else:
        try:
            await service.recover(conn, services, admin.org_id, target, body, now, by=admin.who)
        except ApiError as exc:
            # 404 stays the error page; a refusal of this form is shown beside it.
            if exc.status not in (409, 422):
                raise
            status = exc.status
            said = exc.errors[0]["msg"] if exc.errors else exc.detail
            refused = {"since" if exc.status == 422 else "form": said[:1].upper() + said[1:]}
        else:
            page = f"/settings/{admin.org_id}/webhooks/{target}/deliveries"
            return redirect(f"{page}?done=recovered#recover")
    form = RecoverForm(since=typed, errors=refused)
    return await _deliveries_page(
        request, services, admin, conn, now, sub_id, status=status, recover=form
    )
