"""GET /api/health: ok only when the database (and Redis, when configured) answer."""

from __future__ import annotations

import asyncio
import logging

from fastapi import APIRouter, Request
from sqlalchemy import text
from starlette.responses import Response

from hangar.kit.errors import error_response
from hangar.kit.responses import json_response
from hangar.kit.routing import services_of
from hangar.kit.services import Services

log = logging.getLogger("hangar")
router = APIRouter()
_TIMEOUT = 2.0


async def _database(services: Services) -> None:
    async with services.engine.connect() as conn:
        await conn.execute(text("SELECT 1"))


async def _redis(services: Services) -> None:
    if services.redis is not None:
        await services.redis.ping()


@router.get("/api/health", include_in_schema=False)
async def health(request: Request) -> Response:
    services = services_of(request)
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
