"""The errors a client is told about: {detail, code}, plus errors[] for validation.

The named errors (`NotFound`, `Conflict`, `Unauthorized`, `Forbidden`, `RateLimited`,
`Unprocessable`) are `ApiError`s with their status and code decided once. They are plain
exceptions, raised by commands and queries as well as routes: the web framework answers them
(hangar.http.error_handlers), and nothing here imports it.
"""

from __future__ import annotations

from typing import Any

from asyncpg import exceptions as asyncpg_exc
from sqlalchemy import exc as sa_exc


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


# Every 401 carries a challenge (RFC 9110 §11.6.1: at least one, in WWW-Authenticate),
# naming the scheme the refused resource accepts, so that no refusal is silent about how to
# authenticate. The realm is hangar's one protection space for each scheme.
REALM = "hangar"

# The session API's (and the screens'): a cookie that signing in sets. No registered scheme
# names a cookie, and Bearer (which the session API refuses) or Basic (a browser would open
# its password dialog) would mislead: this is the "Cookie" scheme of
# draft-broyer-http-cookie-auth, which clients that do not know it ignore. The cookie's name
# is hangar.auth.sessions.COOKIE's (a test holds them together).
SESSION_CHALLENGE = f'Cookie realm="{REALM}", form-action="/login", cookie-name="hangar_session"'


def bearer_challenge(error: str | None = None, scope: str | None = None) -> str:
    """The public API's challenge, as RFC 6750 §3 spells it: `Bearer realm="hangar"`, with
    `error` when a token was presented and refused (`invalid_token`, `insufficient_scope`),
    never when none was (§3.1), and the `scope` an operation needs."""
    challenge = f'Bearer realm="{REALM}"'
    if error is not None:
        challenge += f', error="{error}"'
    if scope is not None:
        challenge += f', scope="{scope}"'
    return challenge


class Unauthorized(ApiError):
    """401: no credentials, or credentials that prove nothing. Its `WWW-Authenticate` is
    `challenge`: the session's unless the refusing resource takes another scheme (the public
    API's keys: `bearer_challenge`)."""

    def __init__(
        self, detail: str, code: str = "UNAUTHORIZED", *, challenge: str = SESSION_CHALLENGE
    ) -> None:
        super().__init__(401, code, detail)
        self.headers["WWW-Authenticate"] = challenge


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


# A datastore that cannot be reached (stopped, restarting, network cut, pool exhausted) is
# a passing condition, not a bug: 503 with the one error shape. Other database errors
# (integrity, programming) stay 500s, because they are bugs.
UNAVAILABLE = (
    sa_exc.OperationalError,
    sa_exc.InterfaceError,
    sa_exc.DisconnectionError,
    sa_exc.TimeoutError,
    ConnectionError,  # refused, reset, aborted: raised unwrapped while connecting
    # A statement past its client-side deadline (hangar.db.engine: asyncpg's command_timeout,
    # raised unwrapped), a connection not made within its connect timeout.
    TimeoutError,
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
    asyncpg_exc.QueryCanceledError,  # the read path's statement past statement_timeout
)


# PostgreSQL's "query_canceled": a statement that ran past statement_timeout (hangar.db.engine).
_CANCELLED = "57014"


def is_unavailable(exc: BaseException) -> bool:
    if isinstance(exc, UNAVAILABLE):
        return True
    if not isinstance(exc, sa_exc.DBAPIError):
        return False
    return exc.connection_invalidated or getattr(exc.orig, "sqlstate", None) == _CANCELLED
