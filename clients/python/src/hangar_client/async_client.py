"""The asynchronous client: carries out the core's plans with httpx.AsyncClient and
asyncio.sleep."""

from __future__ import annotations

import asyncio
import copy
import random as _random
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import datetime
from types import TracebackType
from typing import TypeVar, Unpack

import httpx

from hangar_client import _config
from hangar_client import _operations as ops
from hangar_client._core import USER_AGENT, Call, Core, Outcome, Retrying, Send, Sleep, utc_now
from hangar_client.events_api import AsyncEvents
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


class AsyncClient:
    """hangar's public API with one organization's key: `Client`'s twin, failing and
    retrying the same way (see `Client`).
    """

    def __init__(
        self,
        base_url: str,
        key: str,
        *,
        policy: RetryPolicy | None = None,
        max_retries: int | None = None,
        timeout: float = 10.0,
        transport: httpx.AsyncBaseTransport | None = None,
        now: Callable[[], datetime] = utc_now,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        random: Callable[[], float] = _random.random,
        on_retry: Callable[[Retrying], None] | None = None,
    ) -> None:
        base_url = _config.http_url(base_url, "the base URL")
        core = Core(_config.api_key(key), RetryPolicy(), now, random, on_retry)
        self._core = core.configured(policy=policy, max_retries=max_retries)
        self._sleep = sleep
        self._http = httpx.AsyncClient(
            base_url=base_url,
            timeout=timeout,
            transport=transport,
            headers={"User-Agent": USER_AGENT},
        )
        self.events = AsyncEvents(self._call)

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    def with_options(
        self,
        *,
        policy: RetryPolicy | None = None,
        max_retries: int | None = None,
        now: Callable[[], datetime] | None = None,
        sleep: Callable[[float], Awaitable[None]] | None = None,
        random: Callable[[], float] | None = None,
        on_retry: Callable[[Retrying], None] | None = None,
    ) -> AsyncClient:
        """This client with other retry settings (what is not given stays), sharing its
        connections: close the original, not the copy."""
        twin = copy.copy(self)
        twin._core = self._core.configured(
            policy=policy, max_retries=max_retries, now=now, random=random, on_retry=on_retry
        )
        twin._sleep = sleep or self._sleep
        twin.events = AsyncEvents(twin._call)
        return twin

    async def _call(self, call: Call[T]) -> T:
        plan = self._core.plan(call)
        try:
            step = next(plan)
            while True:
                if isinstance(step, Sleep):
                    await self._sleep(step.seconds)
                    step = plan.send(None)
                else:
                    step = plan.send(await self._send(step))
        except StopIteration as done:
            value: T = done.value
            return value

    async def _send(self, step: Send) -> Outcome:
        try:
            return await self._http.get(step.path, params=step.params, headers=step.headers)
        except httpx.RequestError as exc:  # the plan decides: retry, or raise its own error
            return exc

    async def reservations_page(
        self, *, limit: int = 100, after: str | None = None, **filters: Unpack[ReservationFilters]
    ) -> ReservationPage:
        """One page, newest start time first; pass `next_cursor` back as `after` with the
        same filters."""
        return await self._call(ops.reservations_page(limit=limit, after=after, **filters))

    async def reservations(
        self, *, page_size: int = 100, **filters: Unpack[ReservationFilters]
    ) -> AsyncIterator[Reservation]:
        """Every matching reservation, following `next_cursor` page by page."""
        after: str | None = None
        while True:
            page = await self.reservations_page(limit=page_size, after=after, **filters)
            for item in page.items:
                yield item
            if page.next_cursor is None:
                return
            after = page.next_cursor

    async def organization(self) -> KeyOrganization:
        """The organization this client's key belongs to, and the key (any key may ask)."""
        return await self._call(ops.organization())

    async def aircraft(self) -> list[Aircraft]:
        return await self._call(ops.aircraft())

    async def squawks(self, **filters: Unpack[SquawkFilters]) -> list[Squawk]:
        """The 500 most recent matching squawks, newest first."""
        return await self._call(ops.squawks(**filters))

    async def members(self) -> list[Member]:
        return await self._call(ops.members())

    async def maintenance_logs(self, *, aircraft_id: str | None = None) -> list[MaintenanceLog]:
        """The 500 most recent entries; filter by aircraft for a complete history."""
        return await self._call(ops.maintenance_logs(aircraft_id=aircraft_id))

    async def work_orders(self, *, status: WorkOrderStatus | None = None) -> list[WorkOrder]:
        return await self._call(ops.work_orders(status=status))

    async def calendar(self) -> str:
        """The iCalendar feed's text (the key goes in `?token=`, as calendar apps send it)."""
        return await self._call(ops.calendar())
