"""The synchronous client: carries out the core's plans with httpx.Client and time.sleep."""

from __future__ import annotations

import copy
import random as _random
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from types import TracebackType
from typing import TypeVar, Unpack

import httpx

from hangar_client import _config
from hangar_client import _operations as ops
from hangar_client._core import USER_AGENT, Call, Core, Outcome, Retrying, Send, Sleep, utc_now
from hangar_client.events_api import Events
from hangar_client.models import (
    Aircraft,
    KeyOrganization,
    MaintenanceLog,
    Member,
    Reservation,
    ReservationFilters,
    ReservationPage,
    Squawk,
    SquawkFilters,
    WorkOrder,
    WorkOrderStatus,
)
from hangar_client.policy import RetryPolicy

T = TypeVar("T")


class Client:
    """hangar's public API with one organization's key.

    Every failure raises a `HangarClientError` (hangar_client.errors): a key that cannot be
    one at once (`InvalidAPIKey`), no answer as `APIConnectionError`, an error answer as a
    `HangarError`. 429s, 502, 503, 504 and connection failures are retried first, within
    `policy` (`max_retries` stands for its field of that name); `on_retry` hears of each
    retry before its wait. `now`, `sleep` and `random` are injectable so that tests (yours
    and ours) never really wait; `transport` is httpx's, for tests or proxies. `events` is
    the events API (`events.list`, `events.iter`).
    """

    def __init__(
        self,
        base_url: str,
        key: str,
        *,
        policy: RetryPolicy | None = None,
        max_retries: int | None = None,
        timeout: float = 10.0,
        transport: httpx.BaseTransport | None = None,
        now: Callable[[], datetime] = utc_now,
        sleep: Callable[[float], None] = time.sleep,
        random: Callable[[], float] = _random.random,
        on_retry: Callable[[Retrying], None] | None = None,
    ) -> None:
        base_url = _config.http_url(base_url, "the base URL")
        core = Core(_config.api_key(key), RetryPolicy(), now, random, on_retry)
        self._core = core.configured(policy=policy, max_retries=max_retries)
        self._sleep = sleep
        self._http = httpx.Client(
            base_url=base_url,
            timeout=timeout,
            transport=transport,
            headers={"User-Agent": USER_AGENT},
        )
        self.events = Events(self._call)

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def with_options(
        self,
        *,
        policy: RetryPolicy | None = None,
        max_retries: int | None = None,
        now: Callable[[], datetime] | None = None,
        sleep: Callable[[float], None] | None = None,
        random: Callable[[], float] | None = None,
        on_retry: Callable[[Retrying], None] | None = None,
    ) -> Client:
        """This client with other retry settings (what is not given stays), sharing its
        connections: close the original, not the copy."""
        twin = copy.copy(self)
        twin._core = self._core.configured(
            policy=policy, max_retries=max_retries, now=now, random=random, on_retry=on_retry
        )
        twin._sleep = sleep or self._sleep
        twin.events = Events(twin._call)
        return twin

    def _call(self, call: Call[T]) -> T:
        plan = self._core.plan(call)
        try:
            step = next(plan)
            while True:
                if isinstance(step, Sleep):
                    self._sleep(step.seconds)
                    step = plan.send(None)
                else:
                    step = plan.send(self._send(step))
        except StopIteration as done:
            value: T = done.value
            return value

    def _send(self, step: Send) -> Outcome:
        try:
            return self._http.get(step.path, params=step.params, headers=step.headers)
        except httpx.RequestError as exc:  # the plan decides: retry, or raise its own error
            return exc

    def reservations_page(
        self, *, limit: int = 100, after: str | None = None, **filters: Unpack[ReservationFilters]
    ) -> ReservationPage:
        """One page, newest start time first; pass `next_cursor` back as `after` with the
        same filters."""
        return self._call(ops.reservations_page(limit=limit, after=after, **filters))

    def reservations(
        self, *, page_size: int = 100, **filters: Unpack[ReservationFilters]
    ) -> Iterator[Reservation]:
        """Every matching reservation, following `next_cursor` page by page."""
        after: str | None = None
        while True:
            page = self.reservations_page(limit=page_size, after=after, **filters)
            yield from page.items
            if page.next_cursor is None:
                return
            after = page.next_cursor

    def organization(self) -> KeyOrganization:
        """The organization this client's key belongs to, and the key (any key may ask)."""
        return self._call(ops.organization())

    def aircraft(self) -> list[Aircraft]:
        return self._call(ops.aircraft())

    def squawks(self, **filters: Unpack[SquawkFilters]) -> list[Squawk]:
        """The 500 most recent matching squawks, newest first."""
        return self._call(ops.squawks(**filters))

    def members(self) -> list[Member]:
        return self._call(ops.members())

    def maintenance_logs(self, *, aircraft_id: str | None = None) -> list[MaintenanceLog]:
        """The 500 most recent entries; filter by aircraft for a complete history."""
        return self._call(ops.maintenance_logs(aircraft_id=aircraft_id))

    def work_orders(self, *, status: WorkOrderStatus | None = None) -> list[WorkOrder]:
        return self._call(ops.work_orders(status=status))

    def calendar(self) -> str:
        """The iCalendar feed's text (the key goes in `?token=`, as calendar apps send it)."""
        return self._call(ops.calendar())
