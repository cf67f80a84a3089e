"""JSON out of the public API: orjson straight to bytes, timestamps in UTC with Z."""

from __future__ import annotations

import uuid
from typing import Any

import orjson
from starlette.responses import Response

_OPTIONS = orjson.OPT_UTC_Z | orjson.OPT_NAIVE_UTC


def _default(value: Any) -> str:
    # asyncpg returns its own UUID class, which orjson does not know; its str() is canonical.
    if isinstance(value, uuid.UUID):
        return str(value)
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def dumps(content: Any) -> bytes:
    return orjson.dumps(content, default=_default, option=_OPTIONS)


def json_response(content: Any, status: int = 200) -> Response:
    return Response(dumps(content), status_code=status, media_type="application/json")
