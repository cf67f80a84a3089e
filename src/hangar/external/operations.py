"""How each operation of the public API is documented (OpenAPI): its name for generated
clients, tag, texts, scope and every answer it may give, as service-spec.md lists them."""

from __future__ import annotations

from enum import Enum
from typing import Any, TypedDict

from starlette.responses import Response

from hangar.external.keyed import QUERY_KEY
from hangar.kit.schemas import REQUIRED_SCOPE, ErrorBody, ValidationErrorBody

# FastAPI's type for an operation's documented answers: status to OpenAPI fragments (JSON).
Responses = dict[int | str, dict[str, Any]]

# The answers every operation may give besides its 200, as service-spec.md's Errors lists
# them: each a `{detail, code}` body whose `code` a client branches on.
ERRORS: Responses = {
    401: {
        "model": ErrorBody,
        "description": "`UNAUTHORIZED`: the key is missing, malformed, unknown, revoked, or "
        "rotated out after its grace window",
    },
    403: {
        "model": ErrorBody,
        "description": "`INSUFFICIENT_SCOPE`: the key is valid but lacks this operation's "
        "scope, which `detail` names",
    },
    422: {
        "model": ValidationErrorBody,
        "description": "`VALIDATION_ERROR`: a query parameter is invalid; `errors` lists each "
        "problem",
    },
    429: {
        "model": ErrorBody,
        "description": "`RATE_LIMITED`: the key has made 60 requests this calendar minute or "
        "1000 this calendar hour; no quota headers are sent",
    },
    503: {
        "model": ErrorBody,
        "description": "`SERVICE_UNAVAILABLE`: a datastore cannot be reached for now; retry later",
    },
}
CURSOR_ERROR: Responses = {
    400: {
        "model": ErrorBody,
        "description": "`INVALID_CURSOR`: `after` did not come from this organization's "
        "results with these filters",
    },
}
EVENTS_ERRORS: Responses = {
    **CURSOR_ERROR,
    422: {
        "model": ValidationErrorBody,
        "description": "`VALIDATION_ERROR`: a query parameter is invalid; `errors` lists each "
        "problem. `UNKNOWN_EVENT` (same body): an `event` is not a name of the catalogue",
    },
    410: {
        "model": ErrorBody,
        "description": "`CURSOR_EXPIRED`: `after` points before the retention window, so "
        "events it has not returned may be gone; start again without it",
    },
}
LIMITS = (
    "Every call counts against the key's limits of 60 requests per calendar minute and 1000 "
    "per calendar hour; past either, the answer is 429 `RATE_LIMITED`."
)


class Operation(TypedDict):
    """The keywords of `router.get` that document an operation: its name for generated
    clients, its tag, its texts, its scope and its answers. Built once, at import."""

    operation_id: str
    tags: list[str | Enum]  # FastAPI's type: one of hangar.external.tags
    summary: str
    description: str
    response_description: str
    responses: Responses
    openapi_extra: dict[str, Any]  # merged into the operation's OpenAPI object as it stands
    response_class: type[Response]


# An operation any valid key may call, whatever its scopes.
ANY_KEY = None


def operation(
    operation_id: str,
    tag: str,
    scope: str | None,
    model: Any,
    *,
    summary: str,
    description: str,
    ok: str,
    query_key: bool = False,
    errors: Responses | None = None,
) -> Operation:
    """`operation_id` is the name generated clients give the call: set here, never derived
    from the function's name, so renaming a function changes no client (tests pin the set).
    `scope`: the one the key must hold, or ANY_KEY."""
    scheme = QUERY_KEY if query_key else "bearerAuth"
    needs = "Any valid key, whatever its scopes" if scope is None else f"Scope: `{scope}`"
    # OpenAPI: an empty list of scopes is a requirement met by any valid credential.
    extra: dict[str, Any] = {"security": [{scheme: [] if scope is None else [scope]}]}
    if scope is not None:
        extra[REQUIRED_SCOPE] = scope
    return {
        "operation_id": operation_id,
        "tags": [tag],
        "summary": summary,
        "description": f"{description}\n\n{needs}. {LIMITS}",
        "response_description": ok,
        # An operation's own answers first; of the common ones, those it does not redefine.
        "responses": {200: {"model": model}, **(errors or {})}
        | {status: answer for status, answer in ERRORS.items() if status not in (errors or {})},
        "openapi_extra": extra,
        "response_class": Response,
    }
