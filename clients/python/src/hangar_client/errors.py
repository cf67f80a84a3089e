"""Errors the API answers, as exceptions carrying its stable `code` and human `detail`."""

from __future__ import annotations

from typing import Any


class HangarError(Exception):
    """Any error answer. Branch on `code` (stable), show `detail` (human)."""

    def __init__(self, status: int, code: str, detail: str, body: Any = None) -> None:
        super().__init__(f"{status} {code}: {detail}")
        self.status = status
        self.code = code
        self.detail = detail
        self.body = body


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
    """429 RATE_LIMITED, once waiting for the next bucket is over the configured bounds."""


class ServiceUnavailable(HangarError):
    """503 SERVICE_UNAVAILABLE, still, after the configured retries."""


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
# A 429 or 503 from something in front of hangar (a proxy) has no hangar code.
_BY_STATUS: dict[int, type[HangarError]] = {429: RateLimited, 503: ServiceUnavailable}


def error_for(status: int, body: Any, text: str) -> HangarError:
    """The exception for an error answer; a body that is not `{detail, code}` (a proxy's
    page, say) still gives a HangarError, with code `HTTP_<status>`."""
    if isinstance(body, dict) and isinstance(body.get("code"), str):
        code, detail = body["code"], str(body.get("detail", ""))
    else:
        code, detail = f"HTTP_{status}", text[:200]
    kind = _BY_CODE.get(code) or _BY_STATUS.get(status, HangarError)
    return kind(status, code, detail, body)
