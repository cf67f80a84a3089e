"""The delivery log's part of a subscription's page: one page of deliveries, newest first,
filtered by status and event through a GET form, with a link to the next (older) page that
keeps the filters, back through the whole retention window.

A filter value the log does not know, or a page link altered or made for other filters, is
refused with a 400 page that says which and keeps the form; never a 500.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from sqlalchemy.ext.asyncio import AsyncConnection
from starlette.datastructures import QueryParams

from hangar.kit.cursor import CursorKeys
from hangar.web.http_text import request_text, response_text, url_changed
from hangar.webhooks import service
from hangar.webhooks.service import LOGGED_EVENTS, STATUSES, InvalidLogCursor, LogFilters

if TYPE_CHECKING:
    from hangar.webhooks.delivery_log import DeliveryView

PAGE_SIZE = 20

# A delivery's status in the words of the screen; the filter's options add the API's name
# where the words differ from it.
STATUS_WORDS = {
    "pending": "Pending",
    "succeeded": "Delivered",
    "failed": "Failed",
    "skipped": "Not sent",
}
STATUS_OPTIONS = [
    (status, words if words.lower() == status else f"{words} ({status})")
    for status, words in STATUS_WORDS.items()
]
assert tuple(STATUS_WORDS) == STATUSES, "a word for each status the log can be filtered by"
BAD_CURSOR = (
    "This link to older deliveries does not fit this log or these filters (it was changed, "
    "or made for other ones)."
)


@dataclass
class LogView:
    """What deliveries.html shows of the log."""

    url: str  # the log's first page, unfiltered
    status: str  # the filters as given ("" : any)
    event: str
    errors: dict[str, str] = field(default_factory=dict)  # by filter name
    refused: str = ""  # why the page link was refused
    deliveries: list[DeliveryView] = field(default_factory=list)
    older_url: str | None = None  # the next page, same filters
    newest_url: str | None = None  # the first page, same filters: shown past the first page
    here_url: str = ""  # this very page, for Refresh

    @property
    def bad(self) -> bool:
        return bool(self.errors or self.refused)

    @property
    def filtered(self) -> bool:
        return bool(self.status or self.event)

    def context(self) -> dict[str, Any]:
        return {
            "log": self,
            "deliveries": self.deliveries,
            "pending": any(d["status"] == "pending" for d in self.deliveries),
            "status_options": STATUS_OPTIONS,
            "delivery_words": STATUS_WORDS,
            "logged_events": LOGGED_EVENTS,
            "request_text": request_text,
            "response_text": response_text,
            "url_changed": url_changed,
        }


def _link(url: str, query: dict[str, str]) -> str:
    return f"{url}?{urlencode(query)}" if query else url


async def log_view(
    conn: AsyncConnection,
    keys: CursorKeys,
    org_id: uuid.UUID,
    sub_id: uuid.UUID,
    url: str,
    params: QueryParams,
) -> LogView:
    status, event = params.get("status", ""), params.get("event", "")
    before = params.get("before", "") or None
    view = LogView(url=url, status=status, event=event, here_url=url)
    view.errors = service.filter_problems(status, event)
    if view.errors:
        return view
    filters = LogFilters(status or None, event or None)
    try:
        found = await service.deliveries(conn, keys, org_id, sub_id, PAGE_SIZE, filters, before)
    except InvalidLogCursor:
        view.refused = BAD_CURSOR
        view.newest_url = _link(url, filters.query())
        return view
    view.deliveries = found.deliveries
    view.here_url = _link(url, filters.query(before=before))
    if found.older is not None:
        view.older_url = _link(url, filters.query(before=found.older))
    if before is not None:
        view.newest_url = _link(url, filters.query())
    return view
