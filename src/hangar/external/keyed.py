"""The public API's route class: a key authenticated for the operation's documented scope
before FastAPI reads a parameter, and the request's one read connection lent to it."""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from fastapi import Request
from fastapi.routing import APIRoute
from starlette.responses import Response

from hangar.db.read_pool import read_connection
from hangar.db.reads import ReadConnection
from hangar.external.query import QuickQuery
from hangar.http.routing import bearer, services_of
from hangar.keys.authentication import (
    KEY_ONLY,
    MISSING,
    MISSING_TOKEN,
    KeyAuthenticator,
    KeyLookup,
)
from hangar.kit.schemas import REQUIRED_SCOPE
from hangar.kit.scoping import KeyContext

QUERY_KEY = "calendarToken"  # the feed's key travels in the query (calendars send no header)


@dataclass(frozen=True)
class Caller:
    """The authenticated caller of a request, and the request's one read connection (its key
    was looked up on it: one checkout per request, not one for the key and one for the data)."""

    key: KeyContext
    conn: ReadConnection
    # The key's row as the route's `key_lookup` read it, with what that also read.
    key_row: Mapping[str, Any]


_CALLER = "hangar.caller"


def caller(request: Request) -> Caller:
    """The caller `KeyedRoute` authenticated for this request."""
    found: Caller = request.scope[_CALLER]
    return found


class KeyedRoute(APIRoute):
    """An operation of the public API. Before FastAPI reads its parameters (so a bad key is
    a 401, never a 422), the caller's key is authenticated for the scope the operation
    documents (`x-required-scope`, so the documented scope is the enforced one), then the
    request's read connection is lent to the operation until it returns.

    A route class rather than a dependency with yield: FastAPI's dependency machinery (an
    exit stack and a context manager per request, and the checks around them) cost about a
    quarter of the app's time on a small page (figures: bench/RESULTS.md, "Figures once kept
    in code comments"). For the same reason the operation's query is read by `QuickQuery`
    when it is plainly valid, by FastAPI's solver otherwise (hangar.external.query).

    `key_lookup`: how the key is looked up; an operation's subclass may have that statement
    also read what spares the operation a round trip (`Caller.key_row`).
    """

    key_lookup: ClassVar[KeyLookup] = KEY_ONLY

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handle = super().get_route_handler()
        quick = QuickQuery.of(self.dependant)  # the query read directly when plainly valid
        extra = self.openapi_extra or {}
        scope: str | None = extra.get(REQUIRED_SCOPE)  # None: any valid key
        from_query = any(QUERY_KEY in scheme for scheme in extra["security"])
        missing = MISSING_TOKEN if from_query else MISSING
        lookup = self.key_lookup

        async def keyed(request: Request) -> Response:
            authenticator: KeyAuthenticator = request.app.state.keys
            raw = request.query_params.get("token") if from_query else bearer(request)
            authenticator.refuse_malformed(raw, missing)  # no connection for what cannot be a key
            services = services_of(request)
            async with read_connection(services.engine) as conn:
                key, row = await authenticator.authenticate_with(
                    raw, scope, missing=missing, conn=conn, lookup=lookup
                )
                request.scope[_CALLER] = Caller(key, conn, row)
                try:
                    if quick is not None and (arguments := quick.arguments(request)):
                        return await quick.call(**arguments)
                    return await handle(request)  # FastAPI's solver, and its 422s
                finally:
                    del request.scope[_CALLER]  # the connection is going back to the pool

        return keyed
