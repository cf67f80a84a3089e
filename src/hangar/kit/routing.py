"""The plumbing every route shares, JSON API and screens alike.

Routes stay thin: the services come from `services_of`, the path id from `path_id`, and
`transact` runs one command in one transaction, with the clock's time.

`Services` is the process wiring (hangar/services.py, the top layer): the kit names it for the
type checker only and never imports it at run time.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

from fastapi import Request
from starlette.responses import Response

from hangar.ids import parse_id
from hangar.kit.errors import NotFound

if TYPE_CHECKING:
    from hangar.services import Services

T = TypeVar("T")
# Every route of one organization's product API sits under this prefix.
ORG_PREFIX = "/api/orgs/{org_id}"


def services_of(request: Request) -> Services:
    """The process's services, as the app was built with them (`app.state` is untyped)."""
    services: Services = request.app.state.services
    return services


def path_id(text: str, what: str) -> uuid.UUID:
    """An id from the path; one that cannot be ours is as unknown as one of another org."""
    parsed = parse_id(text)
    if parsed is None:
        raise NotFound(what)
    return parsed


async def transact(request: Request, command: Callable[..., Awaitable[T]], *args: Any) -> T:
    """`command(conn, *args, now)` in one transaction: its change and its events commit together."""
    services = services_of(request)
    async with services.engine.begin() as conn:
        return await command(conn, *args, services.clock.now())


def no_content() -> Response:
    return Response(status_code=204)
