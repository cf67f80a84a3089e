"""The public API's calendar feed: the organization's reservations as an iCalendar document
(hangar.external.calendar writes it), for calendar clients that poll it with the key in the
URL and revalidate their copy."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from starlette.responses import Response

from hangar.external import calendar, tags
from hangar.external.keyed import KeyedRoute, caller
from hangar.external.operations import operation
from hangar.external.paths import PREFIX
from hangar.http.compression import accepts_gzip, gzipped
from hangar.http.routing import services_of
from hangar.reservations import queries as reservation_queries

router = APIRouter(prefix=PREFIX, route_class=KeyedRoute)


_FEED = operation(
    "get_reservations_calendar",
    tags.RESERVATIONS,
    "read:reservations",
    str,
    summary="Calendar feed of reservations",
    description="An iCalendar (RFC 5545) document for calendar clients: one event per "
    "reservation, the 500 most recent by start time, skipping those without a start or "
    "end time. Not paginated. The key travels in the `token` query parameter, as calendar "
    "clients cannot send headers, so the feed URL is a live credential: give it a key "
    "holding only `read:reservations`, and revoke that key if the URL leaks.\n\n"
    "Polling: the answer carries a weak `ETag` (and `Last-Modified` once the second of the "
    "last change has passed); sent back as `If-None-Match` (or `If-Modified-Since`), it is "
    "answered 304 with no body while none of the organization's reservations has changed. "
    "`Cache-Control: private, max-age=300`: a copy may be reused for 5 minutes, then "
    "revalidated. The document is gzip-compressed when `Accept-Encoding` allows it "
    "(`Vary: Accept-Encoding`; the compressed one has an `ETag` of its own). "
    "`HEAD` answers the same headers without the document.",
    ok="An iCalendar (RFC 5545) document",
    query_key=True,
    errors={
        304: {
            "description": "Not Modified: the calendar's copy (its `If-None-Match` or "
            "`If-Modified-Since`) is current; no body"
        }
    },
)


@router.get("/reservations.ics", **_FEED)
async def reservations_feed(
    request: Request,
    token: Annotated[
        str | None,
        Query(description="The full API key (calendar clients cannot send headers)"),
    ] = None,
) -> Response:
    services = services_of(request)
    by = caller(request)
    now, domain = services.clock.now(), services.settings.service_domain
    gzip = accepts_gzip(request.headers.get("accept-encoding"))
    # One row, not 500, decides whether the calendar's copy is still current.
    found = calendar.validators(
        await reservation_queries.changes(by.conn, by.key), by.key.org_id, domain, gzip=gzip
    )
    # A 304 carries them too (RFC 9110 §15.4.5): they update the calendar's stored copy.
    headers = {"cache-control": calendar.CACHE_CONTROL, "vary": "Accept-Encoding"}
    if found is not None:
        headers.update(found.headers(now))
        if found.not_modified(request.headers, now):
            return Response(status_code=304, headers=headers)
    rows = await reservation_queries.calendar(by.conn, by.key)
    body = calendar.feed(rows, domain=domain, now=now)
    if gzip:
        body = gzipped(body)
        headers["content-encoding"] = "gzip"
    # HEAD is this GET, its body dropped on the way out (hangar.http.head).
    return Response(body, media_type="text/calendar; charset=utf-8", headers=headers)
