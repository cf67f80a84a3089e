"""/api/orgs/{org_id}/reservations: reservations.own for one's own, .manage for any."""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import APIRouter
from starlette.responses import Response

from hangar.http.access import acting
from hangar.http.responses import json_response
from hangar.http.routing import ORG_PREFIX, JsonRoute, Now, Tx, no_content, path_id
from hangar.orgs.actors import Actor
from hangar.orgs.capabilities import RESERVATIONS_MANAGE, RESERVATIONS_OWN
from hangar.reservations import service

router = APIRouter(
    prefix=f"{ORG_PREFIX}/reservations", include_in_schema=False, route_class=JsonRoute
)
# The commands narrow reservations.own to reservations where the caller is the pilot.
Pilot = Annotated[Actor, acting(RESERVATIONS_OWN, RESERVATIONS_MANAGE)]
Staff = Annotated[Actor, acting(RESERVATIONS_MANAGE)]


def _id(text: str) -> uuid.UUID:
    return path_id(text, "reservation")


@router.post("", status_code=201)
async def create(actor: Pilot, conn: Tx, now: Now, body: service.NewReservationBody) -> Response:
    return json_response(await service.create(conn, actor, body, now), 201)


@router.delete("/{reservation_id}", status_code=204)
async def delete(actor: Staff, conn: Tx, now: Now, reservation_id: str) -> Response:
    await service.soft_delete(conn, actor, _id(reservation_id), now)
    return no_content()


@router.post("/{reservation_id}/cancel")
async def cancel(
    actor: Pilot, conn: Tx, now: Now, reservation_id: str, body: service.CancelBody
) -> Response:
    return json_response(await service.cancel(conn, actor, _id(reservation_id), body, now))


@router.post("/{reservation_id}/check-in")
async def check_in(
    actor: Pilot,
    conn: Tx,
    now: Now,
    reservation_id: str,
    body: service.CheckInBody | None = None,
) -> Response:
    return json_response(await service.check_in(conn, actor, _id(reservation_id), body, now))


@router.post("/{reservation_id}/checkout")
async def checkout(
    actor: Pilot, conn: Tx, now: Now, reservation_id: str, body: service.CheckoutBody
) -> Response:
    return json_response(await service.checkout(conn, actor, _id(reservation_id), body, now))


@router.patch("/{reservation_id}")
async def set_status(
    actor: Staff, conn: Tx, now: Now, reservation_id: str, body: service.StatusBody
) -> Response:
    return json_response(await service.set_status(conn, actor, _id(reservation_id), body, now))
