"""Sealing every stored webhook secret again under the current HANGAR_SECRET_KEY, so that
the keys it replaced can be dropped (`hangar secrets reseal`).

Safe while hangar serves: the subscriptions are read in batches by id (keyset pagination),
each batch in one short transaction, and a row is written only if its sealed value is still
the one read (compare and set). Only the sealed value is written, so a subscription deleted
meanwhile stays deleted and one created meanwhile (sealed by a process that has the current
key) is left as it is. Idempotent: a secret already sealed under the current key is counted,
never written. The secret itself is the same before and after: receivers notice nothing.

A subscription inside a rotation's grace holds two sealed secrets, the current one and the
one it replaced: both are resealed, in one compare and set (a rotation meanwhile changes the
current one, so the row is read again), and each is counted as a secret.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import ColumnElement, and_, select, update
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from hangar.foundation.crypto import SecretBox, SecretUnreadable
from hangar.webhooks.models import Subscription

BATCH = 100


@dataclass(frozen=True)
class Unreadable:
    """A subscription whose secret (or previous secret, or both) no key opens: named, never
    shown."""

    subscription_id: uuid.UUID
    org_id: uuid.UUID
    deleted: bool


@dataclass
class Resealed:
    """What a run found, so far."""

    resealed: int = 0
    already_current: int = 0
    unreadable: list[Unreadable] = field(default_factory=list)
    # Secrets no key opens: a subscription in `unreadable` may hold two.
    unreadable_secrets: int = 0

    @property
    def checked(self) -> int:
        """Secrets, not subscriptions: one inside a rotation's grace holds two."""
        return self.resealed + self.already_current + self.unreadable_secrets

    @property
    def blocking(self) -> list[Unreadable]:
        """Unreadable secrets of live subscriptions: with them the previous key cannot go. A
        deleted subscription never signs again, so its unreadable secret blocks nothing."""
        return [u for u in self.unreadable if not u.deleted]


_ROW = (
    Subscription.id,
    Subscription.org_id,
    Subscription.secret_encrypted,
    Subscription.previous_secret_encrypted,
    Subscription.deleted_at,
)
# The sealed columns of a row: the current secret, and the one a rotation replaced (or None).
_SEALED = ("secret_encrypted", "previous_secret_encrypted")


@dataclass
class Resealing:
    """One run: `batch` reads the next rows and writes them; `read` and `write` are its two
    halves (tests put a concurrent change between them)."""

    box: SecretBox
    size: int = BATCH
    after: uuid.UUID | None = None
    found: Resealed = field(default_factory=Resealed)

    async def read(self, conn: AsyncConnection) -> list[Any]:
        stmt = select(*_ROW).order_by(Subscription.id).limit(self.size)
        if self.after is not None:
            stmt = stmt.where(Subscription.id > self.after)
        rows = list(await conn.execute(stmt))
        if rows:
            self.after = rows[-1].id
        return rows

    async def write(self, conn: AsyncConnection, rows: list[Any]) -> None:
        for row in rows:
            await self._one(conn, row)

    async def batch(self, engine: AsyncEngine) -> bool:
        """One batch in its own transaction; False once every subscription has been seen."""
        async with engine.begin() as conn:
            rows = await self.read(conn)
            await self.write(conn, rows)
        return len(rows) == self.size

    async def _one(self, conn: AsyncConnection, row: Any) -> None:
        # A row changed since it was read (by another run, or a rotation) is read again and
        # judged on what it holds now; one deleted outright is gone, and so not counted.
        while row is not None:
            judged = Resealed()
            changes: dict[str, str] = {}
            for column in _SEALED:
                sealed = getattr(row, column)
                if sealed is None:
                    continue
                try:
                    again = self.box.resealed(sealed)
                except SecretUnreadable:
                    judged.unreadable_secrets += 1
                    continue
                if again is None:
                    judged.already_current += 1
                else:
                    changes[column] = again
                    judged.resealed += 1
            if changes:
                written = await conn.execute(
                    update(Subscription).where(_unchanged(row)).values(**changes)
                )
                if written.rowcount != 1:
                    row = (
                        await conn.execute(select(*_ROW).where(Subscription.id == row.id))
                    ).first()
                    continue
            self.found.resealed += judged.resealed
            self.found.already_current += judged.already_current
            if judged.unreadable_secrets:
                self.found.unreadable_secrets += judged.unreadable_secrets
                self.found.unreadable.append(
                    Unreadable(row.id, row.org_id, deleted=row.deleted_at is not None)
                )
            return


def _unchanged(row: Any) -> ColumnElement[bool]:
    """The row still holds the sealed values read (compare and set)."""
    return and_(
        Subscription.id == row.id,
        Subscription.secret_encrypted == row.secret_encrypted,
        Subscription.previous_secret_encrypted.is_not_distinct_from(row.previous_secret_encrypted),
    )


async def reseal_all(
    engine: AsyncEngine,
    box: SecretBox,
    *,
    size: int = BATCH,
    progress: Callable[[Resealed], None] | None = None,
) -> Resealed:
    """Every subscription's secret (deleted ones too: a dropped key must open nothing in a
    later dump) sealed under the box's current key; `progress` hears after each batch."""
    run = Resealing(box, size)
    more = True
    while more:
        more = await run.batch(engine)
        if progress is not None:
            progress(run.found)
    return run.found


async def newest_sealed(conn: AsyncConnection) -> str | None:
    """The sealed secret of the newest live subscription, or None if there is none."""
    return await conn.scalar(
        select(Subscription.secret_encrypted)
        .where(Subscription.deleted_at.is_(None))
        .order_by(Subscription.created_at.desc(), Subscription.id.desc())
        .limit(1)
    )


def key_opening(sealed: str, purpose: str, keys: Sequence[str]) -> str | None:
    """The first of `keys` that opens `sealed`, or None."""
    for key in keys:
        try:
            SecretBox(key, purpose).open(sealed)
        except SecretUnreadable:
            continue
        return key
    return None
