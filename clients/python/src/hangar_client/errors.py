"""Everything the client raises, under one root: `HangarClientError`.

HangarClientError
├── ConfigurationError (also a ValueError): refused before any request
│   └── InvalidAPIKey
├── APIConnectionError: no answer (refused, reset, cut off); the httpx error is __cause__
│   └── APITimeoutError
├── InvalidPayload (also a ValueError): an answer that is not what the API promises
└── HangarError: an error answer, with its `status`, stable `code` and human `detail`
    ├── Unauthorized, InsufficientScope, InvalidCursor, CursorExpired
    ├── ValidationFailed
    │   └── UnknownEvent
    ├── RateLimited: `bucket` ("minute" | "hour") and `resets_at`
    └── ServerError: any 5xx
        └── BadGateway (502), ServiceUnavailable (503), GatewayTimeout (504)
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Any, Literal, cast

import httpx

Bucket = Literal["minute", "hour"]


class HangarClientError(Exception):
    """Any failure of the client: catch this one to catch them all."""


class ConfigurationError(HangarClientError, ValueError):
    """A client that cannot work as configured (a base URL that is not http(s), say),
    raised when it is built, before anything is sent."""


class InvalidAPIKey(ConfigurationError):
    """The key is missing, blank, or not shaped like a hangar API key (`svc_pk_` and 43
    URL-safe characters): raised when the client is built. The message never shows the key."""


class APIConnectionError(HangarClientError):
    """No answer from hangar: the connection was refused or cut, or the answer was not
    HTTP. Raised once the retries are spent; the httpx error is `__cause__`."""

    def __init__(self, message: str, request: httpx.Request | None = None) -> None:
        super().__init__(message)
        self.request = request


class APITimeoutError(APIConnectionError):
    """No answer in time (connecting, sending, reading, or waiting for a pooled
    connection)."""


class HangarError(HangarClientError):
    """An error answer. Branch on `code` (stable), show `detail` (human). A body that is
    not hangar's `{detail, code}` (a proxy's page) has code `HTTP_<status>`."""

    def __init__(
        self,
        status: int,
        code: str,
        detail: str,
        body: Any = None,
        *,
        response: httpx.Response | None = None,
    ) -> None:
        super().__init__(f"{status} {code}: {detail}")
        self.status = status
        self.code = code
        self.detail = detail
        self.body = body
        self.response = response


class Unauthorized(HangarError):
    """401 UNAUTHORIZED: key missing, malformed, unknown, revoked or rotated out."""


class InsufficientScope(HangarError):
    """403 INSUFFICIENT_SCOPE: the detail names the scope the key lacks."""


class InvalidCursor(HangarError):
    """400 INVALID_CURSOR: `after` did not come from these results (or these filters)."""


class ValidationFailed(HangarError):
    """422: invalid query parameters; `body["errors"]` lists them."""


class UnknownEvent(ValidationFailed):
    """422 UNKNOWN_EVENT: an `event` filter that is not one of the catalogue's names (the
    detail names it). A ValidationFailed too, so one `except` catches every 422."""


class CursorExpired(HangarError):
    """410 CURSOR_EXPIRED: the events cursor points before the retention window (those events
    are gone). Start again without `after`, e.g. with `created_after`."""


class RateLimited(HangarError):
    """429 RATE_LIMITED, once waiting for the bucket to open is over the configured bounds.

    `bucket` is the key's budget that refused: "minute" (60 per calendar minute) or "hour"
    (1000 per calendar hour); None for a 429 that did not come from hangar's limits (a
    proxy's). `resets_at` is when that bucket opens again (the top of the next minute or
    hour, UTC), None likewise."""

    bucket: Bucket | None = None
    resets_at: datetime | None = None


class ServerError(HangarError):
    """Any 5xx: hangar failed (500 INTERNAL_ERROR), or something in front of it did. 502,
    503 and 504 are retried first."""


class BadGateway(ServerError):
    """502: a proxy in front of hangar got no good answer from it, still, after the retries."""


class ServiceUnavailable(ServerError):
    """503 SERVICE_UNAVAILABLE, still, after the configured retries."""


class GatewayTimeout(ServerError):
    """504: a proxy in front of hangar waited for it in vain, still, after the retries."""


class InvalidPayload(HangarClientError, ValueError):
    """A body that is not what the API or a webhook promises (not JSON, or a field of the
    wrong type)."""


_BY_CODE: dict[str, type[HangarError]] = {
    "UNAUTHORIZED": Unauthorized,
    "INSUFFICIENT_SCOPE": InsufficientScope,
    "INVALID_CURSOR": InvalidCursor,
    "VALIDATION_ERROR": ValidationFailed,
    "UNKNOWN_EVENT": UnknownEvent,
    "CURSOR_EXPIRED": CursorExpired,
    "RATE_LIMITED": RateLimited,
    "SERVICE_UNAVAILABLE": ServiceUnavailable,
}
# What something in front of hangar (a proxy, a load balancer) answers has no hangar code.
_BY_STATUS: dict[int, type[HangarError]] = {
    429: RateLimited,
    502: BadGateway,
    503: ServiceUnavailable,
    504: GatewayTimeout,
}

# The spec's only rate-limit signal: the 429's detail names the limit that refused, "60/min"
# or "1000/hour" (no Retry-After, no X-RateLimit-* headers, and the body is {detail, code}).
_LIMIT = re.compile(r"\d+\s*/\s*(min|minute|hour)\b")
_PERIODS: dict[Bucket, timedelta] = {"minute": timedelta(minutes=1), "hour": timedelta(hours=1)}


def bucket_of(detail: str) -> Bucket | None:
    """The bucket a hangar 429's detail names, or None when it names none."""
    found = _LIMIT.search(detail)
    if found is None:
        return None
    return "hour" if found.group(1) == "hour" else "minute"


def bucket_opens(bucket: Bucket, now: datetime) -> datetime:
    """When `bucket`'s calendar window after `now` begins (buckets are aligned to the epoch,
    so to the top of the minute or hour in UTC)."""
    period = _PERIODS[bucket]
    into = timedelta(seconds=now.timestamp() % period.total_seconds())
    return now - into + period


def error_for(response: httpx.Response, now: datetime) -> HangarError:
    """The exception for an error answer; `now` dates a 429's `resets_at`."""
    status = response.status_code
    body = _json_or_none(response)
    fields = cast(dict[str, object], body) if isinstance(body, dict) else {}
    code, detail = fields.get("code"), str(fields.get("detail", ""))
    if not isinstance(code, str):
        code, detail = f"HTTP_{status}", _not_hangars(response)
    kind = _BY_CODE.get(code) or _BY_STATUS.get(status)
    if kind is None:
        kind = ServerError if status >= 500 else HangarError
    error = kind(status, code, detail, body, response=response)
    if isinstance(error, RateLimited):
        error.bucket = bucket_of(detail)
        error.resets_at = bucket_opens(error.bucket, now) if error.bucket else None
    return error


def _not_hangars(response: httpx.Response) -> str:
    """A detail for an answer that is not hangar's JSON (an nginx 502 page, say): what it
    is and where it likely came from, not its markup."""
    reason = response.reason_phrase or "Error"
    kind = response.headers.get("Content-Type", "").split(";")[0].strip() or "untyped"
    what = f"{kind} content" if response.content else "an empty body"
    return (
        f"{reason} ({what}, not hangar's JSON error: it likely came from a proxy or load "
        "balancer in front of hangar)"
    )


def _json_or_none(response: httpx.Response) -> object:
    try:
        return response.json()
    except ValueError:
        return None
