"""Identifiers: UUIDv7, so rows created together sit together in indexes."""

from __future__ import annotations

import os
import threading
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


_ascending = threading.Lock()
_last_ms = _last_counter = 0


def ascending_id() -> uuid.UUID:
    """A version-7 UUID above every other this process made with it: ids made within one
    millisecond still sort in the order they were made (RFC 9562 §6.2, method 1: a counter
    in rand_a; past 4096 in a millisecond, the next millisecond is borrowed). Events take
    theirs from here, so the events API lists those of one transaction in firing order."""
    global _last_ms, _last_counter
    with _ascending:
        ms, counter = int(time.time() * 1000), 0
        if ms <= _last_ms:
            ms, counter = _last_ms, _last_counter + 1
            if counter > 0xFFF:
                ms, counter = ms + 1, 0
        _last_ms, _last_counter = ms, counter
    value = (ms & ((1 << 48) - 1)) << 80
    value |= 0x7 << 76  # version
    value |= counter << 64  # rand_a: the counter
    value |= 0b10 << 62  # RFC 4122 variant
    value |= int.from_bytes(os.urandom(8), "big") & ((1 << 62) - 1)  # rand_b, 62 bits
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
