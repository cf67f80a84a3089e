"""`hangar-client listen`: polls the events API and forwards each event to a local URL as
hangar would deliver it (same envelope, headers and signatures, with a local secret), so a
receiver can be developed on a laptop that hangar cannot reach.

It keeps within the API's limits: it polls every `interval` seconds while caught up, pages
at once while pages come back full, and on a 429 waits for the refusing bucket (the next
calendar minute or hour) instead of failing: the client's own retries do the waiting,
without bound, and each wait is said (as when hangar is unreachable). A receiver that
fails gets hangar's three attempts (waits of 2 s and 8 s), then the listener moves on.
Its position is saved after every forwarded event, so a crash forwards at most one event
twice. The stop event (Ctrl-C, SIGTERM) abandons whatever is under way at once, a retry's
wait too; the abandoned event is forwarded again by the next `--resume`.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import unicodedata
import uuid
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TextIO, TypeVar

import httpx

from hangar_client import _delivery
from hangar_client._core import Retrying
from hangar_client._listen_state import Position, StateError, StateFile
from hangar_client.async_client import AsyncClient
from hangar_client.errors import (
    CursorExpired,
    HangarClientError,
    HangarError,
    InvalidPayload,
    RateLimited,
)
from hangar_client.events import EventName
from hangar_client.models import Event, EventPage
from hangar_client.policy import RetryPolicy
from hangar_client.signature import whsec

T = TypeVar("T")
EXIT_REFUSED = 1
_LIMITS = {"minute": "60 requests a minute", "hour": "1000 requests an hour"}


@dataclass(frozen=True)
class ListenOptions:
    forward_to: str
    secret: str
    events: tuple[EventName, ...] = ()  # none: every event
    resume: bool = False
    interval: float = 5.0  # seconds between polls while caught up (720 an hour: within 1000)
    limit: int = 100


class Stopped(Exception):
    """The stop event was set: what was under way is abandoned."""


class Refused(Exception):
    """Something that ends the run with one line on stderr (exit status 1)."""


class Listener:
    """One run of `listen`. The clock, sleep and random source are injected so that tests
    never wait; `forward` is the httpx client that posts to the receiver."""

    def __init__(
        self,
        api: AsyncClient,
        forward: httpx.AsyncClient,
        options: ListenOptions,
        state: StateFile,
        stop: asyncio.Event,
        *,
        out: TextIO,
        err: TextIO,
        now: Callable[[], datetime],
        sleep: Callable[[float], Coroutine[Any, Any, None]],
        random: Callable[[], float],
    ) -> None:
        # Told what the retries wait for, and never giving up: a listener outlasts outages.
        self._api = api.with_options(
            policy=RetryPolicy(
                max_rate_limit_wait=float("inf"),
                max_rate_limit_retries=sys.maxsize,
                max_retries=sys.maxsize,
                backoff_cap=options.interval,
            ),
            now=now,
            sleep=sleep,  # inside _unless_stopped(events.list(...)): a stop cancels it
            random=random,
            on_retry=self._announce,
        )
        self._forward = forward
        self._options = options
        self._state = state
        self._stop = stop
        self._out = out
        self._err = err
        self._now = now
        self._sleep = sleep
        self._position = Position(None, None)

    async def run(self) -> int:
        """Forwards until stopped (0), or until hangar refuses to go on (1)."""
        try:
            self._position = self._starting_position()
            while True:
                page = await self._poll()
                await self._forward_page(page)
                if len(page.items) < self._options.limit:  # caught up for now
                    await self._wait(self._options.interval)
        except Stopped:  # the position is saved already: after every change
            self._say(f"Stopped. Position saved in {self._state.path}; --resume continues there.")
            return 0
        except (Refused, StateError) as refused:
            print(f"hangar-client listen: {printable(str(refused))}", file=self._err, flush=True)
            return EXIT_REFUSED

    def _starting_position(self) -> Position:
        options = self._options
        which = ", ".join(options.events) if options.events else "all events"
        self._say(f"Forwarding {which} to {options.forward_to}")
        self._say(f"Signing secret: {options.secret}")
        self._say(f"  the same for Standard Webhooks libraries: {whsec(options.secret)}")
        saved = self._state.load() if options.resume else None
        if saved is not None:
            self._say(f"Resuming from the position saved in {self._state.path}; Ctrl-C to stop.")
            return saved
        start = self._now()
        since = f"starting from now (events created from {start.astimezone(UTC).isoformat()} on)"
        if options.resume:
            since = f"no position saved yet in {self._state.path}: {since}"
        self._say(f"{since[0].upper()}{since[1:]}; Ctrl-C to stop.")
        # Saved at once: a run stopped before its first page still has a start to resume.
        self._state.save(Position(None, start))
        return Position(None, start)

    async def _poll(self) -> EventPage:
        """The page after the position; the client waits out rate limits and outages."""
        position = self._position
        try:
            return await self._unless_stopped(
                self._api.events.list(
                    after=position.cursor,
                    event=self._options.events,
                    created_after=position.created_after,
                    limit=self._options.limit,
                )
            )
        except CursorExpired:
            raise Refused(
                "the saved position is older than hangar keeps events (410 CURSOR_EXPIRED); "
                "run without --resume to start from now"
            ) from None
        except HangarError as refused:
            # One line, also when the detail is a proxy's page.
            raise Refused(f"hangar refused: {' '.join(str(refused).split())}") from None
        except InvalidPayload as exc:  # not JSON, or not the page the API promises
            raise Refused(f"hangar's answer is not an events page: {exc}") from None
        except HangarClientError as exc:  # what no retry can mend (an undecodable answer)
            raise Refused(str(exc)) from None

    def _announce(self, retry: Retrying) -> None:
        error = retry.error
        if isinstance(error, RateLimited) and error.bucket is not None:
            self._say(
                f"{self._clock()}  rate limited ({_LIMITS[error.bucket]} per key): "
                f"waiting {retry.wait:.0f} s for the next {error.bucket}"
            )
        elif isinstance(error, RateLimited):
            self._say(f"{self._clock()}  rate limited: waiting {retry.wait:.0f} s")
        else:
            cause = error.__cause__
            reason = f"{type(cause).__name__}: {cause}" if cause else error
            if isinstance(error, HangarError):
                reason = f"{error.status} {error.code}"
            self._say(
                f"{self._clock()}  hangar unreachable ({reason}); "
                f"trying again in {retry.wait:.1f} s"
            )

    async def _forward_page(self, page: EventPage) -> None:
        position = self._position
        ids = [item.id for item in page.items]
        # A resumed run starts on the page whose first events it already forwarded.
        done = ids.index(position.last_id) + 1 if position.last_id in ids else 0
        for item in page.items[done:]:
            await self._deliver(item)
            self._save(Position(position.cursor, position.created_after, item.id))
        self._save(Position(page.next_cursor, position.created_after))

    async def _deliver(self, item: Event) -> None:
        """Up to hangar's three attempts, one delivery id for all; one line on how it went."""
        delivery_id = str(uuid.uuid4())
        outcomes: list[str] = []
        for attempt in range(1 + len(_delivery.RETRY_WAITS)):
            if attempt:
                await self._wait(_delivery.RETRY_WAITS[attempt - 1])
            status, outcome = await self._attempt(item, delivery_id)
            outcomes.append(outcome)
            if status is not None and 200 <= status < 300:
                break
        else:
            outcomes.append(f"failed {len(outcomes)} times, moving on")
        self._say(f"{self._clock()}  {item.event}  {item.id}  -> {'; '.join(outcomes)}")

    async def _attempt(self, item: Event, delivery_id: str) -> tuple[int | None, str]:
        moment = self._now()
        body = _delivery.envelope(item.event, moment, item.raw_data)
        headers = _delivery.headers(
            event=item.event,
            event_id=item.id,
            delivery_id=delivery_id,
            secret=self._options.secret,
            timestamp=_delivery.unix_seconds(moment),
            body=body,
        )
        post = self._forward.post(
            self._options.forward_to,
            content=body,
            headers=headers,
            timeout=_delivery.ATTEMPT_TIMEOUT,
            follow_redirects=False,
        )
        try:
            response = await self._unless_stopped(post)
        except httpx.TimeoutException:
            return None, f"no answer within {_delivery.ATTEMPT_TIMEOUT:g} s"
        except httpx.TransportError as exc:
            return None, f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        return response.status_code, str(response.status_code)

    def _save(self, position: Position) -> None:
        if position != self._position:
            self._state.save(position)
            self._position = position

    async def _wait(self, seconds: float) -> None:
        await self._unless_stopped(self._sleep(seconds))

    async def _unless_stopped(self, work: Coroutine[Any, Any, T]) -> T:
        """`work`'s result, unless the stop event comes first: then `work` is cancelled and
        Stopped raised."""
        if self._stop.is_set():
            work.close()
            raise Stopped
        task = asyncio.ensure_future(work)
        stopping = asyncio.ensure_future(self._stop.wait())
        try:
            await asyncio.wait((task, stopping), return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopping.cancel()
            if not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        if task.cancelled():
            raise Stopped
        return task.result()

    def _clock(self) -> str:
        return self._now().astimezone(UTC).strftime("%H:%M:%SZ")

    def _say(self, line: str) -> None:
        print(printable(line), file=self._out, flush=True)


def printable(text: str) -> str:
    """`text` with every control and format character escaped (\\x1b, \\u202e): what a
    server or a receiver says is shown, never obeyed by the terminal (an escape sequence
    could rewrite the lines above it, or a bidirectional override reorder them)."""
    return "".join(
        ch if unicodedata.category(ch) not in ("Cc", "Cf") else ch.encode("unicode_escape").decode()
        for ch in text
    )
