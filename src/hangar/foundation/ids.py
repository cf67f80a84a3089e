"""Identifiers: UUIDv7, so rows created together sit together in indexes."""

from __future__ import annotations

import os
import time
import uuid
from datetime import UTC, datetime, timedelta

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MS = timedelta(milliseconds=1)


def new_id(unix_ms: int | None = None) -> uuid.UUID:
    """A version-7 UUID: 48 bits of milliseconds, then 74 random bits."""
    ms = int(time.time() * 1000) if unix_ms is None else unix_ms
    rand = int.from_bytes(os.urandom(10), "big")
    value = (ms & ((1 << 48) - 1)) << 80
    value |= 0x7 << 76  # version
    value |= ((rand >> 62) & 0xFFF) << 64  # rand_a, 12 bits
    value |= 0b10 << 62  # RFC 4122 variant
    value |= rand & ((1 << 62) - 1)  # rand_b, 62 bits
    return uuid.UUID(int=value)


def new_id_at(when: datetime) -> uuid.UUID:
    """A version-7 UUID made at `when` (the injected clock's time, not the machine's)."""
    return new_id((when - _EPOCH) // _MS)


def parse_id(text: str) -> uuid.UUID | None:
    """The UUID a client sent, or None when the text cannot be one of ours."""
    if len(text) > 64:
        return None
    try:
        return uuid.UUID(text)
    except ValueError:
        return None
