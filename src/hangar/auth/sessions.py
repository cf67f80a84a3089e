"""Server-side sessions for signed-in users (interfaces.md §3).

The cookie carries 32 random bytes; the database keeps only their SHA-256, so a dump of the
sessions table signs nobody in. A sign-in always makes a new session (no fixation); signing
out deletes the row, which ends the session wherever the cookie is used.
"""

from __future__ import annotations

import hmac
import secrets
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import delete, func, insert, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from hangar.auth.models import User, UserSession
from hangar.auth.passwords import hashed, verified
from hangar.foundation.crypto import token_digest
from hangar.foundation.ids import new_id
from hangar.kit.batches import Oldest

COOKIE = "hangar_session"
IDLE_TIMEOUT = timedelta(hours=2)
ABSOLUTE_TIMEOUT = timedelta(hours=12)
# Sliding the idle window costs a write; once every few minutes is precise enough.
TOUCH_EVERY = timedelta(minutes=5)


_dummy: list[str] = []


async def _dummy_hash() -> str:
    """A hash of a random password, made once per process (on a hashing thread, not the
    event loop): verifying against it for an unknown email costs what a known one costs."""
    if not _dummy:
        _dummy.append(await hashed(secrets.token_hex(16)))
    return _dummy[0]


@dataclass(frozen=True)
class SignedIn:
    session_id: uuid.UUID
    user_id: uuid.UUID
    email: str
    csrf_token: str


async def verify_credentials(
    conn: AsyncConnection, email: str, password: str
) -> tuple[uuid.UUID, str] | None:
    """The account (id, email) these credentials prove, or None when they are wrong. An email
    with no account (or no password) costs one hash too, against a dummy: the time of the
    answer does not say whether the email has an account."""
    row = (
        await conn.execute(
            select(User.id, User.email, User.password_hash).where(
                # A placeholder user (a pending invitation's) has no email: never matched.
                User.email.is_not(None),
                func.lower(User.email) == email.strip().lower(),
            )
        )
    ).first()
    stored = row.password_hash if row is not None and row.password_hash else None
    stored = stored or await _dummy_hash()
    # argon2 is deliberately slow: on a hashing thread, within the process's bound (which
    # raises passwords.Busy when every slot stays taken).
    matches = await verified(stored, password)
    if not matches or row is None or not row.password_hash:
        return None
    return row.id, row.email


async def start(
    conn: AsyncConnection, user_id: uuid.UUID, email: str, now: datetime
) -> tuple[str, SignedIn]:
    """A new session for a user whose identity the caller has just proven: the cookie value
    and the session. Also used when a person sets their password through an invitation."""
    token = secrets.token_urlsafe(32)
    signed_in = SignedIn(
        session_id=new_id(),
        user_id=user_id,
        email=email,
        csrf_token=secrets.token_urlsafe(32),
    )
    await conn.execute(
        insert(UserSession).values(
            id=signed_in.session_id,
            token_hash=token_digest(token),
            user_id=user_id,
            csrf_token=signed_in.csrf_token,
            created_at=now,
            last_seen_at=now,
            expires_at=now + ABSOLUTE_TIMEOUT,
        )
    )
    return token, signed_in


async def resume(conn: AsyncConnection, token: str | None, now: datetime) -> SignedIn | None:
    """The live session behind a cookie value, sliding its idle window; None if none."""
    if not token or len(token) > 100:
        return None
    digest = token_digest(token)
    row = (
        await conn.execute(
            select(
                UserSession.id,
                UserSession.token_hash,
                UserSession.user_id,
                UserSession.csrf_token,
                UserSession.last_seen_at,
                UserSession.expires_at,
                User.email,
            )
            .join(User, User.id == UserSession.user_id)
            .where(UserSession.token_hash == digest)
        )
    ).first()
    if row is None or not hmac.compare_digest(row.token_hash, digest):
        return None
    if now >= row.expires_at or now - row.last_seen_at >= IDLE_TIMEOUT:
        await conn.execute(delete(UserSession).where(UserSession.id == row.id))
        return None
    if now - row.last_seen_at >= TOUCH_EVERY:
        await conn.execute(
            update(UserSession).where(UserSession.id == row.id).values(last_seen_at=now)
        )
    return SignedIn(
        session_id=row.id, user_id=row.user_id, email=row.email, csrf_token=row.csrf_token
    )


async def sign_out(conn: AsyncConnection, session_id: uuid.UUID) -> None:
    await conn.execute(delete(UserSession).where(UserSession.id == session_id))


async def end_all(conn: AsyncConnection, user_id: uuid.UUID) -> None:
    """Every session of the account ends (its password was just changed)."""
    await conn.execute(delete(UserSession).where(UserSession.user_id == user_id))


def csrf_ok(expected: str, given: str | None) -> bool:
    return given is not None and hmac.compare_digest(expected.encode(), given.encode())


TABLE = UserSession.__tablename__


def expired(now: datetime, size: int) -> Oldest:
    """Retention's batches of sessions past their absolute expiry (one idle too long is past
    its expiry within 12 hours): nothing refers to a session."""
    return Oldest(UserSession, UserSession.expires_at, now, size)
