"""The API's seven operations as `Call`s: paths, query parameters and decoders, once for
both clients."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import TypeVar

import httpx

from hangar_client import _wire
from hangar_client._core import Call
from hangar_client._decode import decode
from hangar_client.calendar import FEED_PATH
from hangar_client.models import (
    Aircraft,
    MaintenanceLog,
    Member,
    ReservationPage,
    ReservationStatus,
    Squawk,
    SquawkStatus,
    WorkOrder,
    WorkOrderStatus,
)

API = "/api/v1/external"
T = TypeVar("T")


def _query(**values: str | bool | datetime | int | None) -> dict[str, str]:
    params = {}
    for name, value in values.items():
        if value is None:
            continue
        if isinstance(value, bool):
            params[name] = "true" if value else "false"
        elif isinstance(value, datetime):
            if value.tzinfo is None:
                # The API refuses a time without a zone (422); say so before sending.
                raise ValueError(f"{name} must be timezone-aware")
            params[name] = value.isoformat()
        else:
            params[name] = str(value)
    return params


def _list(model: type[T]) -> Callable[[httpx.Response], list[T]]:
    def read(response: httpx.Response) -> list[T]:
        body = response.json()
        if not isinstance(body, list):
            raise _wire.InvalidPayload(f"expected a JSON array from {response.url.path}")
        from_json = getattr(model, "from_json", None)
        return [from_json(item) if from_json else decode(model, item) for item in body]

    return read


def reservations_page(
    *,
    limit: int,
    after: str | None,
    aircraft_id: str | None,
    pilot_id: str | None,
    status: ReservationStatus | None,
    start_after: datetime | None,
    start_before: datetime | None,
) -> Call[ReservationPage]:
    params = _query(
        limit=limit,
        after=after,
        aircraft_id=aircraft_id,
        pilot_id=pilot_id,
        status=status,
        start_after=start_after,
        start_before=start_before,
    )
    return Call(f"{API}/reservations", lambda r: ReservationPage.from_json(r.json()), params)


def aircraft() -> Call[list[Aircraft]]:
    return Call(f"{API}/aircraft", _list(Aircraft))


def squawks(
    *, status: SquawkStatus | None, aircraft_id: str | None, is_grounding: bool | None
) -> Call[list[Squawk]]:
    params = _query(status=status, aircraft_id=aircraft_id, is_grounding=is_grounding)
    return Call(f"{API}/squawks", _list(Squawk), params)


def members() -> Call[list[Member]]:
    return Call(f"{API}/members", _list(Member))


def maintenance_logs(*, aircraft_id: str | None) -> Call[list[MaintenanceLog]]:
    return Call(f"{API}/maintenance-logs", _list(MaintenanceLog), _query(aircraft_id=aircraft_id))


def work_orders(*, status: WorkOrderStatus | None) -> Call[list[WorkOrder]]:
    return Call(f"{API}/work-orders", _list(WorkOrder), _query(status=status))


def calendar() -> Call[str]:
    return Call(FEED_PATH, lambda r: r.text, key_in_query=True)
