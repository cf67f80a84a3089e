"""The API-key actions: list, get, create, rotate, revoke.

Each action once, for the management API (routes/keys.py) and the Org Settings screens
(web/keys.py) alike: the request bodies live here, and the callers only present the result
(JSON or a page). Callers have checked org.settings; the caller's request owns the
transaction (`hangar.http.routing.Tx`) and reads the clock once (`Now`). Each change is
recorded in the audit log (`by`: who acted, from where) in that same transaction.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import Any, TypedDict

from pydantic import Field
from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from hangar.audit import service as audit
from hangar.audit.service import Who
from hangar.keys.issuing import IssuedKey as IssuedKey  # the CLI's key, with its secret
from hangar.keys.issuing import issue_key as issue_key
from hangar.keys.models import ApiKey
from hangar.kit.bodies import RequestBody
from hangar.kit.errors import Conflict, NotFound, Unprocessable

# What a 404 calls one.
API_KEY = "API key"
DEFAULT_GRACE_HOURS = 24
MAX_GRACE_HOURS = 168


class NewKey(RequestBody):
    name: str = Field(min_length=1, max_length=200)
    scopes: list[str] | None = None


class Rotation(RequestBody):
    grace_hours: int = Field(DEFAULT_GRACE_HOURS, ge=0, le=MAX_GRACE_HOURS)


_VIEW_COLUMNS = (
    ApiKey.id,
    ApiKey.name,
    ApiKey.prefix,
    ApiKey.scopes,
    ApiKey.created_at,
    ApiKey.created_by,
    ApiKey.last_used_at,
    ApiKey.expires_at,
    ApiKey.revoked_at,
    ApiKey.replaced_by,
)


class KeyView(TypedDict):
    """A key as the management API and the screens show it: never the key itself."""

    id: str
    name: str
    prefix: str
    scopes: list[str]
    status: str
    created_at: datetime
    created_by: str | None
    last_used_at: datetime | None
    expires_at: datetime | None
    replaced_by: str | None


class NewKeyView(KeyView):
    """A key just issued: the one answer that holds the full key."""

    key: str


class Rotated(TypedDict):
    new: NewKeyView
    old: KeyView


def status_of(revoked_at: datetime | None, expires_at: datetime | None, now: datetime) -> str:
    if revoked_at is not None:
        return "revoked"
    if expires_at is None:
        return "active"
    return "expiring" if expires_at > now else "expired"


def _view(row: Any, now: datetime) -> KeyView:
    return KeyView(
        id=str(row.id),
        name=row.name,
        prefix=row.prefix,
        scopes=list(row.scopes or []),
        status=status_of(row.revoked_at, row.expires_at, now),
        created_at=row.created_at,
        created_by=str(row.created_by) if row.created_by else None,
        last_used_at=row.last_used_at,
        expires_at=row.expires_at,
        replaced_by=str(row.replaced_by) if row.replaced_by else None,
    )


async def list_keys(conn: AsyncConnection, org_id: uuid.UUID, now: datetime) -> list[KeyView]:
    rows = await conn.execute(
        select(*_VIEW_COLUMNS)
        .where(ApiKey.org_id == org_id)
        .order_by(ApiKey.created_at.desc(), ApiKey.id.desc())
    )
    return [_view(row, now) for row in rows]


async def get(
    conn: AsyncConnection,
    org_id: uuid.UUID,
    key_id: uuid.UUID,
    now: datetime,
    *,
    lock: bool = False,
) -> KeyView:
    stmt = select(*_VIEW_COLUMNS).where(ApiKey.org_id == org_id, ApiKey.id == key_id)
    row = (await conn.execute(stmt.with_for_update() if lock else stmt)).first()
    if row is None:
        raise NotFound(API_KEY)
    return _view(row, now)


def _with_key(view: KeyView, issued: IssuedKey) -> NewKeyView:
    return NewKeyView(**view, key=issued.key)


def _described(view: KeyView) -> dict[str, Any]:
    """What the audit log says of a key: its name, scopes and prefix, never the key."""
    return {"name": view["name"], "prefix": view["prefix"], "scopes": view["scopes"]}


async def create(
    conn: AsyncConnection, org_id: uuid.UUID, by: Who, body: NewKey, now: datetime
) -> NewKeyView:
    scopes = body.scopes or []
    issued = await issue_key(
        conn, org_id, name=body.name, scopes=scopes, now=now, created_by=by.user_id
    )
    view = await get(conn, org_id, issued.id, now)
    await audit.record(
        conn, org_id, by, "key.created", ("api_key", issued.id), now, _described(view)
    )
    return _with_key(view, issued)


async def issue_by_operator(
    conn: AsyncConnection, org_id: uuid.UUID, *, name: str, scopes: list[str], now: datetime
) -> IssuedKey:
    """`hangar key create`: the operator's key, recorded as theirs (no account)."""
    issued = await issue_key(conn, org_id, name=name, scopes=scopes, now=now)
    view = await get(conn, org_id, issued.id, now)
    await audit.record(
        conn, org_id, audit.OPERATOR, "key.created", ("api_key", issued.id), now, _described(view)
    )
    return issued


async def rotate(
    conn: AsyncConnection,
    org_id: uuid.UUID,
    by: Who,
    key_id: uuid.UUID,
    body: Rotation,
    now: datetime,
) -> Rotated:
    """A new key with the old one's scopes; the old one works `grace_hours` longer."""
    old = await get(conn, org_id, key_id, now, lock=True)
    if not old["scopes"]:
        raise Unprocessable(
            "API_KEY_SCOPES_REQUIRED",
            "This key has no scopes and cannot be rotated; create a new key with scopes",
        )
    if old["status"] != "active":
        raise Conflict(
            f"Only an active key can be rotated; this one is {old['status']}", "API_KEY_NOT_ACTIVE"
        )
    issued = await issue_key(
        conn, org_id, name=old["name"], scopes=old["scopes"], now=now, created_by=by.user_id
    )
    await conn.execute(
        update(ApiKey)
        .where(ApiKey.id == key_id)
        .values(expires_at=now + timedelta(hours=body.grace_hours), replaced_by=issued.id)
    )
    new = await get(conn, org_id, issued.id, now)
    details = {
        **_described(old),
        "grace_hours": body.grace_hours,
        "new_key_id": new["id"],
        "new_prefix": new["prefix"],
    }
    await audit.record(conn, org_id, by, "key.rotated", ("api_key", key_id), now, details)
    return Rotated(new=_with_key(new, issued), old=await get(conn, org_id, key_id, now))


async def revoke(
    conn: AsyncConnection, org_id: uuid.UUID, by: Who, key_id: uuid.UUID, now: datetime
) -> KeyView:
    """Immediate and irreversible; revoking a revoked key changes nothing (and records
    nothing)."""
    await get(conn, org_id, key_id, now, lock=True)
    revoked = await conn.execute(
        update(ApiKey)
        .where(ApiKey.id == key_id, ApiKey.revoked_at.is_(None))
        .values(revoked_at=now)
    )
    view = await get(conn, org_id, key_id, now)
    if revoked.rowcount:
        await audit.record(
            conn, org_id, by, "key.revoked", ("api_key", key_id), now, _described(view)
        )
    return view
