"""API key format, generation, hashing and the scope vocabulary."""

from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass

KEY_PREFIX = "svc_pk_"
KEY_BODY_LENGTH = 43
STORED_PREFIX_LENGTH = 12
_KEY_RE = re.compile(r"svc_pk_[A-Za-z0-9_-]{43}")
# The scope that adds members' contact fields (hangar.orgs.schemas reads it too).
MEMBERS_FULL = "read:members.full"

SCOPES: dict[str, str] = {
    "read:reservations": "Reservations, as JSON and as the calendar feed",
    "read:aircraft": "The active fleet with current Hobbs, tach and annual due date",
    "read:squawks": "Squawks (reported discrepancies)",
    "read:members": "Membership records without contact details: user id, role, status, join date",
    "read:members.full": "Adds email, first name, last name and phone to member records "
    "(needs read:members too)",
    "read:maintenance": "Maintenance log entries and work orders",
}

# A key may hold read:members.full without read:members (the spec allows it), and then every
# call to /members is refused. The key-creation screen says so beside the form
# (key_new.html); the CLI says it after the key, with this sentence.
FULL_WITHOUT_MEMBERS = (
    "read:members.full only adds contact fields: without read:members too, "
    "this key is refused on /members"
)


def scope_note(scopes: list[str]) -> str | None:
    """What a key with these scopes may not do that its holder would expect, or None."""
    if MEMBERS_FULL in scopes and "read:members" not in scopes:
        return FULL_WITHOUT_MEMBERS
    return None


@dataclass(frozen=True)
class NewKey:
    key: str  # shown once, never stored
    key_hash: str
    prefix: str


def generate_key() -> NewKey:
    # 32 random bytes encode to exactly 43 URL-safe base64 characters.
    key = KEY_PREFIX + secrets.token_urlsafe(32)
    assert len(key) == len(KEY_PREFIX) + KEY_BODY_LENGTH
    return NewKey(key=key, key_hash=hash_key(key), prefix=key[:STORED_PREFIX_LENGTH])


def is_well_formed(key: str) -> bool:
    return _KEY_RE.fullmatch(key) is not None


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()
