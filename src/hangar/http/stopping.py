"""A server between SIGTERM and its exit, as the app sees it: `Stopping`, which the protocol
sets when uvicorn asks the connections to shut down (hangar.http.protocol) and which
/api/health/ready answers 503 from, and `CutOff`, which answers a request the end of the
grace period (hangar.http.server.SHUTDOWN_GRACE_S) cuts off with the API's JSON 503 instead
of uvicorn's plain-text 500.

The app and the protocol share one `Stopping` through the ASGI lifespan state (under
`STATE_KEY`): uvicorn hands that dict to every connection's protocol and a copy of it to
every request's scope, and the object in it is the same one in all of them.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any

from hangar.http.limits import ASGIApp, Message, Receive, Scope, Send, error_bytes

log = logging.getLogger("hangar")

STATE_KEY = "hangar.stopping"

# What a client cut off is told: try again at once, another instance (behind the proxy)
# answers; this one is gone within the second.
CUT_OFF_RETRY_AFTER_S = 1
CUT_OFF = error_bytes(
    "SERVICE_UNAVAILABLE",
    "The server stopped before this request finished; it may not have been carried out: "
    "check, then try again",
)


class Stopping:
    """Whether the server of this app has been asked to stop (SIGTERM, SIGINT)."""

    def __init__(self) -> None:
        self._stopping = False

    @property
    def is_set(self) -> bool:
        return self._stopping

    def begin(self) -> None:
        self._stopping = True


def stopping_in(state: Mapping[str, Any] | None) -> Stopping | None:
    """The `Stopping` in a lifespan state or a request scope's "state", if the app put one."""
    found = (state or {}).get(STATE_KEY)
    return found if isinstance(found, Stopping) else None


class CutOff:
    """Pure ASGI middleware: a request cancelled while its server stops, before its answer
    began, is answered 503 `SERVICE_UNAVAILABLE` with Retry-After and the connection closed.
    A cancellation at any other time is not this one's to answer, and goes on."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def watched(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, watched)
        except asyncio.CancelledError:
            stopping = stopping_in(scope.get("state"))
            if started or stopping is None or not stopping.is_set:
                raise
            # uvicorn cancelled it at the end of the grace period: the client still gets an
            # answer it can act on, and the request is not reported as an error of the app.
            log.warning(
                "%s %s cut off: the server is stopping and the grace period is over",
                scope.get("method"),
                scope.get("path"),
            )
            headers = [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(CUT_OFF)).encode()),
                (b"retry-after", str(CUT_OFF_RETRY_AFTER_S).encode()),
                (b"connection", b"close"),
            ]
            await send({"type": "http.response.start", "status": 503, "headers": headers})
            await send({"type": "http.response.body", "body": CUT_OFF})
