"""/api/orgs/{org_id}/maintenance-logs and /work-orders (maintenance.manage)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter
from starlette.responses import Response

from hangar.http.access import acting
from hangar.http.responses import json_response
from hangar.http.routing import ORG_PREFIX, JsonRoute, Now, Tx, path_id
from hangar.maintenance import service
from hangar.orgs.actors import Actor
from hangar.orgs.capabilities import MAINTENANCE_MANAGE

router = APIRouter(prefix=ORG_PREFIX, include_in_schema=False, route_class=JsonRoute)
Mechanic = Annotated[Actor, acting(MAINTENANCE_MANAGE)]


@router.post("/maintenance-logs", status_code=201)
async def create_log(actor: Mechanic, conn: Tx, now: Now, body: service.NewLogBody) -> Response:
    return json_response(await service.create_log(conn, actor, body, now), 201)


@router.post("/work-orders", status_code=201)
async def create_work_order(
    actor: Mechanic, conn: Tx, now: Now, body: service.NewWorkOrderBody
) -> Response:
    return json_response(await service.create_work_order(conn, actor, body, now), 201)


@router.patch("/work-orders/{work_order_id}")
async def update_work_order(
    actor: Mechanic, conn: Tx, now: Now, work_order_id: str, body: service.WorkOrderPatch
) -> Response:
    target = path_id(work_order_id, "work order")
    return json_response(await service.update_work_order(conn, actor, target, body, now))
