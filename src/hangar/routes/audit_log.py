"""/api/orgs/{org_id}/audit-log: the organization's audit log (org.settings), newest first.

`?action&actor&since` filter it (a bad value: 422 naming it); a page holds at most `limit`
entries (1 to 200, 50 by default) and `next_cursor` is set while older ones are left: pass it
back as `after`, with the same filters. The log is hangar.audit's, shared with the screen."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from starlette.responses import Response

from hangar.audit import service as audit
from hangar.http.access import acting
from hangar.http.responses import json_response
from hangar.http.routing import ORG_PREFIX, JsonRoute, ServicesDep, Tx
from hangar.kit.params import Digits
from hangar.orgs.actors import Actor
from hangar.orgs.capabilities import ORG_SETTINGS

router = APIRouter(prefix=f"{ORG_PREFIX}/audit-log", include_in_schema=False, route_class=JsonRoute)
Admin = Annotated[Actor, acting(ORG_SETTINGS)]


@router.get("")
async def audit_log(
    services: ServicesDep,
    actor: Admin,
    conn: Tx,
    limit: Annotated[int, Query(ge=1, le=audit.MAX_LIMIT), Digits] = audit.DEFAULT_LIMIT,
    after: str | None = None,
    action: str | None = None,
    actor_filter: Annotated[str | None, Query(alias="actor")] = None,
    since: str | None = None,
) -> Response:
    query = audit.query_of(action, actor_filter, since)
    found = await audit.page(conn, services.cursor_keys, actor.org_id, query, after, limit)
    return json_response(found.view())
