"""What a client is built from, checked before anything is sent: a key that cannot be one
would otherwise fail deep inside httpx (a line break in a header) or as a 401 that does not
say what is wrong. The messages never show the key."""

from __future__ import annotations

import re

import httpx

from hangar_client.errors import ConfigurationError, InvalidAPIKey

KEY_PREFIX = "svc_pk_"
KEY_BODY_LENGTH = 43  # URL-safe characters after the prefix (the spec's key format)
_URL_SAFE = re.compile(r"[A-Za-z0-9_-]*")


def api_key(key: object, what: str = "the API key") -> str:
    """`key`, if it is shaped like a hangar API key; else InvalidAPIKey saying why."""
    if not isinstance(key, str) or not key.strip():
        raise InvalidAPIKey(
            "no API key: pass the organization's key (svc_pk_..., from Org Settings)"
        )
    if key != key.strip():
        raise InvalidAPIKey(f"{what} has spaces or a line break around it: remove them")
    if not key.startswith(KEY_PREFIX):
        raise InvalidAPIKey(f"{what} does not start with {KEY_PREFIX}: is it another secret?")
    body = key.removeprefix(KEY_PREFIX)
    if not _URL_SAFE.fullmatch(body):
        raise InvalidAPIKey(
            f"{what} has characters that are not URL-safe after {KEY_PREFIX} "
            "(letters, digits, - and _): was it copied whole?"
        )
    if len(body) != KEY_BODY_LENGTH:
        raise InvalidAPIKey(
            f"{what} has {len(body)} characters after {KEY_PREFIX}, not {KEY_BODY_LENGTH}: "
            "was it copied whole?"
        )
    return key


def http_url(text: object, what: str) -> str:
    """`text`, if it is an http:// or https:// address with a host; else ConfigurationError
    naming `what` it is."""
    url = None
    if isinstance(text, str):
        try:
            url = httpx.URL(text)
        except httpx.InvalidURL:
            url = None
    if url is None or url.scheme not in ("http", "https") or not url.host:
        raise ConfigurationError(f"{what} must be an http:// or https:// address, not {text!r}")
    return str(text)
