"""What one client may cost the server: sizes, times and counts, in one place, with the why.

One anonymous connection must not be able to slow every other client down or hold memory:
an 80 MB request header used to stall the event loop for seconds (the HTTP parser layer
grows URLs and header values by repeated concatenation, which is quadratic), a 250 MB body
was read whole into memory before any authentication, and a connection that sent half a
request, then nothing, was held until the process ran out of file descriptors.

- request target (path and query): 8 KiB, else 414 `URI_TOO_LONG` (hangar.http.server);
- request line and headers together: 16 KiB, else 431 `REQUEST_HEADERS_TOO_LARGE`
  (hangar.http.server);
- a request's line and headers must arrive within 10 s of its first byte (or of connecting,
  for a connection's first request), else 408 `REQUEST_TIMEOUT`; a connection that sent
  nothing is closed without an answer (hangar.http.server);
- a request's body must arrive within 30 s after its headers, else 408 `REQUEST_TIMEOUT`
  (hangar.http.server);
- an idle keep-alive connection is closed after 5 s (uvicorn's `timeout_keep_alive`);
- at most 100 connections open or requests in flight, else 503 `SERVICE_UNAVAILABLE`
  (uvicorn's `limit_concurrency`; the answer in hangar's shape from hangar.http.server);
- a body per route (`body_cap`: 64 KiB unless listed), else 413 `REQUEST_TOO_LARGE` before
  the body is read (`BodyLimit`, in the app);
- no request body, read by the app or not, beyond 1 MiB (the largest route cap): the
  connection is closed (hangar.http.server).

Every refusal closes its connection; every size counts bytes on the wire. No setting turns
any of this off: tests shorten the timeouts through `ServerLimits`, which refuses zero.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any

import orjson

KiB = 1024
MiB = 1024 * KiB

# --- The request head (request line and headers) ------------------------------------------

# The longest URL hangar makes is a /reservations page with a cursor and every filter, some
# 400 bytes; a calendar feed URL with its ?token= is under 200. 8 KiB is nginx's default
# for one request line (large_client_header_buffers 4 8k) and leaves twenty times headroom.
MAX_URL_BYTES = 8 * KiB

# The request line plus every header, as h11 (uvicorn's other HTTP implementation) and
# zttp bound them by default. A browser's headers with hangar's session cookie are under
# 2 KiB; an API client's, under 1 KiB.
MAX_HEAD_BYTES = 16 * KiB

# From the first byte of a request (or from connecting, for a connection's first request)
# to the end of its headers. A real client sends its headers in one write; ten seconds
# covers a lossy mobile link with retransmissions, and bounds the classic slowloris (a
# header line every few seconds, forever) to ten seconds of one connection slot.
HEAD_TIMEOUT_S = 10.0

# From the end of the headers to the end of the body. The largest body hangar accepts,
# 1 MiB, arrives in 30 s at 35 KB/s; the usual 64 KiB needs 2 KB/s. A body that stalls, or
# drips a byte at a time, loses its connection at the deadline.
BODY_TIMEOUT_S = 30.0

# An idle keep-alive connection between requests: uvicorn's own default, made explicit.
KEEP_ALIVE_TIMEOUT_S = 5

# --- Connections ----------------------------------------------------------------------------

# uvicorn's limit_concurrency: once this many connections are open or this many requests
# are in flight, each further request is answered 503 and its connection closed. It bounds
# the file descriptors and the memory that requests can hold at once (each in-flight request
# holds at most its body cap, about twice over while it is parsed: 100 x 2 x 1 MiB at the
# very worst). A small machine serving flying clubs has a few dozen users; a browser opens
# up to six connections, an API client one or two. Connections that send nothing count
# too: the head timeout is what frees them.
MAX_CONCURRENCY = 100

# The kernel's queue of connections not yet accepted: nginx's default on Linux. uvicorn's
# own default (2048) would queue twenty times more clients than can be served at once.
BACKLOG = 511

# --- Bodies, per route ----------------------------------------------------------------------

# Every JSON management route, product action and settings form: their largest field is a
# webhook URL of at most 4,096 characters (at most 36 KB form-encoded, 49 KB as JSON
# with \uXXXX escapes); 64 KiB holds every valid body of theirs.
DEFAULT_BODY_BYTES = 64 * KiB

# Signing in (`/api/session`, `/login`), reachable by anyone: an email of at most 320
# characters and a password of at most 1,024, even with every character escaped to 12
# bytes, stay under 16 KB.
SIGN_IN_BODY_BYTES = 32 * KiB

# A maintenance log entry's work_performed may hold 100,000 characters: 600 KB when a
# client escapes every character as \uXXXX (Python's json.dumps does for any non-ASCII
# text), 300 KB as raw UTF-8. The largest cap, and so also the protocol's backstop for a
# body that nothing reads.
MAINTENANCE_LOG_BODY_BYTES = 1 * MiB
MAX_BODY_BYTES = MAINTENANCE_LOG_BODY_BYTES

SIGN_IN_PATHS = frozenset({"/api/session", "/login"})


def body_cap(path: str) -> int:
    """The most bytes of body a request to `path` may carry, whatever its method."""
    if path in SIGN_IN_PATHS:
        return SIGN_IN_BODY_BYTES
    if path.startswith("/api/orgs/") and path.endswith("/maintenance-logs"):
        return MAINTENANCE_LOG_BODY_BYTES
    return DEFAULT_BODY_BYTES


@dataclass(frozen=True)
class ServerLimits:
    """The times and counts a server runs with: production uses the defaults; tests shorten
    the timeouts so that they need not wait ten seconds. None can be turned off."""

    head_timeout_s: float = HEAD_TIMEOUT_S
    body_timeout_s: float = BODY_TIMEOUT_S
    keep_alive_timeout_s: int = KEEP_ALIVE_TIMEOUT_S
    max_concurrency: int = MAX_CONCURRENCY
    backlog: int = BACKLOG

    def __post_init__(self) -> None:
        for name, value in vars(self).items():
            if not value > 0:
                raise ValueError(f"{name} must be positive, not {value!r}")


# --- The body limit, in the app -------------------------------------------------------------

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def error_bytes(code: str, detail: str) -> bytes:
    return orjson.dumps({"detail": detail, "code": code})


def _too_large(cap: int) -> bytes:
    return error_bytes(
        "REQUEST_TOO_LARGE",
        f"The request body is larger than this endpoint accepts ({cap:,} bytes at most)",
    )


class _BodyTooLarge(Exception):
    """Raised from `receive` once a body passes its cap; the app's own answer is dropped."""


class BodyLimit:
    """Caps each request's body by route (`body_cap`), as a pure ASGI middleware.

    A request that declares a larger Content-Length is answered 413 before the app runs and
    before one byte of its body is read (a client that sent `Expect: 100-continue` never
    sends it). A body of unknown length is counted as the app receives it; past the cap the
    app gets no more of it, whatever the app answers is dropped, and the client gets the
    413. Each 413 closes the connection, so the rest of the body is never read. A request
    with neither Content-Length nor Transfer-Encoding (every GET) costs one pass over its
    header list.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            for name, _ in scope["headers"]:
                if name == b"content-length" or name == b"transfer-encoding":
                    await self._bounded(scope, receive, send)
                    return
        await self.app(scope, receive, send)

    async def _bounded(self, scope: Scope, receive: Receive, send: Send) -> None:
        cap = body_cap(scope["path"])
        declared = _content_length(scope["headers"])
        if declared is not None and declared > cap:
            await send_json(send, 413, _too_large(cap), close=True)
            return
        if declared is None and scope["path"] in SIGN_IN_PATHS:
            # Anyone may post here. A body of unknown length (chunked) is read to its end, at
            # most the cap, before the app runs: a flood of oversized ones is refused as
            # cheaply as declared ones, without routing, dependencies or a limiter lookup.
            body = await _read_within(receive, cap)
            if body is None:
                await send_json(send, 413, _too_large(cap), close=True)
                return
            receive = _replayed(body, receive)

        received = 0
        refused = False
        started = False

        async def counted() -> Message:
            nonlocal received, refused
            if refused:
                raise _BodyTooLarge
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > cap:
                    refused = True
                    raise _BodyTooLarge
            return message

        async def guarded(message: Message) -> None:
            nonlocal started
            if refused:
                return  # the app's answer to a body it could not finish reading
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, counted, guarded)
        except Exception:
            if not refused:
                raise
        if refused and not started:
            await send_json(send, 413, _too_large(cap), close=True)


async def _read_within(receive: Receive, cap: int) -> bytes | None:
    """The whole body, or None once it passes `cap` bytes (or the client went away)."""
    parts: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return None
        part = message.get("body", b"")
        size += len(part)
        if size > cap:
            return None
        parts.append(part)
        if not message.get("more_body"):
            return b"".join(parts)


def _replayed(body: bytes, receive: Receive) -> Receive:
    """A receive that gives the body already read, whole, then whatever comes next."""
    pending = [{"type": "http.request", "body": body, "more_body": False}]

    async def replay() -> Message:
        return pending.pop() if pending else await receive()

    return replay


def _content_length(headers: list[tuple[bytes, bytes]]) -> int | None:
    for name, value in headers:
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None  # the HTTP parser refuses these; count the body instead
    return None


async def send_json(
    send: Callable[[Any], Awaitable[None]], status: int, body: bytes, *, close: bool = False
) -> None:
    """Answers `status` with the JSON `body` through ASGI `send` (this module's, or uvicorn's,
    which types its messages); `close` asks for the connection to be closed after it."""
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if close:
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
