"""The middleware that counts and times every HTTP request (hangar.foundation.metrics's REQUESTS and
REQUEST_DURATION): the web's side of the metrics, apart from the metrics themselves, which
the dispatcher and the jobs import without the web framework."""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from hangar.foundation.metrics import REQUEST_DURATION, REQUESTS

UNMATCHED = "unmatched"  # no route: a 404 of the router, or a path the app does not serve
# Any other method a client sends is counted as OTHER: the label's values stay bounded.
METHODS = frozenset(("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"))


class RequestMetrics:
    """Counts and times every HTTP request by route template, method and status.

    A raw ASGI middleware (the read path is benchmarked): the label children are looked up
    once per (route, method, status) and kept, so a request costs two clock reads, one dict
    lookup for each metric, an increment and an observation. `skip` paths (the scrape
    itself) are passed through uncounted.
    """

    def __init__(self, app: ASGIApp, skip: Iterable[str] = ()) -> None:
        self.app = app
        self._skip = frozenset(skip)
        # Keyed by the route's id: routes live as long as the app, and some are unhashable.
        self._counters: dict[tuple[int, str, int], Any] = {}
        self._timers: dict[tuple[int, str], Any] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in self._skip:
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500  # what the client gets if the app raises before answering

        async def send_and_note(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_and_note)
        finally:
            route = scope.get("route")
            method = scope["method"] if scope["method"] in METHODS else "OTHER"
            counter = self._counters.get((id(route), method, status))
            if counter is None:
                counter = self._counters[(id(route), method, status)] = REQUESTS.labels(
                    _operation(route), method, str(status)
                )
            timer = self._timers.get((id(route), method))
            if timer is None:
                timer = self._timers[(id(route), method)] = REQUEST_DURATION.labels(
                    _operation(route), method
                )
            counter.inc()
            timer.observe(time.perf_counter() - started)


def _operation(route: Any) -> str:
    path = getattr(route, "path", None)
    return path if isinstance(path, str) and path else UNMATCHED
