"""/settings/{org_id}/keys: list, create, rotate and revoke API keys.

Every action answers with a redirect (303), so a reload never repeats it. Creating or
rotating a key redirects to the key's one-time view, `/{key_id}/shown`, which shows the full
key once: it is carried there sealed in a short-lived cookie (web.shown_once), never in a
URL or a log line, and a reload of the view shows no key.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from fastapi import APIRouter, Request
from sqlalchemy.ext.asyncio import AsyncConnection
from starlette.responses import Response

from hangar.external.paths import FEED_PATH
from hangar.http.routing import Now, ServicesDep, Tx, path_id
from hangar.keys import service as key_service
from hangar.keys.service import KeyView, NewKey, NewKeyView, Rotation
from hangar.kit.container import Services
from hangar.kit.scopes import SCOPES
from hangar.web import shown_once
from hangar.web.access import Admin, AdminForm, AdminPage
from hangar.web.forms import grace_hours, submit
from hangar.web.pages import PageRoute, redirect, render

router = APIRouter(prefix="/settings/{org_id}/keys", route_class=PageRoute)

FEED_SCOPE = "read:reservations"
STATUS_WORDS = {
    "active": "Active",
    "expiring": "Expiring (rotated; still accepted until its expiry)",
    "expired": "Expired (rotated; no longer accepted)",
    "revoked": "Revoked (no longer accepted)",
}


def feed_url(services: Services, key: str, scopes: list[str]) -> str | None:
    if FEED_SCOPE not in scopes:
        return None
    base = services.settings.public_url.rstrip("/")
    return f"{base}{FEED_PATH}?token={key}"


def _shown_path(admin: Admin, key_id: str | uuid.UUID) -> str:
    return f"/settings/{admin.org_id}/keys/{key_id}/shown"


def _to_shown(
    services: Services, admin: Admin, new: NewKeyView, old: KeyView | None = None
) -> Response:
    """The answer to a create or a rotation, once it has committed: to the new key's one-time
    view, the key (and the key it replaced) handed over in its cookie."""
    held = {"key": new["key"], "old": old["id"] if old else None}
    view = _shown_path(admin, new["id"])
    return shown_once.hand_over(services, admin.viewer.session, view, held)


@router.get("")
async def list_keys(request: Request, admin: AdminPage, conn: Tx, now: Now) -> Response:
    keys = await key_service.list_keys(conn, admin.org_id, now)
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
async def new_key_form(request: Request, admin: AdminPage) -> Response:
    return _new_form(request, admin)


@router.post("/new")
async def create_key(
    request: Request, services: ServicesDep, posted: AdminForm, conn: Tx, now: Now
) -> Response:
    admin = posted.admin
    name, chosen = posted.text("name").strip(), posted.texts("scopes")
    created, errors = await submit(
        NewKey,
        {"name": name, "scopes": chosen},
        lambda body: key_service.create(conn, admin.org_id, admin.who, body, now),
        "scopes",
    )
    if created is not None:
        return _to_shown(services, admin, created)
    return _new_form(request, admin, status=422, name=name, chosen=chosen, errors=errors)


async def _one(conn: AsyncConnection, admin: Admin, key_id: str, now: datetime) -> KeyView:
    return await key_service.get(conn, admin.org_id, path_id(key_id, key_service.API_KEY), now)


def _rotate_form(
    request: Request,
    admin: Admin,
    key: KeyView,
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
            grace=grace or str(key_service.DEFAULT_GRACE_HOURS),
            max_grace=key_service.MAX_GRACE_HOURS,
            errors=errors or {},
            section="keys",
        ),
    )


@router.get("/{key_id}/rotate")
async def rotate_form(
    request: Request, admin: AdminPage, conn: Tx, now: Now, key_id: str
) -> Response:
    return _rotate_form(request, admin, await _one(conn, admin, key_id, now))


@router.post("/{key_id}/rotate")
async def rotate_key(
    request: Request, services: ServicesDep, posted: AdminForm, conn: Tx, now: Now, key_id: str
) -> Response:
    admin = posted.admin
    body, grace, errors = grace_hours(
        posted.text("grace_hours"),
        Rotation,
        key_service.DEFAULT_GRACE_HOURS,
        key_service.MAX_GRACE_HOURS,
    )
    if body is None:
        key = await _one(conn, admin, key_id, now)
        return _rotate_form(request, admin, key, status=422, grace=grace, errors=errors)
    target = path_id(key_id, key_service.API_KEY)
    rotated = await key_service.rotate(conn, admin.org_id, admin.who, target, body, now)
    return _to_shown(services, admin, rotated["new"], rotated["old"])


@router.get("/{key_id}/shown")
async def shown(
    request: Request, services: ServicesDep, admin: AdminPage, conn: Tx, now: Now, key_id: str
) -> Response:
    """A new or rotated key's one-time view: the key on the first visit after its action's
    redirect, by this session; afterwards (a reload, Back, another session) that it was
    shown once, and no key."""
    key = await _one(conn, admin, key_id, now)  # another organization's key: 404
    view = _shown_path(admin, key["id"])
    held = shown_once.take(request, services, admin.viewer.session, view) or {}
    given, old_id = held.get("key"), held.get("old")
    context: dict[str, Any] = {"key": key, "status_words": STATUS_WORDS, "section": "keys"}
    if isinstance(given, str):
        new = NewKeyView(**key, key=given)
        if isinstance(old_id, str):
            context["old"] = await key_service.get(conn, admin.org_id, uuid.UUID(old_id), now)
        context |= {
            "new": new,
            "feed_url": feed_url(services, given, new["scopes"]),
            "public_url": services.settings.public_url.rstrip("/"),
        }
    page = render(request, "key_shown.html", **admin.page(**context))
    return shown_once.forget(page, services, view)


@router.get("/{key_id}/revoke")
async def revoke_form(
    request: Request, admin: AdminPage, conn: Tx, now: Now, key_id: str
) -> Response:
    key = await _one(conn, admin, key_id, now)
    return render(request, "key_revoke.html", **admin.page(key=key, section="keys"))


@router.post("/{key_id}/revoke")
async def revoke_key(posted: AdminForm, conn: Tx, now: Now, key_id: str) -> Response:
    admin = posted.admin
    target = path_id(key_id, key_service.API_KEY)
    await key_service.revoke(conn, admin.org_id, admin.who, target, now)
    return redirect(f"/settings/{admin.org_id}/keys?done=revoked")
