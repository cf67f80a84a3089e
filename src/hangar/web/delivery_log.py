"""The delivery log's part of a subscription's page: one page of deliveries, newest first,
filtered through a GET form (status, event, event id, resource id, queued since and until,
in UTC), with a link to the next (older) page that keeps the filters, back through the whole
retention window.

A filter value the log does not know, or a page link altered or made for other filters, is
refused with a 400 page that says which and keeps the form; never a 500.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from sqlalchemy.ext.asyncio import AsyncConnection
from starlette.datastructures import QueryParams

from hangar.kit.cursor import CursorKeys
from hangar.kit.params import parse_aware_datetime
from hangar.web.http_text import request_text, response_text, url_changed
from hangar.webhooks import service
from hangar.webhooks.service import LOGGED_EVENTS, STATUSES, InvalidLogCursor, LogFilters

if TYPE_CHECKING:
    from hangar.webhooks.inspection.delivery_log import DeliveryView

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
    event_id: str = ""
    resource_id: str = ""
    since: str = ""  # as its datetime-local field holds it: UTC, no offset
    until: str = ""
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
        searched = (self.event_id, self.resource_id, self.since, self.until)
        return bool(self.status or self.event or any(searched))

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


def _as_utc(typed: str) -> str:
    """A time as the log takes it: a datetime-local field sends none, and the screens speak
    UTC, so a time without an offset is UTC; one with an offset (a link) keeps it."""
    try:
        parsed = datetime.fromisoformat(typed)
    except ValueError:
        return typed  # refused by filter_problems, in words
    return typed if parsed.tzinfo is not None else f"{typed}Z"


def _field_time(text: str) -> str:
    """A checked time as its datetime-local field shows it: UTC, to the minute or second."""
    moment = parse_aware_datetime(text)
    return moment.strftime("%Y-%m-%dT%H:%M" if moment.second == 0 else "%Y-%m-%dT%H:%M:%S")


async def log_view(
    conn: AsyncConnection,
    keys: CursorKeys,
    org_id: uuid.UUID,
    sub_id: uuid.UUID,
    url: str,
    params: QueryParams,
) -> LogView:
    status, event = params.get("status", ""), params.get("event", "")
    event_id = params.get("event_id", "").strip()
    resource_id = params.get("resource_id", "").strip()
    since = _as_utc(params.get("since", "").strip())
    until = _as_utc(params.get("until", "").strip())
    before = params.get("before", "") or None
    view = LogView(
        url=url,
        status=status,
        event=event,
        event_id=event_id,
        resource_id=resource_id,
        since=params.get("since", ""),
        until=params.get("until", ""),
        here_url=url,
    )
    view.errors = service.filter_problems(status, event, event_id, resource_id, since, until)
    for name, text in (("since", since), ("until", until)):
        if text and name not in view.errors:
            setattr(view, name, _field_time(text))
    if view.errors:
        return view
    filters = LogFilters.of(status, event, event_id, resource_id, since, until)
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
