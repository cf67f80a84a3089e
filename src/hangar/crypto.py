"""Keys derived from HANGAR_SECRET_KEY, one per purpose, so no two uses share a key."""

from __future__ import annotations

import hashlib
import hmac


def derive_key(secret_key: str, purpose: str) -> bytes:
    return hmac.new(secret_key.encode(), b"hangar/" + purpose.encode(), hashlib.sha256).digest()
