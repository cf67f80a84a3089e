"""The statements behind a key, each in a short transaction of its own: claim it before the
action's transaction begins (so that a second request sent meanwhile finds the claim), then
keep the action's answer once that transaction committed, or let the key go.

Claiming is one INSERT that the primary key (organization, account, key) lets only one
request make, on PostgreSQL and SQLite alike (`ON CONFLICT DO NOTHING`: no savepoint, no
error to recover from). The request that finds the row taken reads it: a kept answer to
replay, a claim still running, or a key given with another request.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import Enum
from typing import Any

from sqlalchemy import ColumnElement, and_, delete, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from hangar.idempotency.models import IdempotencyKey
from hangar.kit.batches import Oldest

TABLE = IdempotencyKey.__tablename__
RUNNING, DONE = "running", "done"

# A key is kept this long after it was claimed (Stripe keeps them 24 hours); after that the
# same key is a new key.
KEPT = timedelta(hours=24)
# A claim still "running" this long after it was taken is one whose process died mid-action
# (a crash, a kill, a machine lost): the same request may then take it over and run again.
# Every wait inside a request is bounded far below it (each statement 15 s, SQLite's writer
# 10 s, each mail server operation 10 s, a stopping server 10 s), so a live request never
# loses its claim; until then a retry is answered 409 IDEMPOTENCY_KEY_IN_USE. The one risk
# it leaves is a process that died in the moment between its action's commit and the
# keeping of its answer: that action is then done again.
ABANDONED_AFTER = timedelta(minutes=5)
# Claiming meets a row that disappears between the INSERT and the read (its claim let go)
# or changes under a renewal at most this many times in a row before it answers "in use".
_TRIES = 3


@dataclass(frozen=True)
class Scope:
    """Whose key: the organization in the path, the account that sent it, the key."""

    org_id: uuid.UUID
    user_id: uuid.UUID
    key: str


@dataclass(frozen=True)
class Claimed:
    """This request holds the key; `at` is its claim's identity (the row's created_at)."""

    scope: Scope
    at: datetime


@dataclass(frozen=True)
class Kept:
    """The first request's answer, kept: its status and its sealed headers and body."""

    status: int
    answer_sealed: str


class Refused(Enum):
    IN_USE = "in use"  # the first request with this key is still running
    REUSED = "reused"  # the key was given with another request (method, path or body)


def _is(scope: Scope) -> ColumnElement[bool]:
    return and_(
        IdempotencyKey.org_id == scope.org_id,
        IdempotencyKey.user_id == scope.user_id,
        IdempotencyKey.key == scope.key,
    )


def _claim_of(claimed: Claimed) -> ColumnElement[bool]:
    return and_(
        _is(claimed.scope),
        IdempotencyKey.state == RUNNING,
        IdempotencyKey.created_at == claimed.at,
    )


async def _insert(conn: AsyncConnection, scope: Scope, fingerprint: str, now: datetime) -> bool:
    dialect_insert: Any = postgresql.insert if conn.dialect.name == "postgresql" else sqlite.insert
    made = await conn.execute(
        dialect_insert(IdempotencyKey)
        .values(
            org_id=scope.org_id,
            user_id=scope.user_id,
            key=scope.key,
            fingerprint=fingerprint,
            state=RUNNING,
            created_at=now,
        )
        .on_conflict_do_nothing()
    )
    return bool(made.rowcount)


async def _renew(
    conn: AsyncConnection,
    scope: Scope,
    found: datetime,
    fingerprint: str,
    now: datetime,
    *,
    running_only: bool,
) -> bool:
    """The row as found at `found` (expired, or a claim abandoned) claimed anew by this
    request; False when another request changed it first."""
    where = and_(_is(scope), IdempotencyKey.created_at == found)
    if running_only:
        where = and_(where, IdempotencyKey.state == RUNNING)
    renewed = await conn.execute(
        update(IdempotencyKey)
        .where(where)
        .values(
            fingerprint=fingerprint,
            state=RUNNING,
            created_at=now,
            status=None,
            answer_sealed=None,
        )
    )
    return bool(renewed.rowcount)


async def claim(
    engine: AsyncEngine, scope: Scope, fingerprint: str, now: datetime
) -> Claimed | Kept | Refused:
    """The key claimed for this request, its first answer, or why the request is refused;
    committed before it returns."""
    for _ in range(_TRIES):
        async with engine.begin() as conn:
            if await _insert(conn, scope, fingerprint, now):
                return Claimed(scope, now)
            row = (
                await conn.execute(
                    select(
                        IdempotencyKey.fingerprint,
                        IdempotencyKey.state,
                        IdempotencyKey.created_at,
                        IdempotencyKey.status,
                        IdempotencyKey.answer_sealed,
                    ).where(_is(scope))
                )
            ).one_or_none()
            if row is None:
                continue  # let go between the INSERT and this read: claim it again
            if row.created_at <= now - KEPT:
                # Past its day but not yet pruned: a new key, whatever it was used for.
                if await _renew(conn, scope, row.created_at, fingerprint, now, running_only=False):
                    return Claimed(scope, now)
                continue
            if row.fingerprint != fingerprint:
                return Refused.REUSED
            if row.state == DONE and row.status is not None and row.answer_sealed is not None:
                return Kept(row.status, row.answer_sealed)
            if row.created_at <= now - ABANDONED_AFTER:
                if await _renew(conn, scope, row.created_at, fingerprint, now, running_only=True):
                    return Claimed(scope, now)
                continue
            return Refused.IN_USE
    return Refused.IN_USE


async def keep(engine: AsyncEngine, claimed: Claimed, status: int, answer_sealed: str) -> bool:
    """The action's answer kept for the key; False when the claim is no longer this
    request's (taken over as abandoned: its answer is then the later request's)."""
    async with engine.begin() as conn:
        kept = await conn.execute(
            update(IdempotencyKey)
            .where(_claim_of(claimed))
            .values(state=DONE, status=status, answer_sealed=answer_sealed)
        )
    return bool(kept.rowcount)


async def let_go(engine: AsyncEngine, claimed: Claimed) -> None:
    """The key given up, its answer not kept: the same request sent again runs again."""
    async with engine.begin() as conn:
        await conn.execute(delete(IdempotencyKey).where(_claim_of(claimed)))


def expired(before: datetime, size: int) -> Oldest:
    """Retention's batches: keys claimed before `before`, oldest first."""
    return Oldest(IdempotencyKey, IdempotencyKey.created_at, before, size)
