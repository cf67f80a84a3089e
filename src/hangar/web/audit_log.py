"""/settings/{org_id}/audit-log: the organization's audit log, newest first, filtered by
action, actor and time through a GET form, with a link to the next (older) page that keeps
the filters. The log and its checks are hangar.audit's, shared with the JSON API.

A filter value the log does not take, or a page link altered or made for other filters, is
refused with a 400 page that says which and keeps the form; never a 500.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from fastapi import APIRouter, Request
from starlette.responses import Response

from hangar.audit import service as audit
from hangar.http.routing import ServicesDep, Tx
from hangar.kit.cursor import InvalidCursor
from hangar.web.access import AdminPage
from hangar.web.pages import PageRoute, render

router = APIRouter(prefix="/settings/{org_id}/audit-log", route_class=PageRoute)

PAGE_SIZE = 50
BAD_CURSOR = (
    "This link to older entries does not fit this log or these filters (it was changed, or "
    "made for other ones)."
)
# Who acted, when no account did.
ACTOR_WORDS = {"operator": "The operator (command line)", "system": "hangar (automatically)"}


def _link(url: str, query: dict[str, str]) -> str:
    return f"{url}?{urlencode(query)}" if query else url


@router.get("")
async def audit_log(
    request: Request, services: ServicesDep, admin: AdminPage, conn: Tx
) -> Response:
    url = f"/settings/{admin.org_id}/audit-log"
    params = request.query_params
    given = {name: params.get(name, "").strip() for name in ("action", "actor", "since")}
    after = params.get("after", "") or None
    errors, filters = audit.problems(given["action"], given["actor"], given["since"])
    context: dict[str, Any] = {
        "section": "audit-log",
        "url": url,
        "given": given,
        "filtered": any(given.values()),
        "errors": errors,
        "actions": audit.ACTIONS,
        "actor_words": ACTOR_WORDS,
        "retention_days": services.settings.audit_retention_days,
        "entries": [],
        "refused": "",
        "older_url": None,
        "newest_url": None,
    }
    if errors:
        return render(request, "audit_log.html", 400, **admin.page(**context))
    query = audit.Query(given["action"], given["actor"], given["since"], filters)
    if after is not None:
        context["newest_url"] = _link(url, query.params())
    try:
        found = await audit.page(conn, services.cursor_keys, admin.org_id, query, after, PAGE_SIZE)
    except InvalidCursor:
        context["refused"] = BAD_CURSOR
        return render(request, "audit_log.html", 400, **admin.page(**context))
    context["entries"] = found.entries
    if found.next_cursor is not None:
        context["older_url"] = _link(url, query.params(after=found.next_cursor))
    return render(request, "audit_log.html", **admin.page(**context))
