"""/api/orgs/{org_id}/api-keys: the management API for keys (capability org.settings)."""

from __future__ import annotations

import uuid
from typing import Annotated, Any

from fastapi import APIRouter, Request
from pydantic import Field
from starlette.responses import Response

from hangar.auth import key_management as keys
from hangar.kit.bodies import RequestBody
from hangar.kit.responses import json_response
from hangar.kit.routing import path_id, services_of
from hangar.orgs.access import Actor, acting
from hangar.orgs.capabilities import ORG_SETTINGS
from hangar.services import Services

router = APIRouter(prefix="/api/orgs/{org_id}/api-keys", include_in_schema=False)
Admin = Annotated[Actor, acting(ORG_SETTINGS)]


class NewKey(RequestBody):
    name: str = Field(min_length=1, max_length=200)
    scopes: list[str] | None = None


class Rotation(RequestBody):
    grace_hours: int = Field(keys.DEFAULT_GRACE_HOURS, ge=0, le=keys.MAX_GRACE_HOURS)


@router.get("")
async def list_keys(request: Request, actor: Admin) -> Response:
    services = services_of(request)
    async with services.engine.connect() as conn:
        return json_response(await keys.list_keys(conn, actor.org_id, services.clock.now()))


# Each action once, for this API and the Org Settings screens alike.


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


@router.post("", status_code=201)
async def create_key(request: Request, actor: Admin, body: NewKey) -> Response:
    created = await create(services_of(request), actor.org_id, actor.user_id, body)
    return json_response(created, 201)


@router.post("/{key_id}/rotate", status_code=201)
async def rotate_key(
    request: Request, actor: Admin, key_id: str, body: Rotation | None = None
) -> Response:
    services, grace = services_of(request), body or Rotation()
    rotated = await rotate(
        services, actor.org_id, actor.user_id, path_id(key_id, keys.API_KEY), grace
    )
    return json_response(rotated, 201)


@router.post("/{key_id}/revoke")
async def revoke_key(request: Request, actor: Admin, key_id: str) -> Response:
    return json_response(
        await revoke(services_of(request), actor.org_id, path_id(key_id, keys.API_KEY))
    )
