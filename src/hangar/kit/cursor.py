"""Opaque, signed cursors for keyset pagination (the public /reservations and /events).

A cursor carries where the last page ended: for reservations the last row's start time (or
none) and id (`encode`, `decode`); other lists seal values of their own (`seal`, `unseal`).
Its MAC also covers the organization and the filters it was made under, so a cursor from
another organization, a forged or altered one, or one reused with other filters is refused.
The current key signs; after a rotation the keys it replaced still verify the cursors they
signed (a cursor carries no expiry: it stays valid as long as its key is listed).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson

from hangar.foundation.crypto import derive_key
from hangar.kit.errors import ApiError

# The purpose the cursor key is derived under (hangar.foundation.crypto.derive_key); changing
# it would refuse every cursor handed out.
PURPOSE = "cursor"

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MAC_BYTES = 16
_MAX_CURSOR_LENGTH = 200


@dataclass(frozen=True)
class CursorKeys:
    """The key that signs new cursors, then the keys that still verify older ones."""

    current: bytes
    previous: tuple[bytes, ...] = ()

    @classmethod
    def derive(cls, secret_key: str, previous: Sequence[str] = ()) -> CursorKeys:
        """From HANGAR_SECRET_KEY and HANGAR_SECRET_KEY_PREVIOUS."""
        return cls(
            derive_key(secret_key, PURPOSE), tuple(derive_key(key, PURPOSE) for key in previous)
        )

    def __repr__(self) -> str:
        return f"CursorKeys(<{1 + len(self.previous)} keys>)"


@dataclass(frozen=True)
class Position:
    start_time: datetime | None
    id: uuid.UUID


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _mac(key: bytes, org_id: uuid.UUID, context: str, payload: bytes) -> bytes:
    msg = org_id.bytes + hashlib.sha256(context.encode()).digest() + payload
    # hmac.digest: OpenSSL's one-shot HMAC, without an HMAC object's Python-level setup.
    return hmac.digest(key, msg, "sha256")[:_MAC_BYTES]


def micros(moment: datetime) -> int:
    """A time as a cursor holds it: whole microseconds since the epoch."""
    return (moment - _EPOCH) // timedelta(microseconds=1)


def from_micros(value: object) -> datetime:
    """The time `micros` made; a ValueError (an InvalidCursor to `unseal`'s callers) if not."""
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValueError("not a time")
    return _EPOCH + timedelta(microseconds=value)


def seal(keys: CursorKeys, org_id: uuid.UUID, context: str, values: list[object]) -> str:
    """`values` (JSON) as a cursor of this organization's results under `context`."""
    payload = orjson.dumps(values)
    return _b64(payload) + "." + _b64(_mac(keys.current, org_id, context, payload))


def encode(keys: CursorKeys, org_id: uuid.UUID, context: str, position: Position) -> str:
    start = None if position.start_time is None else micros(position.start_time)
    return seal(keys, org_id, context, [start, position.id.hex])


class InvalidCursor(ApiError):
    """400: not a cursor of these results (forged, altered, another organization's, or made
    under other filters)."""

    def __init__(self) -> None:
        super().__init__(
            400,
            "INVALID_CURSOR",
            "The cursor is not valid here: pass back next_cursor exactly, with the same filters",
        )


def unseal(keys: CursorKeys, org_id: uuid.UUID, context: str, cursor: str) -> list[Any]:
    """The values `seal` put in `cursor`, if this organization's results under `context`
    gave it; InvalidCursor otherwise."""
    if len(cursor) > _MAX_CURSOR_LENGTH or cursor.count(".") != 1:
        raise InvalidCursor
    body, mac = cursor.split(".")
    try:
        payload, given_mac = _unb64(body), _unb64(mac)
    except (binascii.Error, ValueError):
        raise InvalidCursor from None
    # The decoder skips stray characters, takes "+/" for "-_" and ignores trailing bits:
    # only the exact text we issued is accepted, so no altered cursor passes for the same one.
    if _b64(payload) != body or _b64(given_mac) != mac:
        raise InvalidCursor
    if not any(
        hmac.compare_digest(given_mac, _mac(key, org_id, context, payload))
        for key in (keys.current, *keys.previous)
    ):
        raise InvalidCursor
    try:
        values = orjson.loads(payload)
    except orjson.JSONDecodeError:
        raise InvalidCursor from None
    if not isinstance(values, list):
        raise InvalidCursor
    return values


def decode(keys: CursorKeys, org_id: uuid.UUID, context: str, cursor: str) -> Position:
    values = unseal(keys, org_id, context, cursor)
    # Signed by us, so well formed; still, never let a surprise become a 500.
    try:
        start_micros, id_hex = values
        start = None if start_micros is None else from_micros(start_micros)
        return Position(start_time=start, id=uuid.UUID(hex=id_hex))
    except (ValueError, TypeError, OverflowError):
        raise InvalidCursor from None
