"""The protocol that bounds each client (hangar.http.server runs uvicorn with it).

It is uvicorn's own httptools protocol (httptools, llhttp underneath, still parses
every byte) with counters and one timer added, because uvicorn bounds none of these:

- the request target and the headers: by the bytes of every read that ends with a request's
  headers incomplete, and once they are complete by what the parser reported (header by
  header only when a read was large enough to hold too much). Counting in `on_header` alone
  would not do: httptools joins the pieces of a header value that arrive in separate reads
  by concatenation before it calls `on_header`, as uvicorn does the pieces of the URL, and
  that concatenation is what made an 80 MB header cost seconds. Counting the reads bounds
  it to the limit plus one read;
- the time a request's headers, then its body, may take to arrive (uvicorn's keep-alive
  timeout only starts after a response, so a connection that sends half a request, or
  nothing at all, was kept for ever);
- the body bytes of any one request, read by the app or discarded after its response
  (`BodyLimit` in the app caps each route more tightly, and answers first).

Each refusal is answered with the `{detail, code}` JSON of every other hangar error, then
the connection is closed; the URL and headers of a refused request are never logged
(feed URLs carry keys). Why this rather than uvicorn's h11 protocol (which caps the head
at 16 KiB): h11 parses in Python, and the read path is measured slower with it (see the
commit and docs/contributors/decisions.md); it has no request timeouts either, and refuses
with a plain-text 400.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, ClassVar, NamedTuple

import httptools
from uvicorn._types import ASGIReceiveCallable, ASGISendCallable, Scope
from uvicorn.protocols.http.flow_control import service_unavailable
from uvicorn.protocols.http.httptools_impl import (
    STATUS_LINE,
    HttpToolsProtocol,
    RequestResponseCycle,
)

from hangar.http.limits import (
    MAX_BODY_BYTES,
    MAX_HEAD_BYTES,
    MAX_URL_BYTES,
    ServerLimits,
    error_bytes,
    send_json,
)
from hangar.http.stopping import stopping_in

log = logging.getLogger("uvicorn.error")


BUSY = error_bytes(
    "SERVICE_UNAVAILABLE",
    "The server is handling as many connections as it accepts; try again shortly",
)


class _Refusal(NamedTuple):
    """The answer to a request refused for its size: `_refuse`'s status, code and detail."""

    status: int
    code: str
    detail: str


_URL_TOO_LONG = _Refusal(
    414, "URI_TOO_LONG", f"The request target is longer than {MAX_URL_BYTES:,} bytes"
)
_HEAD_TOO_LARGE = _Refusal(
    431,
    "REQUEST_HEADERS_TOO_LARGE",
    f"The request line and headers are larger than {MAX_HEAD_BYTES:,} bytes",
)


class _Refused(Exception):
    """Raised from a parser callback to stop parsing a request that has been refused."""


async def _busy(scope: Scope, receive: ASGIReceiveCallable, send: ASGISendCallable) -> None:
    """uvicorn's answer past `limit_concurrency`, in hangar's error shape."""
    await send_json(send, 503, BUSY, close=True)


class BoundedHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with hangar's size and time bounds (module docstring)."""

    limits: ClassVar[ServerLimits] = ServerLimits()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._deadline: asyncio.TimerHandle | None = None
        self._in_head = False  # a request has begun and its headers are not complete
        self._body_pending = False  # its headers are complete and its body is not
        self._unfinished_head = 0  # bytes of the reads that ended with the headers incomplete
        self._read = 0  # bytes of the read being parsed
        self._body_bytes = 0
        self._message_ended = False  # a request ended within the read being parsed
        self._refused = False
        self._draining = False  # the server is stopping: each answer closes the connection

    @classmethod
    def with_limits(cls, limits: ServerLimits) -> type[BoundedHttpToolsProtocol]:
        """This protocol with other timeouts and counts (tests shorten the timeouts)."""
        if limits == cls.limits:
            return cls
        return type(cls.__name__, (cls,), {"limits": limits})

    # --- the connection ------------------------------------------------------------------

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        # uvicorn's keep-alive timer starts only after a first response: a connection that
        # never sends a request would otherwise be kept until the client lets it go.
        self._arm(self.limits.head_timeout_s)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        # uvicorn's data_received, with the parser's callbacks allowed to refuse a request
        # and the head's bytes counted after each read.
        self._unset_keepalive_if_required()
        if self._refused:
            return
        self._message_ended = False
        self._read = len(data)
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            if self._should_upgrade():
                self.handle_websocket_upgrade()
            else:
                self._unsupported_upgrade_warning()
            return
        except httptools.HttpParserError:
            if self._refused:
                return  # a callback refused the request and has answered it
            msg = "Invalid HTTP request received."
            log.warning(msg)
            self.send_400_response(msg)
            self._refused = True
            return
        if self._in_head:
            # The whole read was part of an unfinished head, unless a request ended within
            # it (the next one began somewhere in it): that tail is left uncounted, so at
            # most one read's worth is ever parsed beyond a limit.
            if len(self.url) > MAX_URL_BYTES:
                self._refuse(*_URL_TOO_LONG, current=False)
                return
            if not self._message_ended:
                self._unfinished_head += len(data)
                if self._unfinished_head > MAX_HEAD_BYTES:
                    self._refuse(*_HEAD_TOO_LARGE, current=False)
                    return
            if self._deadline is None:
                self._arm(self.limits.head_timeout_s)
        elif self._body_pending and self._deadline is None:
            self._arm(self.limits.body_timeout_s)

    # --- parser callbacks ----------------------------------------------------------------

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._in_head = True
        self._unfinished_head = self._body_bytes = 0

    def on_headers_complete(self) -> None:
        self._in_head = False
        self._body_pending = True
        if self._deadline is not None:
            self._disarm()
        if len(self.url) > MAX_URL_BYTES:
            self._refuse(*_URL_TOO_LONG, current=False)
            raise _Refused
        # The head is at most what the reads that held it brought: only a read that could
        # hold more than the limit needs the head counted, header by header.
        if self._unfinished_head + self._read > MAX_HEAD_BYTES and self._head_size() > (
            MAX_HEAD_BYTES
        ):
            self._refuse(*_HEAD_TOO_LARGE, current=False)
            raise _Refused
        super().on_headers_complete()
        if self._draining:
            self.cycle.keep_alive = False  # its task is scheduled, not started: in time

    def _head_size(self) -> int:
        return len(self.url) + sum(len(name) + len(value) + 4 for name, value in self.headers)

    def on_body(self, body: bytes) -> None:
        self._body_bytes += len(body)
        if self._body_bytes > MAX_BODY_BYTES:
            # More than any route accepts: read by an app that does not check (BodyLimit
            # answers every route sooner), or still arriving after the response was sent.
            self._refuse(
                413,
                "REQUEST_TOO_LARGE",
                f"The request body is larger than {MAX_BODY_BYTES:,} bytes",
                current=True,
            )
            raise _Refused
        super().on_body(body)

    def on_message_complete(self) -> None:
        self._body_pending = False
        self._message_ended = True
        if self._deadline is not None:
            self._disarm()
        super().on_message_complete()

    def _start_asgi_task(self, cycle: RequestResponseCycle, app: Any) -> None:
        # uvicorn picks its plain-text 503 app past limit_concurrency; answer in JSON.
        super()._start_asgi_task(cycle, _busy if app is service_unavailable else app)

    def shutdown(self) -> None:
        # uvicorn closes an idle keep-alive connection here, at once. A proxy may be writing
        # a request on it at that very moment: a GET it sends again elsewhere, but a POST it
        # has sent it answers 502 (it may have been carried out). Instead the connection
        # stays open and its next answer says `Connection: close`, or the keep-alive timeout
        # closes it if no request comes: a proxy whose own idle timeout is shorter (deploy/'s
        # nginx) closes it first, so no request is ever written to a closing connection.
        if self._draining:
            return  # told twice: hangar's server at the signal, then uvicorn's shutdown
        stopping = stopping_in(self.app_state)
        if stopping is not None:
            stopping.begin()
        self._draining = True
        if self.cycle is not None and not self.cycle.response_complete:
            self.cycle.keep_alive = False
        elif self.cycle is None and not self._in_head:
            # Accepted, nothing sent yet: the keep-alive timeout, not the head's 10 s.
            self._disarm()
            self._arm(self.limits.keep_alive_timeout_s)

    # --- deadlines and refusals ------------------------------------------------------------

    def _arm(self, seconds: float) -> None:
        self._deadline = self.loop.call_later(seconds, self._deadline_passed)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _deadline_passed(self) -> None:
        self._deadline = None
        if self.transport.is_closing():
            return
        if self._in_head:
            wait = self.limits.head_timeout_s
            detail = f"The request's headers did not arrive within {wait:g} seconds"
            self._refuse(408, "REQUEST_TIMEOUT", detail, current=False)
        elif self._body_pending:
            wait = self.limits.body_timeout_s
            detail = f"The request's body did not arrive within {wait:g} seconds"
            self._refuse(408, "REQUEST_TIMEOUT", detail, current=True)
        else:
            # Connected and sent nothing: there is no request to answer.
            self._refused = True
            self.transport.close()

    def _refuse(self, status: int, code: str, detail: str, *, current: bool) -> None:
        """Answers `status` and closes, or, when a response is already under way on this
        connection, closes once it is sent. `current`: the refusal is about the request
        whose cycle is `self.cycle` (its body), not about a new request's head."""
        self._refused = True
        self._disarm()
        prefix = f"{self.client[0]}:{self.client[1]} - " if self.client else ""
        log.warning("%sHTTP %d: %s", prefix, status, detail)
        cycle: RequestResponseCycle | None = self.cycle
        if current and cycle is not None:
            answer = not cycle.response_started
        else:
            answer = cycle is None or cycle.response_complete
        if answer:
            self._write_error(status, code, detail)
            if current and cycle is not None:
                # The app may still be waiting for the body: it gets a disconnect, and
                # nothing it sends now reaches the wire.
                cycle.disconnected = True
                cycle.message_event.set()
            self.transport.close()
        elif cycle is not None and not cycle.response_complete:
            cycle.keep_alive = False  # uvicorn closes once that response is sent
            self.flow.pause_reading()
        else:
            self.transport.close()

    def send_400_response(self, msg: str) -> None:
        # uvicorn's answer to bytes that are not HTTP, in hangar's error shape.
        self._write_error(400, "BAD_REQUEST", "The request is not valid HTTP/1.1")
        self.transport.close()

    def _write_error(self, status: int, code: str, detail: str) -> None:
        body = error_bytes(code, detail)
        content = [STATUS_LINE[status]]
        for name, value in self.server_state.default_headers:
            content.extend([name, b": ", value, b"\r\n"])
        content.extend(
            [
                b"content-type: application/json\r\n",
                b"content-length: " + str(len(body)).encode() + b"\r\n",
                b"connection: close\r\n\r\n",
                body,
            ]
        )
        self.transport.write(b"".join(content))
