"""The plumbing every route shares, JSON API and screens alike.

Routes stay thin: the services come from `ServicesDep`, the clock's time from `Now`, the path
id from `path_id`, and a product action's one transaction from `Tx`.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from datetime import datetime
from typing import Annotated, Any

from fastapi import Depends, Request
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute
from sqlalchemy.ext.asyncio import AsyncConnection
from starlette.datastructures import MutableHeaders
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from hangar.foundation.ids import parse_id
from hangar.http.idempotency import settling
from hangar.kit.container import Services
from hangar.kit.errors import ApiError, NotFound

# Every route of one organization's product API sits under this prefix.
ORG_PREFIX = "/api/orgs/{org_id}"


def services_of(request: Request) -> Services:
    """The process's services, as the app was built with them (`app.state` is untyped)."""
    services: Services = request.app.state.services
    return services


ServicesDep = Annotated[Services, Depends(services_of)]


def now_of(services: ServicesDep) -> datetime:
    """The services' clock, read once per request."""
    return services.clock.now()


Now = Annotated[datetime, Depends(now_of)]


async def transaction(services: ServicesDep) -> AsyncIterator[AsyncConnection]:
    """The request's one transaction: it commits when the route returns, and rolls back when
    the route raises. A command's change and its events (the outbox) commit together.

    Declared with `scope="function"` (see `Tx`), so FastAPI closes it when the route function
    returns and *before* the response is sent: a client that got a 2xx finds the change
    committed, and a failed commit is answered by the error handlers (503 when the database is
    unavailable, 500 otherwise), never by the 2xx. (The default scope, "request", would close
    it only after the response went out.)
    """
    async with services.engine.begin() as conn:
        yield conn


Tx = Annotated[AsyncConnection, Depends(transaction, scope="function")]


def bearer(request: Request) -> str | None:
    """The credential of `Authorization: Bearer <credential>` (scheme case-insensitive), or
    None: the public API's keys and the metrics token are both presented so."""
    header = request.headers.get("authorization")
    if not header:
        return None
    scheme, _, value = header.partition(" ")
    return value.strip() or None if scheme.lower() == "bearer" else None


def client_of(request: Request) -> str:
    """The client's address (hangar.http.client_address has settled it behind trusted proxies)."""
    return request.client.host if request.client else "unknown"


def path_id(text: str, what: str | None = None) -> uuid.UUID:
    """An id from the path; one that cannot be ours is as unknown as one of another org
    (`NotFound(what)`; without `what`, only "Not found")."""
    parsed = parse_id(text)
    if parsed is None:
        raise NotFound(what)
    return parsed


def no_content() -> Response:
    return Response(status_code=204)


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for key, value in pairs:
        if key in found:
            # FastAPI answers a JSONDecodeError as a validation error (422), with this message.
            raise json.JSONDecodeError(f"the key {key!r} appears twice", "", 0)
        found[key] = value
    return found


class _StrictJsonRequest(Request):
    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            self._json = json.loads(await self.body(), object_pairs_hook=_unique_keys)
        return self._json


_BEFORE_BODY = "_hangar_before_body"
Check = Callable[[Request], Awaitable[Any]]


def before_body(check: Check) -> Check:
    """Marks a dependency that `JsonRoute` runs before the request's body is read: who is
    calling, or whether they may call at all. It takes the request alone; FastAPI calls it
    again as a dependency, so it keeps what it found (or that it passed) in `request.state`
    and the second call looks nothing up again."""
    setattr(check, _BEFORE_BODY, True)
    return check


def _checks_before_body(dependant: Dependant) -> list[Check]:
    found: list[Check] = []
    for dependency in dependant.dependencies:
        for check in (dependency.call, *_checks_before_body(dependency)):
            if getattr(check, _BEFORE_BODY, False) and check not in found:
                found.append(check)  # type: ignore[arg-type]
    return found


# A refused request whose body is at most this is left to the server to skip, and its
# connection kept: cheaper for both sides than a new connection. A larger one, or one of
# unknown length, closes the connection, so that it is never read.
_SKIPPED_BODY_BYTES = 16 * 1024


def _large_body(request: Request) -> bool:
    for name, value in request.scope["headers"]:
        if name == b"transfer-encoding":
            return True
        if name == b"content-length":
            return not (value.isdigit() and int(value) <= _SKIPPED_BODY_BYTES)
    return False


class JsonRoute(APIRoute):
    """The JSON API's routes.

    - No answer may be kept by a cache, browser's or proxy's (`_no_store`): they carry
      credentials (a new key, a webhook secret, an invitation link, the session's CSRF
      token) or an organization's data for one signed-in user.

    - Who is calling is settled before the body is read: FastAPI reads and parses a route's
      body before solving its dependencies, so an anonymous client could make every session
      route parse up to its cap (a megabyte of JSON) for a 401. The route's `before_body`
      dependencies run first; when one refuses a large body, the answer closes the
      connection, so the body is never read at all.
    - A body that names a key twice is refused (422), where Python's parser would keep the
      last value silently (`{"role": "member", "role": "admin"}` would read as one thing to
      a reviewer and another to hangar).
    - A POST's Idempotency-Key, claimed by hangar.http.access, is settled here: the first
      answer replayed, or kept once the route answered (hangar.http.idempotency).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Around the route's whole answer, the app's error handlers' included (Starlette
        # runs them inside the route), so a refusal or a validation error is not kept either.
        self.app = _no_store(settling(self.app))

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()
        checks = _checks_before_body(self.dependant)

        async def route(request: Request) -> Response:
            strict = _StrictJsonRequest(request.scope, request.receive)
            try:
                for check in checks:
                    await check(strict)
            except ApiError as refusal:
                if _large_body(strict):
                    refusal.headers["Connection"] = "close"
                raise
            return await handler(strict)

        return route


def _no_store(app: ASGIApp) -> ASGIApp:
    async def answer(scope: Scope, receive: Receive, send: Send) -> None:
        async def send_no_store(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                headers["Cache-Control"] = "no-store"
            await send(message)

        await app(scope, receive, send_no_store)

    return answer
