"""/api/orgs/{org_id}/reservations: reservations.own for one's own, .manage for any."""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import APIRouter, Request
from starlette.responses import Response

from hangar.kit.responses import json_response
from hangar.kit.routing import ORG_PREFIX, no_content, path_id, transact
from hangar.orgs.access import Actor, acting
from hangar.orgs.capabilities import RESERVATIONS_MANAGE, RESERVATIONS_OWN
from hangar.reservations import commands

router = APIRouter(prefix=f"{ORG_PREFIX}/reservations", include_in_schema=False)
# The commands narrow reservations.own to reservations where the caller is the pilot.
Pilot = Annotated[Actor, acting(RESERVATIONS_OWN, RESERVATIONS_MANAGE)]
Staff = Annotated[Actor, acting(RESERVATIONS_MANAGE)]


def _id(text: str) -> uuid.UUID:
    return path_id(text, "reservation")


@router.post("", status_code=201)
async def create(request: Request, actor: Pilot, body: commands.NewReservationBody) -> Response:
    return json_response(await transact(request, commands.create, actor, body), 201)


@router.delete("/{reservation_id}", status_code=204)
async def delete(request: Request, actor: Staff, reservation_id: str) -> Response:
    await transact(request, commands.soft_delete, actor, _id(reservation_id))
    return no_content()


@router.post("/{reservation_id}/cancel")
async def cancel(
    request: Request, actor: Pilot, reservation_id: str, body: commands.CancelBody
) -> Response:
    return json_response(await transact(request, commands.cancel, actor, _id(reservation_id), body))


@router.post("/{reservation_id}/check-in")
async def check_in(
    request: Request,
    actor: Pilot,
    reservation_id: str,
    body: commands.CheckInBody | None = None,
) -> Response:
    return json_response(
        await transact(request, commands.check_in, actor, _id(reservation_id), body)
    )


@router.post("/{reservation_id}/checkout")
async def checkout(
    request: Request, actor: Pilot, reservation_id: str, body: commands.CheckoutBody
) -> Response:
    return json_response(
        await transact(request, commands.checkout, actor, _id(reservation_id), body)
    )


@router.patch("/{reservation_id}")
async def set_status(
    request: Request, actor: Staff, reservation_id: str, body: commands.StatusBody
) -> Response:
    return json_response(
        await transact(request, commands.set_status, actor, _id(reservation_id), body)
    )
