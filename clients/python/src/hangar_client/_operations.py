"""The API's operations as `Call`s: paths, query parameters and decoders, once for
both clients."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import TypeVar, Unpack, cast

import httpx

from hangar_client import _wire
from hangar_client._core import Call
from hangar_client._decode import decode
from hangar_client.calendar import FEED_PATH
from hangar_client.events import EventName
from hangar_client.models import (
    Aircraft,
    EventPage,
    KeyOrganization,
    MaintenanceLog,
    Member,
    ReservationFilters,
    ReservationPage,
    Squawk,
    SquawkFilters,
    WorkOrder,
    WorkOrderStatus,
)

API = "/api/v1/external"
T = TypeVar("T")
# What the filter TypedDicts hold, for _query: a TypedDict may carry other keys at run time,
# so type checkers see its values as object (_refuse_unknown turns such keys away first).
_Values = Mapping[str, str | bool | datetime | int | None]


def _refuse_unknown(filters: Mapping[str, object], names: frozenset[str]) -> None:
    """The TypeError a misspelt keyword argument gets: `**filters` takes any name at run
    time, and sending it on would silently not filter."""
    unknown = sorted(filters.keys() - names)
    if unknown:
        known = ", ".join(sorted(names))
        raise TypeError(f"unexpected keyword argument {unknown[0]!r} (the filters: {known})")


def _query(**values: str | bool | datetime | int | None) -> dict[str, str]:
    params: dict[str, str] = {}
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
        if not _wire.is_list(body):
            raise _wire.InvalidPayload(f"expected a JSON array from {response.url.path}")
        from_json = getattr(model, "from_json", None)
        return [from_json(item) if from_json else decode(model, item) for item in body]

    return read


def reservations_page(
    *, limit: int, after: str | None, **filters: Unpack[ReservationFilters]
) -> Call[ReservationPage]:
    _refuse_unknown(filters, ReservationFilters.__optional_keys__)
    params = _query(limit=limit, after=after, **cast(_Values, filters))
    return Call(f"{API}/reservations", lambda r: ReservationPage.from_json(r.json()), params)


def organization() -> Call[KeyOrganization]:
    return Call(f"{API}/organization", lambda r: decode(KeyOrganization, r.json()))


def aircraft() -> Call[list[Aircraft]]:
    return Call(f"{API}/aircraft", _list(Aircraft))


def squawks(**filters: Unpack[SquawkFilters]) -> Call[list[Squawk]]:
    _refuse_unknown(filters, SquawkFilters.__optional_keys__)
    params = _query(**cast(_Values, filters))
    return Call(f"{API}/squawks", _list(Squawk), params)


def members() -> Call[list[Member]]:
    return Call(f"{API}/members", _list(Member))


def maintenance_logs(*, aircraft_id: str | None) -> Call[list[MaintenanceLog]]:
    return Call(f"{API}/maintenance-logs", _list(MaintenanceLog), _query(aircraft_id=aircraft_id))


def work_orders(*, status: WorkOrderStatus | None) -> Call[list[WorkOrder]]:
    return Call(f"{API}/work-orders", _list(WorkOrder), _query(status=status))


def events_page(
    *,
    limit: int,
    after: str | None,
    event: EventName | Sequence[EventName] | None,
    created_after: datetime | None,
) -> Call[EventPage]:
    params: dict[str, str | Sequence[str]] = {
        **_query(limit=limit, after=after, created_after=created_after)
    }
    names = [event] if isinstance(event, str) else list(event or ())
    if names:
        params["event"] = names  # repeated: ?event=a&event=b
    return Call(f"{API}/events", lambda r: EventPage.from_json(r.json()), params)


def calendar() -> Call[str]:
    return Call(FEED_PATH, lambda r: r.text, key_in_query=True)
