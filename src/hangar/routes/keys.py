"""/api/orgs/{org_id}/api-keys: the management API for keys (capability org.settings).

The actions are keys/service.py's, shared with the Org Settings screens; these routes
only present them as JSON, in the request's one transaction."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter
from starlette.responses import Response

from hangar.http.access import acting
from hangar.http.responses import json_response
from hangar.http.routing import ORG_PREFIX, JsonRoute, Now, Tx, path_id
from hangar.keys import service as key_service
from hangar.keys.service import API_KEY, NewKey, Rotation
from hangar.orgs.actors import Actor
from hangar.orgs.capabilities import ORG_SETTINGS

router = APIRouter(prefix=f"{ORG_PREFIX}/api-keys", include_in_schema=False, route_class=JsonRoute)
Admin = Annotated[Actor, acting(ORG_SETTINGS)]


@router.get("")
async def list_keys(actor: Admin, conn: Tx, now: Now) -> Response:
    return json_response(await key_service.list_keys(conn, actor.org_id, now))


@router.post("", status_code=201)
async def create_key(actor: Admin, conn: Tx, now: Now, body: NewKey) -> Response:
    created = await key_service.create(conn, actor.org_id, actor.who, body, now)
    return json_response(created, 201)


@router.post("/{key_id}/rotate", status_code=201)
async def rotate_key(
    actor: Admin, conn: Tx, now: Now, key_id: str, body: Rotation | None = None
) -> Response:
    target = path_id(key_id, API_KEY)
    rotated = await key_service.rotate(
        conn, actor.org_id, actor.who, target, body or Rotation(), now
    )
    return json_response(rotated, 201)


@router.post("/{key_id}/revoke")
async def revoke_key(actor: Admin, conn: Tx, now: Now, key_id: str) -> Response:
    return json_response(
        await key_service.revoke(conn, actor.org_id, actor.who, path_id(key_id, API_KEY), now)
    )
