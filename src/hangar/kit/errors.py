"""One error shape for every endpoint: {detail, code}, plus errors[] for validation.

The named errors (`NotFound`, `Conflict`, `Unauthorized`, `Forbidden`, `RateLimited`,
`Unprocessable`) are `ApiError`s with their status and code decided once; the handlers
installed by `install_error_handlers` answer them all alike.
"""

from __future__ import annotations

import logging
from typing import Any

import orjson
from asyncpg import exceptions as asyncpg_exc
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from sqlalchemy import exc as sa_exc
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response

from hangar.metrics import DATABASE_ERRORS, REFUSALS

log = logging.getLogger("hangar")

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


class ApiError(Exception):
    """An expected failure that the client is told about, with a stable code."""

    def __init__(
        self, status: int, code: str, detail: str, errors: list[dict[str, Any]] | None = None
    ) -> None:
        super().__init__(detail)
        self.status = status
        self.code = code
        self.detail = detail
        self.errors = errors
        self.headers: dict[str, str] = {}


INVALID_TRANSITION = "INVALID_TRANSITION"


class NotFound(ApiError):
    """404: no such thing here (one of another organization reads exactly like an unknown one).

    `NotFound("aircraft")` says "No such aircraft"; `NotFound()` says only "Not found" (where
    naming the thing would say too much, e.g. an organization in the path).
    """

    def __init__(self, what: str | None = None, *, detail: str | None = None) -> None:
        super().__init__(404, "NOT_FOUND", detail or (f"No such {what}" if what else "Not found"))


class Conflict(ApiError):
    """409: the request does not fit the record's current state."""

    def __init__(self, detail: str, code: str = INVALID_TRANSITION) -> None:
        super().__init__(409, code, detail)


class Unauthorized(ApiError):
    """401: no credentials, or credentials that prove nothing."""

    def __init__(self, detail: str, code: str = "UNAUTHORIZED") -> None:
        super().__init__(401, code, detail)


class Forbidden(ApiError):
    """403: known, but not allowed to do this (a capability, a scope, a CSRF token)."""

    def __init__(self, detail: str, code: str = "FORBIDDEN") -> None:
        super().__init__(403, code, detail)


class RateLimited(ApiError):
    """429: a budget is spent until its window ends. With `retry_after`, the answer says
    when to come back (`Retry-After`, in seconds); the public API's own limits send no such
    header (the contract's rule), sign-in's do."""

    def __init__(self, detail: str, retry_after: int | None = None) -> None:
        super().__init__(429, "RATE_LIMITED", detail)
        if retry_after is not None:
            self.headers["Retry-After"] = str(max(1, retry_after))


class Unprocessable(ApiError):
    """422 with a code of its own (a rule about the request as a whole, not one field's type)."""

    def __init__(self, code: str, detail: str) -> None:
        super().__init__(422, code, detail)


def invalid(field: str, message: str) -> ApiError:
    """A 422 about one field of a request body, in the same shape as Pydantic's refusals."""
    return ApiError(
        422,
        "VALIDATION_ERROR",
        f"Invalid {field}: {message}",
        [{"loc": ["body", field], "msg": message}],
    )


def error_response(
    status: int,
    code: str,
    detail: str,
    extra: dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
) -> Response:
    body = orjson.dumps({"detail": detail, "code": code, **(extra or {})})
    return Response(body, status_code=status, media_type="application/json", headers=headers)


# A datastore that cannot be reached (stopped, restarting, network cut, pool exhausted) is
# a passing condition, not a bug: 503 with the one error shape. Other database errors
# (integrity, programming) stay 500s, because they are bugs.
UNAVAILABLE = (
    sa_exc.OperationalError,
    sa_exc.InterfaceError,
    sa_exc.DisconnectionError,
    sa_exc.TimeoutError,
    ConnectionError,  # refused, reset, aborted: raised unwrapped while connecting
    # The public read path's own asyncpg pool (hangar.db.engine.read_connection) raises
    # the driver's errors unwrapped: a connection lost or refused, a server shutting down,
    # starting up or out of connection slots.
    asyncpg_exc.PostgresConnectionError,
    asyncpg_exc.CannotConnectNowError,
    asyncpg_exc.AdminShutdownError,
    asyncpg_exc.CrashShutdownError,
    asyncpg_exc.TooManyConnectionsError,
    # What asyncpg raises on a connection the server closed while it sat idle in the pool
    # (the pool replaces it for the next request). SQLAlchemy maps the first to its own
    # InterfaceError, above.
    asyncpg_exc.InterfaceError,
    asyncpg_exc.InternalClientError,
)


def is_unavailable(exc: BaseException) -> bool:
    if isinstance(exc, UNAVAILABLE):
        return True
    return isinstance(exc, sa_exc.DBAPIError) and exc.connection_invalidated


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
    api_database_errors = DATABASE_ERRORS.labels("api")

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
            {"loc": list(err["loc"]), "msg": _strip_prefix(str(_message(err)))}
            for err in exc.errors()
        ]
        detail = _validation_message(errors) if errors else "Invalid request"
        return error_response(422, "VALIDATION_ERROR", detail, {"errors": errors})

    async def http_error(_: Request, exc: Exception) -> Response:
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
        if exc.status_code == 404:
            detail = "Not found"
        return error_response(exc.status_code, code, detail)

    async def unavailable(request: Request, exc: Exception) -> Response:
        api_database_errors.inc()
        if not is_unavailable(exc):
            return await unexpected(request, exc)
        log.warning(
            "database unavailable on %s %s: %s", request.method, request.url.path, exc.__class__
        )
        return error_response(
            503, "SERVICE_UNAVAILABLE", "The service is temporarily unavailable; try again shortly"
        )

    async def unexpected(request: Request, exc: Exception) -> Response:
        # The client gets a code and no trace; the operator gets the trace in the log.
        log.exception("unhandled error on %s %s", request.method, request.url.path)
        return error_response(500, "INTERNAL_ERROR", "Internal error; it has been logged")

    app.add_exception_handler(ApiError, api_error)
    app.add_exception_handler(RequestValidationError, validation_error)
    app.add_exception_handler(StarletteHTTPException, http_error)
    # SQLAlchemy's errors: the unavailable ones are told apart from bugs in `unavailable`.
    for kind in (sa_exc.SQLAlchemyError, *UNAVAILABLE):
        app.add_exception_handler(kind, unavailable)
    app.add_exception_handler(Exception, unexpected)


def _strip_prefix(msg: str) -> str:
    # Pydantic prefixes messages from custom validators with "Value error, ".
    return msg.removeprefix("Value error, ")
