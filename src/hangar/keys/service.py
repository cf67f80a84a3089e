"""The API-key actions: list, create, rotate, revoke.

Each action once, for the management API (keys/routes.py) and the Org Settings screens
(web/keys.py) alike: the request bodies, the transaction and the clock's time live here, and
the callers only present the result (JSON or a page).
"""

from __future__ import annotations

import uuid
from typing import Any

from pydantic import Field

from hangar.keys import management as keys
from hangar.kit.bodies import RequestBody
from hangar.kit.services import Services


class NewKey(RequestBody):
    name: str = Field(min_length=1, max_length=200)
    scopes: list[str] | None = None


class Rotation(RequestBody):
    grace_hours: int = Field(keys.DEFAULT_GRACE_HOURS, ge=0, le=keys.MAX_GRACE_HOURS)


async def list_keys(services: Services, org_id: uuid.UUID) -> list[dict[str, Any]]:
    async with services.engine.connect() as conn:
        return await keys.list_keys(conn, org_id, services.clock.now())


async def get(services: Services, org_id: uuid.UUID, key_id: uuid.UUID) -> dict[str, Any]:
    async with services.engine.connect() as conn:
        return await keys.get_key(conn, org_id, key_id, services.clock.now())


async def create(
    services: Services, org_id: uuid.UUID, by: uuid.UUID, body: NewKey
) -> dict[str, Any]:
    async with services.engine.begin() as conn:
        return await keys.create_key(
            conn,
            org_id,
            name=body.name,
            scopes=body.scopes or [],
            created_by=by,
            now=services.clock.now(),
        )


async def rotate(
    services: Services, org_id: uuid.UUID, by: uuid.UUID, key_id: uuid.UUID, body: Rotation
) -> dict[str, Any]:
    async with services.engine.begin() as conn:
        return await keys.rotate_key(
            conn,
            org_id,
            key_id,
            grace_hours=body.grace_hours,
            rotated_by=by,
            now=services.clock.now(),
        )


async def revoke(services: Services, org_id: uuid.UUID, key_id: uuid.UUID) -> dict[str, Any]:
    async with services.engine.begin() as conn:
        return await keys.revoke_key(conn, org_id, key_id, services.clock.now())
