"""GET /api/health: ok only when the database (and Redis, when configured) answer.

GET /api/health/ready, for load balancers: ready only when the database answers, Redis
answers (when configured) and the database's migrations are this code's head. A process
whose database is behind, or was migrated by a newer release, is up but should get no
traffic: /api/health (the spec's) says the former, /api/health/ready the latter.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import TypeVar

from fastapi import APIRouter
from sqlalchemy import text
from starlette.responses import Response

from hangar.db.migrate import code_revisions, database_revisions
from hangar.http.error_handlers import error_response
from hangar.http.responses import json_response
from hangar.http.routing import ServicesDep
from hangar.kit.container import Services

log = logging.getLogger("hangar")
router = APIRouter()
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


async def _database(services: Services) -> None:
    async with services.engine.connect() as conn:
        await conn.execute(text("SELECT 1"))


async def _redis(services: Services) -> None:
    if services.redis is not None:
        await services.redis.ping()


@router.get("/api/health", include_in_schema=False)
async def health(services: ServicesDep) -> Response:
    for name, check in (("database", _database), ("redis", _redis)):
        try:
            await asyncio.wait_for(check(services), _TIMEOUT)
        except Exception:
            log.warning("health check: %s unreachable", name, exc_info=True)
            return error_response(
                503,
                "SERVICE_UNAVAILABLE",
                f"The {name} cannot be reached",
                extra={"status": "unavailable"},
            )
    return json_response({"status": "ok"})


@router.get("/api/health/ready", include_in_schema=False)
async def ready(services: ServicesDep) -> Response:
    return await readiness(services)


@dataclass(frozen=True)
class Check:
    state: str
    why: str = ""  # when it fails: its part of the 503's detail


async def readiness(services: Services, seconds: float = _TIMEOUT) -> Response:
    """The checks run side by side, each given `seconds`: a probe answers within it."""
    (database, migrations), redis = await asyncio.gather(
        _schema(services, seconds), _redis_state(services, seconds)
    )
    checks = {"database": database, "migrations": migrations, "redis": redis}
    states = {name: check.state for name, check in checks.items()}
    failed = [check.why for check in checks.values() if check.why]
    if not failed:
        return json_response({"status": "ready", "checks": states})
    return error_response(
        503,
        "SERVICE_UNAVAILABLE",
        "Not ready: " + "; ".join(failed),
        extra={"status": "unavailable", "checks": states},
    )


async def _schema(services: Services, seconds: float) -> tuple[Check, Check]:
    """(database, migrations): one connection answers both."""

    async def revisions() -> frozenset[str]:
        async with services.engine.connect() as conn:
            return await conn.run_sync(database_revisions)

    database, found = await _bounded("database", revisions(), seconds)
    if found is None:
        return database, Check(NOT_CHECKED)
    code = code_revisions()
    if found == code.heads:
        return database, Check(OK)
    at, head = ", ".join(sorted(found)), ", ".join(sorted(code.heads))
    if found - code.known:
        # A revision this code has no script for: a newer release migrated the database.
        why = f"the database is at migration {at}, which this release (at {head}) does not know"
        return database, Check(UNKNOWN_REVISION, why)
    where = f"at migration {at}" if found else "not migrated"
    why = f"the database is {where}, behind this release's {head} (run `hangar db upgrade`)"
    return database, Check(BEHIND, why)


async def _redis_state(services: Services, seconds: float) -> Check:
    if services.redis is None:
        return Check(NOT_CONFIGURED)
    state, _ = await _bounded("redis", services.redis.ping(), seconds)
    return state


async def _bounded(name: str, work: Awaitable[T], seconds: float) -> tuple[Check, T | None]:
    try:
        return Check(OK), await asyncio.wait_for(work, seconds)
    except TimeoutError:
        log.warning("readiness: %s gave no answer within %s s", name, seconds)
        return Check(TIMED_OUT, f"the {name} gave no answer within {seconds:g} s"), None
    except Exception:
        log.warning("readiness: %s unreachable", name, exc_info=True)
        return Check(UNREACHABLE, f"the {name} cannot be reached"), None
