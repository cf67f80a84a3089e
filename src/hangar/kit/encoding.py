"""JSON as hangar writes it, to bytes: orjson, timestamps in UTC with Z, ids as their
canonical text. The API's answers (hangar.http.responses) and the events' payloads (the
outbox) are both written by `dumps`, so an event's `data` is byte for byte what a read shows."""

from __future__ import annotations

import uuid
from typing import Any

import orjson

_OPTIONS = orjson.OPT_UTC_Z | orjson.OPT_NAIVE_UTC


def _default(value: Any) -> str:
    # asyncpg returns its own UUID class, which orjson does not know; its str() is canonical.
    if isinstance(value, uuid.UUID):
        return str(value)
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def dumps(content: Any) -> bytes:
    return orjson.dumps(content, default=_default, option=_OPTIONS)
