"""/settings/{org_id}/webhooks/{sub_id}/deliveries: a subscription's page, its health (with
its charts) above its delivery log; Redeliver, and Recover (the page's `#recover`). The
subscriptions themselves: web.webhooks.

As there, validation is the management API's own and every action answers with a redirect
(303); a Recover form refused is shown again with why, beside its field.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TypedDict

from fastapi import APIRouter, Request
from sqlalchemy.ext.asyncio import AsyncConnection
from starlette.responses import Response

from hangar.http.routing import Now, ServicesDep, Tx, path_id
from hangar.kit.container import Services
from hangar.kit.errors import ApiError
from hangar.web.access import Admin, AdminForm, AdminPage
from hangar.web.delivery_log import log_view
from hangar.web.forms import parse
from hangar.web.health_chart import charts
from hangar.web.pages import PageRoute, redirect, render
from hangar.web.webhooks import page_context
from hangar.webhooks import service
from hangar.webhooks.events.catalogue import TEST_PING
from hangar.webhooks.events.samples import TESTABLE
from hangar.webhooks.service import (
    DELIVERY,
    REDELIVERY_LIMITS,
    SUBSCRIPTION,
    TEST_FIRE_LIMITS,
    RecoverBody,
    duration_words,
    percent_words,
)

router = APIRouter(prefix="/settings/{org_id}/webhooks", route_class=PageRoute)


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
        **page_context(
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
