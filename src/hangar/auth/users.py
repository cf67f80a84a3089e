"""Accounts, as the other features meet them: found by email, made, given a password. No
feature but auth reads or writes the users table itself.

An account's email is stored lower-cased; a placeholder (the pending membership of an
invitation, hangar.orgs.invitations) has neither email nor password.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection
from datetime import datetime

from sqlalchemy import delete, func, insert, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from hangar.auth.models import User


async def account_with(
    conn: AsyncConnection, email: str, *, lock: bool = False
) -> uuid.UUID | None:
    """The id of the account that has this (lower-cased) email, if one does (a placeholder
    has none), password or not. `lock` holds its row (PostgreSQL) until the transaction
    ends."""
    stmt = select(User.id).where(User.email.is_not(None), func.lower(User.email) == email)
    if lock:
        stmt = stmt.with_for_update()
    found: uuid.UUID | None = await conn.scalar(stmt)
    return found


async def create(
    conn: AsyncConnection, user_id: uuid.UUID, email: str | None, now: datetime
) -> None:
    """An account without a password (email None: an invitation's placeholder)."""
    await conn.execute(
        insert(User).values(id=user_id, email=email, password_hash=None, created_at=now)
    )


async def set_password(conn: AsyncConnection, user_id: uuid.UUID, password_hash: str) -> None:
    await conn.execute(update(User).where(User.id == user_id).values(password_hash=password_hash))


async def claim_placeholder(
    conn: AsyncConnection, user_id: uuid.UUID, email: str, password_hash: str
) -> bool:
    """The placeholder becomes the account of `email`, with this password; False if it is no
    longer a placeholder. The WHERE restates "still a placeholder": of two uses of one link,
    one wins. Raises IntegrityError when another account has the email."""
    changed = await conn.execute(
        update(User)
        .where(User.id == user_id, User.email.is_(None), User.password_hash.is_(None))
        .values(email=email, password_hash=password_hash)
        .returning(User.id)
    )
    return changed.first() is not None


async def delete_placeholder(conn: AsyncConnection, user_id: uuid.UUID) -> None:
    """Deletes the user if it is still a placeholder (never an account)."""
    await conn.execute(
        delete(User).where(User.id == user_id, User.email.is_(None), User.password_hash.is_(None))
    )


async def emails_of(
    conn: AsyncConnection, user_ids: Collection[uuid.UUID]
) -> dict[uuid.UUID, str | None]:
    """Each user's email (None for a placeholder), by id; unknown ids are left out."""
    if not user_ids:
        return {}
    rows = await conn.execute(select(User.id, User.email).where(User.id.in_(list(user_ids))))
    return {r.id: r.email for r in rows}
