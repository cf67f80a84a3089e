"""The challenge between the password and the code of a two-factor sign-in
(hangar.auth.two_factor): after the right password the browser holds it in a cookie of its
own, CHALLENGE_COOKIE: 256 random bits, only their SHA-256 stored, for CHALLENGE_LIFETIME,
one live per account. The code ends it and a session begins.
"""

from __future__ import annotations

import secrets
import uuid
from datetime import datetime, timedelta

from sqlalchemy import delete, insert, select
from sqlalchemy.ext.asyncio import AsyncConnection

from hangar.auth.models import SignInChallenge
from hangar.foundation.crypto import token_digest
from hangar.foundation.ids import new_id

CHALLENGE_COOKIE = "hangar_two_factor"
CHALLENGE_LIFETIME = timedelta(minutes=5)


async def challenge(conn: AsyncConnection, user_id: uuid.UUID, now: datetime) -> str:
    """A new challenge for the account, replacing any earlier one: the cookie's value."""
    token = secrets.token_urlsafe(32)
    await conn.execute(delete(SignInChallenge).where(SignInChallenge.user_id == user_id))
    await conn.execute(
        insert(SignInChallenge).values(
            id=new_id(),
            user_id=user_id,
            token_hash=token_digest(token),
            created_at=now,
            expires_at=now + CHALLENGE_LIFETIME,
        )
    )
    return token


async def challenged(conn: AsyncConnection, token: str | None, now: datetime) -> uuid.UUID | None:
    """The account a live challenge is for, or None."""
    if not token or len(token) > 100:
        return None
    found: uuid.UUID | None = await conn.scalar(
        select(SignInChallenge.user_id).where(
            SignInChallenge.token_hash == token_digest(token), SignInChallenge.expires_at > now
        )
    )
    return found


async def end_challenge(conn: AsyncConnection, token: str) -> bool:
    """The challenge is used up; False when it was already (two uses at once: one wins)."""
    gone = await conn.execute(
        delete(SignInChallenge)
        .where(SignInChallenge.token_hash == token_digest(token))
        .returning(SignInChallenge.id)
    )
    return gone.first() is not None
