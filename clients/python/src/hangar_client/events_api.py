"""`client.events`: the events API, one page at a time (`list`) or every event in order
(`iter`), for both clients.

The API's cursor marks a page boundary, never one event, so an iterator's `cursor` moves
past a page only once every event of that page has been yielded: saved and passed back as
`after`, it gives every event not yet handed out (and, after a `break` in the middle of a
page, that page's earlier events again: delivery is at least once, `id` tells repeats).
"""

from __future__ import annotations

from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from datetime import datetime

from hangar_client import _operations as ops
from hangar_client._core import Call
from hangar_client.events import EventName
from hangar_client.models import Event, EventPage

DEFAULT_LIMIT = 100


class _Paging:
    """Where an iteration stands: what it holds of the current page, and the cursor."""

    def __init__(self, after: str | None, limit: int) -> None:
        self.cursor = after
        self._limit = limit
        self._held: deque[Event] = deque()
        self._page_end: str | None = None  # the held page's next_cursor
        self._caught_up = False

    def _needs_page(self) -> bool:
        """Whether a page must be fetched before the next event; moves `cursor` past the
        held page once all of it has been handed out."""
        if self._held:
            return False
        if self._page_end is not None:
            self.cursor, self._page_end = self._page_end, None
        return not self._caught_up

    def _hold(self, page: EventPage) -> None:
        self._held.extend(page.items)
        self._page_end = page.next_cursor
        self._caught_up = len(page.items) < self._limit


class EventIterator(_Paging, Iterator[Event]):
    """Every event after `after`, oldest first, fetched a page at a time; it ends when a
    page comes back short (caught up for now).

    `cursor` is where to resume: pass it as `after` (with the same filters) to a later
    `iter` or `list` to get only events this iterator has not yielded. It starts as `after`
    and moves to a page's `next_cursor` once every event of that page has been yielded and
    the loop asks for more, so after a loop that ran to its end it is the newest position:

        events = client.events.iter(after=saved)
        for event in events:
            handle(event)
        saved = events.cursor  # store it; poll again later with it
    """

    def __init__(self, fetch: Callable[[str | None], EventPage], after: str | None, limit: int):
        super().__init__(after, limit)
        self._fetch = fetch

    def __iter__(self) -> EventIterator:
        return self

    def __next__(self) -> Event:
        while self._needs_page():
            self._hold(self._fetch(self.cursor))
        if not self._held:
            raise StopIteration
        return self._held.popleft()


class AsyncEventIterator(_Paging, AsyncIterator[Event]):
    """`EventIterator` for `async for`, with the same `cursor`."""

    def __init__(
        self, fetch: Callable[[str | None], Awaitable[EventPage]], after: str | None, limit: int
    ):
        super().__init__(after, limit)
        self._fetch = fetch

    def __aiter__(self) -> AsyncEventIterator:
        return self

    async def __anext__(self) -> Event:
        while self._needs_page():
            self._hold(await self._fetch(self.cursor))
        if not self._held:
            raise StopAsyncIteration
        return self._held.popleft()


class Events:
    """The events API of the client's organization (scope `read:events`): what happened,
    oldest first, for catching up on webhooks a receiver missed. Events older than the
    server's retention window are gone; a cursor from before it raises `CursorExpired`.

    Filters: `event`, one name or several (an unknown name raises `UnknownEvent`), and
    `created_after` (timezone-aware; at or after). A cursor is bound to the filters it was
    given with: pass it back with the same ones.
    """

    def __init__(self, call: Callable[[Call[EventPage]], EventPage]) -> None:
        self._call = call

    def list(
        self,
        *,
        after: str | None = None,
        event: EventName | Sequence[EventName] | None = None,
        created_after: datetime | None = None,
        limit: int = DEFAULT_LIMIT,
    ) -> EventPage:
        """One page of up to `limit` (1 to 500) events after `after`."""
        return self._call(
            ops.events_page(limit=limit, after=after, event=event, created_after=created_after)
        )

    def iter(
        self,
        *,
        after: str | None = None,
        event: EventName | Sequence[EventName] | None = None,
        created_after: datetime | None = None,
        limit: int = DEFAULT_LIMIT,
    ) -> EventIterator:
        """Every event after `after` until caught up, `limit` per request; see
        `EventIterator.cursor` for resuming."""

        def fetch(cursor: str | None) -> EventPage:
            return self.list(after=cursor, event=event, created_after=created_after, limit=limit)

        return EventIterator(fetch, after, limit)


class AsyncEvents:
    """`Events` for the async client: `await client.events.list(...)`, and
    `async for event in client.events.iter(...)`."""

    def __init__(self, call: Callable[[Call[EventPage]], Awaitable[EventPage]]) -> None:
        self._call = call

    async def list(
        self,
        *,
        after: str | None = None,
        event: EventName | Sequence[EventName] | None = None,
        created_after: datetime | None = None,
        limit: int = DEFAULT_LIMIT,
    ) -> EventPage:
        """One page of up to `limit` (1 to 500) events after `after`."""
        return await self._call(
            ops.events_page(limit=limit, after=after, event=event, created_after=created_after)
        )

    def iter(
        self,
        *,
        after: str | None = None,
        event: EventName | Sequence[EventName] | None = None,
        created_after: datetime | None = None,
        limit: int = DEFAULT_LIMIT,
    ) -> AsyncEventIterator:
        """Every event after `after` until caught up, `limit` per request; see
        `EventIterator.cursor` for resuming."""

        async def fetch(cursor: str | None) -> EventPage:
            return await self.list(
                after=cursor, event=event, created_after=created_after, limit=limit
            )

        return AsyncEventIterator(fetch, after, limit)
