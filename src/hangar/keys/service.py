"""The API-key actions: list, get, create, rotate, revoke.

Each action once, for the management API (keys/routes.py) and the Org Settings screens
(web/keys.py) alike: the request bodies live here, and the callers only present the result
(JSON or a page). The caller's request owns the transaction (`hangar.kit.routing.Tx`) and
reads the clock once (`Now`).
"""

from __future__ import annotations

import uuid
from datetime import datetime

from pydantic import Field
from sqlalchemy.ext.asyncio import AsyncConnection

from hangar.keys import management as keys
from hangar.keys.management import KeyView, NewKeyView, Rotated
from hangar.kit.bodies import RequestBody


class NewKey(RequestBody):
    name: str = Field(min_length=1, max_length=200)
    scopes: list[str] | None = None


class Rotation(RequestBody):
    grace_hours: int = Field(keys.DEFAULT_GRACE_HOURS, ge=0, le=keys.MAX_GRACE_HOURS)


async def list_keys(conn: AsyncConnection, org_id: uuid.UUID, now: datetime) -> list[KeyView]:
    return await keys.list_keys(conn, org_id, now)


async def get(
    conn: AsyncConnection, org_id: uuid.UUID, key_id: uuid.UUID, now: datetime
) -> KeyView:
    return await keys.get_key(conn, org_id, key_id, now)


async def create(
    conn: AsyncConnection, org_id: uuid.UUID, by: uuid.UUID, body: NewKey, now: datetime
) -> NewKeyView:
    return await keys.create_key(
        conn, org_id, name=body.name, scopes=body.scopes or [], created_by=by, now=now
    )


async def rotate(
    conn: AsyncConnection,
    org_id: uuid.UUID,
    by: uuid.UUID,
    key_id: uuid.UUID,
    body: Rotation,
    now: datetime,
) -> Rotated:
    return await keys.rotate_key(
        conn, org_id, key_id, grace_hours=body.grace_hours, rotated_by=by, now=now
    )


async def revoke(
    conn: AsyncConnection, org_id: uuid.UUID, key_id: uuid.UUID, now: datetime
) -> KeyView:
    return await keys.revoke_key(conn, org_id, key_id, now)
