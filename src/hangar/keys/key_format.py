"""API key format, generation and hashing (the scopes a key may carry: hangar.kit.scopes)."""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass

from hangar.foundation.crypto import token_digest

KEY_PREFIX = "svc_pk_"
KEY_BODY_LENGTH = 43
STORED_PREFIX_LENGTH = 12
_KEY_RE = re.compile(r"svc_pk_[A-Za-z0-9_-]{43}")


@dataclass(frozen=True)
class NewKey:
    key: str  # shown once, never stored
    key_hash: str
    prefix: str


def generate_key() -> NewKey:
    # 32 random bytes encode to exactly 43 URL-safe base64 characters.
    key = KEY_PREFIX + secrets.token_urlsafe(32)
    assert len(key) == len(KEY_PREFIX) + KEY_BODY_LENGTH
    return NewKey(key=key, key_hash=token_digest(key), prefix=key[:STORED_PREFIX_LENGTH])


def is_well_formed(key: str) -> bool:
    return _KEY_RE.fullmatch(key) is not None
