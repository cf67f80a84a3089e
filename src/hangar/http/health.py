"""GET /api/health (the spec's): ok only when the datastores answer, the database and Redis
(when configured).

GET /api/health/live, for liveness probes: whether this process works, asking no datastore.

GET /api/health/ready, for load balancers: whether *this* instance can serve: its database
answers, its migrations are this code's head (or a newer release's that still serves this
one), it holds the key the database's secrets are sealed with (hangar.db.key_check), and its
server is not stopping. Redis is reported in its checks but does not make it unready: while
Redis is down every instance still serves (the rate limits count in-process,
hangar.kit.ratelimit), and failing them all at once would pull the whole service. A process
whose database is behind, or was migrated by a newer release to a schema it cannot use, is
up but should get no traffic: /api/health says the former, /api/health/ready the latter. A
newer schema that names this release's head (or an earlier one) as still working on it
(hangar.db.migrate.oldest_compatible_head) keeps it ready: a rolling upgrade does not pull
the old instances.

Both run their checks side by side and answer within `_TIMEOUT` whatever the stores do: a
check still running then is cancelled and left to finish on its own (giving up a connection
to a hung database may take longer than the probe may wait).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from fastapi import APIRouter, Request
from sqlalchemy import select, text
from starlette.responses import Response

from hangar.db import key_check
from hangar.db.migrate import (
    Revisions,
    SchemaCompatibility,
    code_revisions,
    database_revisions,
)
from hangar.foundation.metrics import REDIS_UP
from hangar.http.error_handlers import error_response
from hangar.http.responses import json_response
from hangar.http.routing import ServicesDep
from hangar.kit.container import Services

log = logging.getLogger("hangar")
router = APIRouter()
# GET /api/health/live alone, for apps that serve nothing else (the worker's metrics port).
live_router = APIRouter()
_TIMEOUT = 2.0
T = TypeVar("T")

# What each check reports in /api/health/ready's "checks".
OK = "ok"
UNREACHABLE = "unreachable"
TIMED_OUT = "timed out"
NOT_CONFIGURED = "not configured"
NOT_CHECKED = "not checked"  # the migrations, when the database did not answer
BEHIND = "behind"
UNKNOWN_REVISION = "unknown revision"
# A newer release migrated the database, to a schema this release still works on: ready.
COMPATIBLE = "newer, compatible"
WRONG_KEY = "wrong key"

# Checks given up on, kept until they end (the loop holds tasks only weakly).
_ABANDONED: set[asyncio.Future[Any]] = set()


async def _database(services: Services) -> None:
    async with services.engine.connect() as conn:
        await conn.execute(text("SELECT 1"))


@router.get("/api/health", include_in_schema=False)
async def health(services: ServicesDep) -> Response:
    return await liveness(services)


async def liveness(services: Services, seconds: float = _TIMEOUT) -> Response:
    """The spec's health: both stores, side by side, each given `seconds` at the same time."""
    (database, _), redis = await asyncio.gather(
        _bounded("database", _database(services), seconds), _redis_state(services, seconds)
    )
    failed = [check.why for check in (database, redis) if check.why]
    if not failed:
        return json_response({"status": "ok"})
    detail = "; ".join(failed)
    return error_response(
        503,
        "SERVICE_UNAVAILABLE",
        detail[0].upper() + detail[1:],
        extra={"status": "unavailable"},
    )


@live_router.get("/api/health/live", include_in_schema=False)
async def live(request: Request) -> Response:
    """For a liveness probe (Kubernetes restarts what fails it): whether this process still
    works, asking no datastore. A database or Redis outage must not restart every process at
    once; that is readiness's business. It fails only when the process's own worker (the
    dispatcher or the scheduler) has ended without being asked to stop."""
    failure: Callable[[], str | None] | None = getattr(request.app.state, "failure", None)
    why = failure() if failure is not None else None
    if why is None:
        return json_response({"status": "alive"})
    return error_response(
        503, "SERVICE_UNAVAILABLE", f"Not alive: {why}", extra={"status": "not alive"}
    )


@router.get("/api/health/ready", include_in_schema=False)
async def ready(request: Request, services: ServicesDep) -> Response:
    if request.app.state.stopping.is_set:
        return error_response(
            503,
            "SERVICE_UNAVAILABLE",
            "Not ready: this instance is shutting down; it finishes the requests it holds "
            "and takes no new connection",
            extra={"status": "shutting down"},
        )
    return await readiness(services)


@dataclass(frozen=True)
class Check:
    state: str
    why: str = ""  # when it fails: its part of the 503's detail


async def readiness(services: Services, seconds: float = _TIMEOUT) -> Response:
    """The checks run side by side, each given `seconds`: a probe answers within it."""
    (database, migrations, key), redis = await asyncio.gather(
        _schema(services, seconds), _redis_state(services, seconds)
    )
    checks = {"database": database, "migrations": migrations, "secret_key": key, "redis": redis}
    states = {name: check.state for name, check in checks.items()}
    # Redis down is reported (states, the hangar_redis_up gauge), not a reason to pull this
    # instance: the others have lost it too, and each still serves (module docstring).
    failed = [check.why for check in (database, migrations, key) if check.why]
    if not failed:
        return json_response({"status": "ready", "checks": states})
    return error_response(
        503,
        "SERVICE_UNAVAILABLE",
        "Not ready: " + "; ".join(failed),
        extra={"status": "unavailable", "checks": states},
    )


async def _schema(services: Services, seconds: float) -> tuple[Check, Check, Check]:
    """(database, migrations, secret key): one connection answers all three."""
    code = code_revisions()

    async def read() -> tuple[frozenset[str], str | None, str | None]:
        async with services.engine.connect() as conn:
            found = await conn.run_sync(database_revisions)
            newer = bool(found - code.known)
            # Both records exist from this code's head on (and so past it); behind, not yet.
            at_or_past = found == code.heads or newer
            fingerprint = await key_check.recorded(conn) if at_or_past else None
            oldest = await conn.scalar(select(SchemaCompatibility.oldest_head)) if newer else None
            return found, fingerprint, oldest

    database, read_back = await _bounded("database", read(), seconds)
    if read_back is None:
        return database, Check(NOT_CHECKED), Check(NOT_CHECKED)
    found, fingerprint, oldest = read_back
    return database, _migrations(found, code, oldest), _secret_key(services, fingerprint)


def _migrations(found: frozenset[str], code: Revisions, oldest: str | None) -> Check:
    if found == code.heads:
        return Check(OK)
    at, head = ", ".join(sorted(found)), ", ".join(sorted(code.heads))
    if found - code.known:
        # A revision this code has no script for: a newer release migrated the database. It
        # says which releases its schema still serves: the oldest head whose code works on
        # it. One this code knows is this release's head or before it.
        if oldest is not None and oldest in code.known:
            return Check(COMPATIBLE)
        why = (
            f"the database is at migration {at}, which this release (at {head}) does not know "
            "and whose schema it cannot use"
        )
        return Check(UNKNOWN_REVISION, why)
    where = f"at migration {at}" if found else "not migrated"
    why = f"the database is {where}, behind this release's {head} (run `hangar db upgrade`)"
    return Check(BEHIND, why)


def _secret_key(services: Services, fingerprint: str | None) -> Check:
    """Whether this process still holds the key the database's secrets are sealed with: a
    reseal run with another key since it started moves the record away from it."""
    if fingerprint is None:
        return Check(NOT_CHECKED)  # behind, or no process has started through the CLI yet
    keys = key_check.Keys(services.settings.secret_key, services.settings.previous_secret_keys)
    if keys.hold(fingerprint):
        return Check(OK)
    why = (
        "the database's secrets are now sealed with a key this process does not hold "
        "(HANGAR_SECRET_KEY and HANGAR_SECRET_KEY_PREVIOUS): restart it with the key the "
        "others use"
    )
    return Check(WRONG_KEY, why)


async def _redis_state(services: Services, seconds: float) -> Check:
    if services.redis is None:
        return Check(NOT_CONFIGURED)
    state, _ = await _bounded("redis", services.redis.ping(), seconds)
    REDIS_UP.set(1 if state.state == OK else 0)
    return state


async def _bounded(name: str, work: Awaitable[T], seconds: float) -> tuple[Check, T | None]:
    """`work`'s result within `seconds`, or why not. Not `asyncio.wait_for`: that also
    waits for the cancelled work to end, which a connection to a hung server need not do
    promptly."""
    task = asyncio.ensure_future(work)
    done, _ = await asyncio.wait({task}, timeout=seconds)
    if not done:
        task.cancel()
        _ABANDONED.add(task)
        task.add_done_callback(_forget)
        log.warning("health check: the %s gave no answer within %g s", name, seconds)
        return Check(TIMED_OUT, f"the {name} gave no answer within {seconds:g} s"), None
    try:
        return Check(OK), task.result()
    except Exception:
        log.warning("health check: the %s cannot be reached", name, exc_info=True)
        return Check(UNREACHABLE, f"the {name} cannot be reached"), None


def _forget(task: asyncio.Future[Any]) -> None:
    _ABANDONED.discard(task)
    if not task.cancelled():
        task.exception()  # retrieved: its failure was reported as the timeout already
