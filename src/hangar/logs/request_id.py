"""The request id: every request is served under one, echoed in its `X-Request-ID` response
header and carried by every record logged while it is served (JSON's `request_id`).

The client's own `X-Request-ID` is kept when it is sane: 1 to 128 characters, each printable
ASCII other than the space (0x21 to 0x7E), so that it cannot break a log line or a header.
Anything else (absent, empty, too long, a space, a control character, non-ASCII) is replaced
by a new id: 32 hex digits, 128 random bits. Either way it is the one echoed.

A raw ASGI middleware, the outermost layer of the app (hangar.app), so that every answer of
the app carries it: errors, BodyLimit's 413s, 404s, 401s, the 500s of unexpected errors.
Refusals the server makes before the app sees a request (hangar.http.server: a request line or
headers too large, a request too slow to arrive, too many connections) have no request.
On the read path it costs one pass over the header list, an id, one context variable and one
header appended.
"""

from __future__ import annotations

import os
import re

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from hangar.http.access_log import ServedRequest, current_request

HEADER = b"x-request-id"
MAX_LENGTH = 128
_SANE = re.compile(rb"[\x21-\x7e]{1,%d}" % MAX_LENGTH)
_UNSAFE_METHODS = frozenset(("POST", "PUT", "PATCH", "DELETE"))
# The bodies that may carry a credential (a password, a CSRF token): forms and JSON.
_CREDENTIAL_BODIES = (b"application/x-www-form-urlencoded", b"application/json")


def _may_carry_credentials(scope: Scope) -> bool:
    if scope["method"] not in _UNSAFE_METHODS:
        return False
    for name, value in scope["headers"]:
        if name == b"content-type":
            return bool(value.lower().startswith(_CREDENTIAL_BODIES))
    return False


def request_id(headers: list[tuple[bytes, bytes]]) -> str:
    """The client's X-Request-ID if it is sane (module docstring), else a new one."""
    for name, value in headers:
        if name == HEADER:
            if _SANE.fullmatch(value):
                return value.decode("ascii")
            break
    # 128 random bits in hex, as uuid4().hex spells them, at a quarter of its cost.
    return os.urandom(16).hex()


class RequestId:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        served = ServedRequest(request_id(scope["headers"]), scope["headers"])
        echoed = (HEADER, served.id.encode("ascii"))
        # One context variable: the JSON formatter reads the id from it (hangar.logs.formats),
        # so no structlog binding is made and undone on every request.
        current = current_request.set(served)

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [*message.get("headers", ()), echoed]
                message["headers"] = headers
                served.responded(headers)  # a session cookie issued is a secret too
            await send(message)

        async def kept() -> Message:
            received: Message = await receive()
            if received["type"] == "http.request":
                served.add_body(received.get("body", b""))
            return received

        # Only a form or JSON body is kept (its start, for the scrubbing); a GET, or any
        # other body, is passed the server's own receive.
        inner_receive = kept if _may_carry_credentials(scope) else receive
        await self.app(scope, inner_receive, send_with_id)
        # Left bound when the app raised: the server logs that traceback once this returns,
        # still under the request's id and scrubbed of its credentials (each request is a
        # task of its own, whose context ends with it).
        current_request.reset(current)
