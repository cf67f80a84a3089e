"""/settings/{org_id}/keys: list, create, rotate and revoke API keys.

The full key exists only in the response to the POST that made it: it is rendered there
and never put in a URL, a redirect or a log line. Everything else redirects (303) so that
a reload does not repeat an action.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from starlette.responses import Response

from hangar.auth.key_format import SCOPES
from hangar.external.paths import FEED_PATH
from hangar.keys import management as key_management
from hangar.keys import service as key_service
from hangar.keys.service import NewKey, Rotation
from hangar.kit.errors import ApiError
from hangar.kit.routing import path_id, services_of
from hangar.web.access import Admin, admin_of, checked_form, text, texts
from hangar.web.forms import field_error, parse
from hangar.web.pages import PageRoute, redirect, render

router = APIRouter(prefix="/settings/{org_id}/keys", route_class=PageRoute)

FEED_SCOPE = "read:reservations"
STATUS_WORDS = {
    "active": "Active",
    "expiring": "Expiring (rotated; still accepted until its expiry)",
    "expired": "Expired (rotated; no longer accepted)",
    "revoked": "Revoked (no longer accepted)",
}


def feed_url(request: Request, key: str, scopes: list[str]) -> str | None:
    if FEED_SCOPE not in scopes:
        return None
    base = services_of(request).settings.public_url.rstrip("/")
    return f"{base}{FEED_PATH}?token={key}"


def _shown_once(request: Request, admin: Admin, new: dict[str, Any], **context: Any) -> Response:
    return render(
        request,
        "key_shown.html",
        **admin.page(
            new=new,
            feed_url=feed_url(request, new["key"], new["scopes"]),
            public_url=services_of(request).settings.public_url.rstrip("/"),
            status_words=STATUS_WORDS,
            **context,
        ),
    )


@router.get("")
async def list_keys(request: Request, org_id: str) -> Response:
    admin = await admin_of(request, org_id)
    keys = await key_service.list_keys(services_of(request), admin.org_id)
    return render(
        request,
        "keys.html",
        **admin.page(
            keys=keys,
            status_words=STATUS_WORDS,
            done=request.query_params.get("done", ""),
            section="keys",
        ),
    )


def _new_form(
    request: Request,
    admin: Admin,
    *,
    status: int = 200,
    name: str = "",
    chosen: list[str] | None = None,
    errors: dict[str, str] | None = None,
) -> Response:
    return render(
        request,
        "key_new.html",
        status,
        **admin.page(
            scopes=SCOPES,
            name=name,
            chosen=chosen or [],
            errors=errors or {},
            section="keys",
        ),
    )


@router.get("/new")
async def new_key_form(request: Request, org_id: str) -> Response:
    return _new_form(request, await admin_of(request, org_id))


@router.post("/new")
async def create_key(request: Request, org_id: str) -> Response:
    admin = await admin_of(request, org_id)
    form = await checked_form(request, admin.csrf_token)
    name, chosen = text(form, "name").strip(), texts(form, "scopes")
    body, errors = parse(NewKey, {"name": name, "scopes": chosen})
    if body is None:
        return _new_form(request, admin, status=422, name=name, chosen=chosen, errors=errors)
    try:
        created = await key_service.create(services_of(request), admin.org_id, admin.user_id, body)
    except ApiError as exc:
        if exc.status != 422:
            raise
        errors = field_error(exc, "scopes")
        return _new_form(request, admin, status=422, name=name, chosen=chosen, errors=errors)
    return _shown_once(request, admin, created, section="keys")


async def _one(request: Request, admin: Admin, key_id: str) -> dict[str, Any]:
    key = path_id(key_id, key_management.API_KEY)
    return await key_service.get(services_of(request), admin.org_id, key)


def _rotate_form(
    request: Request,
    admin: Admin,
    key: dict[str, Any],
    *,
    status: int = 200,
    grace: str = "",
    errors: dict[str, str] | None = None,
) -> Response:
    return render(
        request,
        "key_rotate.html",
        status,
        **admin.page(
            key=key,
            grace=grace or str(key_management.DEFAULT_GRACE_HOURS),
            max_grace=key_management.MAX_GRACE_HOURS,
            errors=errors or {},
            section="keys",
        ),
    )


@router.get("/{key_id}/rotate")
async def rotate_form(request: Request, org_id: str, key_id: str) -> Response:
    admin = await admin_of(request, org_id)
    return _rotate_form(request, admin, await _one(request, admin, key_id))


@router.post("/{key_id}/rotate")
async def rotate_key(request: Request, org_id: str, key_id: str) -> Response:
    admin = await admin_of(request, org_id)
    form = await checked_form(request, admin.csrf_token)
    grace = text(form, "grace_hours").strip()
    # A form holds text; the body is strict, so only digits become the number of hours.
    hours: int | str = int(grace) if grace.isascii() and grace.isdigit() else grace
    if grace == "":
        hours = key_management.DEFAULT_GRACE_HOURS
    body, errors = parse(Rotation, {"grace_hours": hours})
    if body is None:
        key = await _one(request, admin, key_id)
        errors = {"grace_hours": "Choose a whole number of hours from 0 to 168."}
        return _rotate_form(request, admin, key, status=422, grace=grace, errors=errors)
    rotated = await key_service.rotate(
        services_of(request),
        admin.org_id,
        admin.user_id,
        path_id(key_id, key_management.API_KEY),
        body,
    )
    return _shown_once(request, admin, rotated["new"], old=rotated["old"], section="keys")


@router.get("/{key_id}/revoke")
async def revoke_form(request: Request, org_id: str, key_id: str) -> Response:
    admin = await admin_of(request, org_id)
    key = await _one(request, admin, key_id)
    return render(request, "key_revoke.html", **admin.page(key=key, section="keys"))


@router.post("/{key_id}/revoke")
async def revoke_key(request: Request, org_id: str, key_id: str) -> Response:
    admin = await admin_of(request, org_id)
    await checked_form(request, admin.csrf_token)
    await key_service.revoke(
        services_of(request), admin.org_id, path_id(key_id, key_management.API_KEY)
    )
    return redirect(f"/settings/{admin.org_id}/keys?done=revoked")
