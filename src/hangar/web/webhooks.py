"""/settings/{org_id}/webhooks: subscriptions, Enable, Test and the delivery log.

Validation is the management API's own: its request models (webhooks.service) and then the
command functions (webhooks.subscriptions), whose refusals are shown beside the field they
concern. The secret exists in plain text only in the response to the creating POST.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from starlette.responses import Response

from hangar.kit.errors import ApiError
from hangar.kit.routing import path_id, services_of
from hangar.web.access import Admin, admin_of, checked_form, text, texts
from hangar.web.events import EVENTS
from hangar.web.forms import field_error, parse
from hangar.web.pages import PageRoute, redirect, render
from hangar.webhooks import service
from hangar.webhooks import subscriptions as subs
from hangar.webhooks.catalogue import ALL_EVENTS
from hangar.webhooks.service import NewSubscription, SubscriptionEdit

router = APIRouter(prefix="/settings/{org_id}/webhooks", route_class=PageRoute)

DELIVERIES_SHOWN = 20


def status_words(sub: dict[str, Any]) -> str:
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
async def list_subscriptions(request: Request, org_id: str) -> Response:
    admin = await admin_of(request, org_id)
    found = await service.list_all(services_of(request), admin.org_id)
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
    sub: dict[str, Any] | None = None,
    values: dict[str, Any] | None = None,
    errors: dict[str, str] | None = None,
) -> Response:
    values = values or (
        {"name": sub["name"], "url": sub["url"], "events": sub["events"]}
        if sub
        else {"name": "", "url": "", "events": []}
    )
    return render(
        request,
        "webhook_form.html",
        status,
        **_page(admin, sub=sub, values=values, errors=errors or {}),
    )


def _posted(form: Any) -> dict[str, Any]:
    return {
        "name": text(form, "name").strip(),
        "url": text(form, "url").strip(),
        "events": texts(form, "events"),
    }


@router.get("/new")
async def new_form(request: Request, org_id: str) -> Response:
    return _form(request, await admin_of(request, org_id))


@router.post("/new")
async def create(request: Request, org_id: str) -> Response:
    admin = await admin_of(request, org_id)
    values = _posted(await checked_form(request, admin.csrf_token))
    body, errors = parse(NewSubscription, values)
    if body is None:
        return _form(request, admin, status=422, values=values, errors=errors)
    try:
        created = await service.create(services_of(request), admin.org_id, body)
    except ApiError as exc:
        if exc.status != 422:
            raise
        errors = field_error(exc, "events")
        return _form(request, admin, status=422, values=values, errors=errors)
    return render(request, "webhook_secret.html", **_page(admin, sub=created))


async def _one(request: Request, admin: Admin, sub_id: str) -> dict[str, Any]:
    return await service.get(services_of(request), admin.org_id, path_id(sub_id, subs.SUBSCRIPTION))


@router.get("/{sub_id}/edit")
async def edit_form(request: Request, org_id: str, sub_id: str) -> Response:
    admin = await admin_of(request, org_id)
    return _form(request, admin, sub=await _one(request, admin, sub_id))


@router.post("/{sub_id}/edit")
async def edit(request: Request, org_id: str, sub_id: str) -> Response:
    admin = await admin_of(request, org_id)
    values = _posted(await checked_form(request, admin.csrf_token))
    sub = await _one(request, admin, sub_id)
    body, errors = parse(SubscriptionEdit, values)
    if body is None:
        return _form(request, admin, status=422, sub=sub, values=values, errors=errors)
    try:
        await service.edit(
            services_of(request), admin.org_id, path_id(sub_id, subs.SUBSCRIPTION), body
        )
    except ApiError as exc:
        if exc.status != 422:
            raise
        errors = field_error(exc, "events")
        return _form(request, admin, status=422, sub=sub, values=values, errors=errors)
    return redirect(f"/settings/{admin.org_id}/webhooks?done=saved")


@router.get("/{sub_id}/delete")
async def delete_form(request: Request, org_id: str, sub_id: str) -> Response:
    admin = await admin_of(request, org_id)
    sub = await _one(request, admin, sub_id)
    return render(request, "webhook_delete.html", **_page(admin, sub=sub))


@router.post("/{sub_id}/delete")
async def delete(request: Request, org_id: str, sub_id: str) -> Response:
    admin = await admin_of(request, org_id)
    await checked_form(request, admin.csrf_token)
    await service.delete(services_of(request), admin.org_id, path_id(sub_id, subs.SUBSCRIPTION))
    return redirect(f"/settings/{admin.org_id}/webhooks?done=deleted")


@router.post("/{sub_id}/enable")
async def enable(request: Request, org_id: str, sub_id: str) -> Response:
    admin = await admin_of(request, org_id)
    await checked_form(request, admin.csrf_token)
    await service.enable(services_of(request), admin.org_id, path_id(sub_id, subs.SUBSCRIPTION))
    return redirect(f"/settings/{admin.org_id}/webhooks?done=enabled")


@router.post("/{sub_id}/test")
async def test(request: Request, org_id: str, sub_id: str) -> Response:
    admin = await admin_of(request, org_id)
    await checked_form(request, admin.csrf_token)
    target = path_id(sub_id, subs.SUBSCRIPTION)
    await service.fire_test(services_of(request), admin.org_id, target)
    return redirect(f"/settings/{admin.org_id}/webhooks/{target}/deliveries?done=test")


@router.get("/{sub_id}/deliveries")
async def deliveries(request: Request, org_id: str, sub_id: str) -> Response:
    admin = await admin_of(request, org_id)
    target = path_id(sub_id, subs.SUBSCRIPTION)
    sub, found = await service.with_deliveries(
        services_of(request), admin.org_id, target, DELIVERIES_SHOWN
    )
    return render(
        request,
        "deliveries.html",
        **_page(
            admin,
            sub=sub,
            deliveries=found,
            pending=any(d["status"] == "pending" for d in found),
            done=request.query_params.get("done", ""),
        ),
    )
