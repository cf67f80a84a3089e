"""How the web answers errors: every `ApiError` (hangar.kit.errors), FastAPI's validation
errors, Starlette's HTTP errors, a database that cannot be reached and anything unexpected,
in the one shape {detail, code}, with errors[] for validation."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import orjson
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from sqlalchemy import exc as sa_exc
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response
from starlette.routing import Match

from hangar.foundation.metrics import DATABASE_ERRORS, REFUSALS
from hangar.kit.errors import UNAVAILABLE, ApiError, is_unavailable

log = logging.getLogger("hangar")

# A database that does not answer: about the time it takes to tell (hangar.db.engine's
# connect timeout), and a restarted one is back by then.
UNAVAILABLE_RETRY_AFTER_S = 5

_HTTP_CODES = {
    400: "BAD_REQUEST",
    401: "UNAUTHORIZED",
    403: "FORBIDDEN",
    404: "NOT_FOUND",
    405: "METHOD_NOT_ALLOWED",
    409: "CONFLICT",
    413: "REQUEST_TOO_LARGE",
    415: "UNSUPPORTED_MEDIA_TYPE",
    429: "RATE_LIMITED",
}


def error_response(
    status: int,
    code: str,
    detail: str,
    extra: dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
) -> Response:
    body = orjson.dumps({"detail": detail, "code": code, **(extra or {})})
    return Response(body, status_code=status, media_type="application/json", headers=headers)


def _message(err: Any) -> Any:
    # A body that is not JSON: what the parser said (a key named twice, say), not only that.
    if err.get("type") == "json_invalid" and err.get("ctx", {}).get("error"):
        return f"the request body is not valid JSON: {err['ctx']['error']}"
    return err["msg"]


def _validation_message(errors: list[dict[str, Any]]) -> str:
    first = errors[0]
    where = ".".join(str(p) for p in first["loc"][1:]) or str(first["loc"][0])
    return f"Invalid {where}: {first['msg']}"


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(ApiError, api_error)
    app.add_exception_handler(RequestValidationError, validation_error)
    app.add_exception_handler(StarletteHTTPException, http_error)
    # SQLAlchemy's errors: the unavailable ones are told apart from bugs in `unavailable`.
    unavailable = _unavailable_handler()
    for kind in (sa_exc.SQLAlchemyError, *UNAVAILABLE):
        app.add_exception_handler(kind, unavailable)
    app.add_exception_handler(Exception, unexpected)


async def api_error(_: Request, exc: Exception) -> Response:
    assert isinstance(exc, ApiError)
    if exc.status in (401, 403, 429):
        REFUSALS.labels(str(exc.status), exc.code).inc()
    return error_response(
        exc.status,
        exc.code,
        exc.detail,
        {"errors": exc.errors} if exc.errors else None,
        exc.headers or None,
    )


async def validation_error(_: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestValidationError)
    errors = [
        {"loc": list(err["loc"]), "msg": _strip_prefix(str(_message(err)))} for err in exc.errors()
    ]
    detail = _validation_message(errors) if errors else "Invalid request"
    return error_response(422, "VALIDATION_ERROR", detail, {"errors": errors})


async def http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, StarletteHTTPException)
    if exc.status_code == 400:
        # FastAPI's answer to a body that is not JSON at all: still a validation error.
        msg = "the request body is not valid JSON"
        return error_response(
            422,
            "VALIDATION_ERROR",
            f"Invalid body: {msg}",
            {"errors": [{"loc": ["body"], "msg": msg}]},
        )
    code = _HTTP_CODES.get(exc.status_code, "ERROR")
    detail = exc.detail if isinstance(exc.detail, str) else code.replace("_", " ").lower()
    headers = dict(exc.headers or {})
    if exc.status_code == 404:
        detail = "Not found"
    elif exc.status_code == 405:
        headers["Allow"] = allowed_methods(request)
    return error_response(exc.status_code, code, detail, headers=headers or None)


def _unavailable_handler() -> Callable[[Request, Exception], Awaitable[Response]]:
    """The answer to a database error: 503 with Retry-After when the database cannot be
    reached, the unexpected error's 500 otherwise; each counted as one of the API's."""
    api_database_errors = DATABASE_ERRORS.labels("api")

    async def unavailable(request: Request, exc: Exception) -> Response:
        api_database_errors.inc()
        if not is_unavailable(exc):
            return await unexpected(request, exc)
        log.warning(
            "database unavailable on %s %s: %s", request.method, request.url.path, exc.__class__
        )
        return error_response(
            503,
            "SERVICE_UNAVAILABLE",
            "The service is temporarily unavailable; try again shortly",
            headers={"Retry-After": str(UNAVAILABLE_RETRY_AFTER_S)},
        )

    return unavailable


async def unexpected(request: Request, exc: Exception) -> Response:
    # The client gets a code and no trace; the operator gets the trace in the log.
    log.exception("unhandled error on %s %s", request.method, request.url.path)
    return error_response(500, "INTERNAL_ERROR", "Internal error; it has been logged")


# The methods a path may answer, in the order Allow lists them: reads first, as RFC 9110's
# examples do. HEAD is not asked: it is answered wherever GET is (hangar.http.head).
_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")


def allowed_methods(request: Request) -> str:
    """The Allow of a 405 (RFC 9110 §15.5.6): every method the request's path answers.

    Starlette's own Allow names the methods of the first route whose path matched, and a
    path is often several routes (a collection's GET and POST, each its own), so the app's
    routes are asked, method by method, whether they would take the request: through the
    routes' own `matches`, which holds however FastAPI nests included routers."""
    allowed: list[str] = []
    for method in _METHODS:
        # A scope of its own: matching notes the router it went through in `fastapi`.
        probe = {**request.scope, "method": method, "fastapi": {}}
        if any(route.matches(probe)[0] is Match.FULL for route in request.app.router.routes):
            allowed.append(method)
            if method == "GET":
                allowed.append("HEAD")
    return ", ".join(allowed)


def _strip_prefix(msg: str) -> str:
    # Pydantic prefixes messages from custom validators with "Value error, ".
    return msg.removeprefix("Value error, ")
