"""Conditional GET (RFC 9110, section 13): validators out, 304 Not Modified in.

Last-Modified has a resolution of one second. A representation made in the same second as
its last change may be followed by another change within that second, which would carry the
same Last-Modified; a client holding that date would then be told "not modified" wrongly.
So Last-Modified is only sent once the second of the last change has passed; until then the
ETag alone validates (calendar clients send If-None-Match when they have an ETag).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import format_datetime, parsedate_to_datetime


@dataclass(frozen=True)
class Validators:
    etag: str  # a weak entity tag, quoted: W/"..."
    changed_at: datetime  # aware, UTC

    def _second(self) -> datetime:
        return self.changed_at.astimezone(UTC).replace(microsecond=0)

    def _dated(self, now: datetime) -> bool:
        """Whether Last-Modified is sent: once the second of the last change has passed."""
        return self._second() < now.astimezone(UTC).replace(microsecond=0)

    def headers(self, now: datetime) -> dict[str, str]:
        found = {"etag": self.etag}
        if self._dated(now):
            found["last-modified"] = format_datetime(self._second(), usegmt=True)
        return found

    def not_modified(self, request_headers: Mapping[str, str], now: datetime) -> bool:
        """Whether the client's copy is current: If-None-Match when sent (If-Modified-Since
        is then ignored, as RFC 9110 13.2.2 says), else If-Modified-Since against the
        Last-Modified this response would carry."""
        if_none_match = request_headers.get("if-none-match")
        if if_none_match is not None:
            return _matches(if_none_match, self.etag)
        since = _http_date(request_headers.get("if-modified-since"))
        return since is not None and self._dated(now) and self._second() <= since


def _opaque(tag: str) -> str:
    # Weak comparison (RFC 9110 8.8.3.2): W/"x" and "x" match.
    tag = tag.strip()
    return tag[2:] if tag.startswith("W/") else tag


def _matches(header: str, etag: str) -> bool:
    if header.strip() == "*":
        return True
    ours = _opaque(etag)
    return any(_opaque(tag) == ours for tag in header.split(","))


def _http_date(value: str | None) -> datetime | None:
    """An HTTP-date, aware; None for anything else (an invalid date is ignored, 13.1.3)."""
    if not value:
        return None
    try:
        parsed = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)
