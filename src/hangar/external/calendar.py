"""The iCalendar feed (RFC 5545), written directly: it is a few fixed properties per event,
and writing them as text is several times faster than building a component tree.

Content lines end in CRLF and are folded at 75 octets without splitting a UTF-8 sequence;
TEXT values are escaped. Tests read the output back with the `icalendar` parser.
"""

from __future__ import annotations

import functools
import hashlib
import re
import uuid
from collections.abc import Iterable
from datetime import UTC, datetime

from hangar import __version__
from hangar.kit.conditional import Validators
from hangar.reservations.queries import CalendarEntry, Changes

# Fixed for a release (the spec's "fixed PRODID"); it names the API's version, the one number.
PRODID = f"-//hangar//External API {__version__}//EN"
_FOLD_AT = 75

# How long a calendar (or any private cache) may reuse the feed without asking again: 5
# minutes. Calendar clients poll every 15 minutes to a few hours on their own schedules, so
# this stays inside the fastest of them: it delays a booking's appearance by 5 minutes at
# most, while a client that asks in bursts (several views at once, retries) is answered
# from its copy. Past it a poll revalidates: while nothing has changed, a 304 that reads one
# row. `private`: the URL holds a live key and the document one organization's bookings,
# so no shared cache (a proxy, a CDN) may keep it.
CACHE_CONTROL = "private, max-age=300"


def _utc(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")


_SPECIAL = re.compile(r"[\\;,\r\n]")


def escape_text(value: str) -> str:
    if _SPECIAL.search(value) is None:
        return value
    return (
        value.replace("\\", "\\\\")
        .replace(";", "\\;")
        .replace(",", "\\,")
        .replace("\r\n", "\\n")
        .replace("\n", "\\n")
        .replace("\r", "\\n")
    )


def fold(line: str) -> str:
    """One content line, folded so that no physical line exceeds 75 octets."""
    if len(line) <= _FOLD_AT and line.isascii():
        return line + "\r\n"
    raw = line.encode()
    if len(raw) <= _FOLD_AT:
        return line + "\r\n"
    parts: list[bytes] = []
    start, width = 0, _FOLD_AT
    while start < len(raw):
        end = min(start + width, len(raw))
        while end < len(raw) and (raw[end] & 0xC0) == 0x80:  # inside a UTF-8 sequence
            end -= 1
        parts.append(raw[start:end])
        start, width = end, _FOLD_AT - 1  # continuation lines begin with a space
    return "\r\n ".join(p.decode() for p in parts) + "\r\n"


def summary(row: CalendarEntry) -> str:
    """The aircraft id, a space, then the activity type (only the type when no aircraft)."""
    aircraft = row["aircraft_id"]
    return f"{aircraft} {row['activity_type']}" if aircraft else str(row["activity_type"])


def feed(rows: Iterable[CalendarEntry], *, domain: str, now: datetime) -> bytes:
    stamp = _utc(now)
    uid_suffix = "@" + escape_text(domain)
    # Many reservations share a start or an end (bookings are on the hour): format each
    # instant once.
    instants: dict[datetime, str] = {}

    def utc(moment: datetime) -> str:
        text = instants.get(moment)
        if text is None:
            text = instants[moment] = _utc(moment)
        return text

    out = [
        "BEGIN:VCALENDAR\r\n",
        "VERSION:2.0\r\n",
        f"PRODID:{PRODID}\r\n",
        "CALSCALE:GREGORIAN\r\n",
        "METHOD:PUBLISH\r\n",
        "X-WR-CALNAME:Reservations\r\n",
    ]
    for row in rows:
        out.append(
            "BEGIN:VEVENT\r\n"
            + fold(f"UID:svc-resv-{row['id']}{uid_suffix}")
            + f"DTSTAMP:{stamp}\r\n"
            f"DTSTART:{utc(row['start_time'])}\r\n"
            f"DTEND:{utc(row['end_time'])}\r\n"
            + fold("SUMMARY:" + escape_text(summary(row)))
            + f"STATUS:{str(row['status']).upper()}\r\n"
            "END:VEVENT\r\n"
        )
    out.append("END:VCALENDAR\r\n")
    return "".join(out).encode()


def validators(
    changes: Changes | None, org_id: uuid.UUID, domain: str, *, gzip: bool = False
) -> Validators | None:
    """The feed's validators, from its organization's count of reservation changes (None:
    none counted yet, so no validator, and every poll gets the whole feed). The tag also
    names what else shapes the document (the organization, the release in PRODID, the
    domain in every UID), so no two differently written feeds share it. Weak: DTSTAMP, the
    time of the request, differs between two answers the tag calls the same.

    The gzip-encoded feed has a tag of its own (`-gzip` added), as RFC 9110 §8.8.3 asks of
    a content coding: each tag then names one representation, and a cache that stored both
    updates the right one from a 304. A poll is answered 304 when it names the tag of the
    representation it would get now."""
    if changes is None:
        return None
    coding = "-gzip" if gzip else ""
    tag = f'W/"{changes["version"]}-{_shape(org_id, domain)}{coding}"'
    return Validators(tag, changes["changed_at"])


@functools.lru_cache(maxsize=4096)
def _shape(org_id: uuid.UUID, domain: str) -> str:
    # Fixed for an organization in a release: hashed once per organization, not per poll.
    return hashlib.sha256(f"{org_id}|{__version__}|{domain}".encode()).hexdigest()[:16]
