"""The reservations calendar feed's subscription address."""

from __future__ import annotations

from urllib.parse import urlencode, urlsplit, urlunsplit

FEED_PATH = "/api/v1/external/reservations.ics"


def calendar_url(base_url: str, key: str, *, webcal: bool = False) -> str:
    """The feed URL to paste into Google, Apple or Outlook calendar: the key travels in
    `?token=`, because calendar clients cannot send headers. The URL is a credential for
    everything the key can read: use a key with only `read:reservations`. `webcal=True`
    gives the `webcal://` form some calendar apps open directly."""
    parts = urlsplit(base_url)
    path = parts.path.rstrip("/") + FEED_PATH
    scheme = "webcal" if webcal else parts.scheme
    return urlunsplit((scheme, parts.netloc, path, urlencode({"token": key}), ""))
