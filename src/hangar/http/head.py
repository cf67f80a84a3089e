"""HEAD wherever GET is answered (RFC 9110 §9.3.2): the GET's status and headers, no body.

FastAPI's routes answer only the methods they name, so each GET would need a HEAD twin, and
each twin would be a second operation in the OpenAPI description. Instead this layer hands
the app a GET and passes on what it answers but the body: the same route, the same key
authentication and rate limit (a HEAD is a request like any other, and counts), the same
validators and 304s, and the GET's own Content-Length, as §9.3.2 allows and as clients
that ask before they fetch expect.

The app gets a copy of the scope that says GET; the scope the server and the outer layers
hold still says HEAD: uvicorn writes no body and its access line says HEAD, and the request
metrics count it as HEAD, under the route the router matched (copied back for them).
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

# The body, and the ASGI extensions that hand the server a file to send as the body.
_BODIES = frozenset(("http.response.body", "http.response.pathsend", "http.response.zerocopysend"))


class HeadAsGet:
    """Inside the request metrics, outside the exception handlers: the refusals (401, 429,
    405...) of a HEAD lose their body as the 200s do."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "HEAD":
            await self.app(scope, receive, send)
            return
        as_get = dict(scope)
        as_get["method"] = "GET"

        async def headers_only(message: Message) -> None:
            kind = message["type"]
            if kind == "http.response.start":
                await send(message)
            elif kind in _BODIES:
                if not message.get("more_body", False):
                    await send({"type": "http.response.body", "body": b"", "more_body": False})
            else:
                await send(message)

        try:
            await self.app(as_get, receive, headers_only)
        finally:
            route = as_get.get("route")
            if route is not None:
                scope["route"] = route
