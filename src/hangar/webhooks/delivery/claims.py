"""The claim: which due deliveries a dispatcher leases, a window of subscriptions at a time,
and what each claimed delivery carries to its attempt. The statements are built once per
process (claim_statements.py); the dispatcher (hangar.webhooks.delivery.dispatcher) runs them
through `Claiming`."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import asyncpg
from sqlalchemy.ext.asyncio import AsyncConnection

from hangar.webhooks.delivery.claim_statements import ClaimStatements
from hangar.webhooks.delivery.ring import Ring, Turn
from hangar.webhooks.delivery.states import (
    WALK_FROM_START,
)


@dataclass(frozen=True)
class Claimed:
    """A leased delivery with everything its attempt needs, read in the claiming transaction."""

    id: uuid.UUID
    org_id: uuid.UUID
    subscription_id: uuid.UUID
    event_id: uuid.UUID
    event_name: str
    attempts_made: int
    series_from: int  # attempts_made when this series (the first, or a redelivery) began
    lease_until: datetime
    url: str
    secret_encrypted: str
    # The secret a rotation replaced, and until when it also signs (None: it does not).
    previous_secret_encrypted: str | None
    previous_secret_expires_at: datetime | None
    enabled: bool
    deleted: bool
    data: str
    event_at: datetime  # when the event was recorded: the first attempt's delay is from then
    # A delivery of the Test action (its event is recorded as test.ping, whatever it sends).
    is_test: bool


class Claiming:
    """The claim's statements, built once: constructing them and computing their cache keys
    at every claim was a visible share of the time between a commit and its delivery (G7).
    Bound parameters: `now`, `lease` (the new lease's end), `slots` (how many to take) and
    `walked` (the window's subscriptions, from `walk`); `subscriptions` for PostgreSQL's
    `lease_and_read`, `ids` for SQLite's `read`. PostgreSQL's are `Read`s, run on asyncpg's
    own connection: through SQLAlchemy, each statement cost the worker more than the
    database did.

    A claim looks at one window of subscriptions at a time (`Ring`), so that its statements
    cost what the window holds however many subscriptions have work.

    PostgreSQL, where any number of workers claim at once, in one transaction:
    1. `lock`: the subscriptions with due work and room under their cap, locked
       (FOR NO KEY UPDATE SKIP LOCKED: a subscription another worker is claiming for is left
       to it, and nobody waits). Outbox inserts only take KEY SHARE, so they never wait.
    2. `lease`: in a new statement, so with a snapshot taken after the locks: counts each
       locked subscription's live leases, which every claim before it committed, and leases
       by turn what fits under the cap and in `slots`; returns them with what attempts need.
    One statement could not do it: its snapshot predates the locks it takes, so it would not
    see the leases of a claim that committed in between, and two workers would each fill
    the same subscription's cap.

    SQLite has one writer: `lease` is one UPDATE (its reads see every committed lease), then
    `read` in the same transaction.
    """

    def __init__(self, dialect: str) -> None:
        statements = ClaimStatements.of(dialect)
        self.walk = statements.walk
        self.lock = statements.lock
        self.lease_and_read = statements.lease_and_read
        self.lease = statements.lease
        self.read = statements.read
        self.next_change = statements.next_change

    async def take(
        self,
        conn: AsyncConnection | asyncpg.Connection,
        ring: Ring,
        slots: int,
        times: dict[str, object],
        first: list[uuid.UUID] | None = None,
        windows: int | None = None,
    ) -> list[dict[str, Any]]:
        """Leases up to `slots` due deliveries, in the transaction `conn` is in (asyncpg's
        own on PostgreSQL), a window of `ring` at a time, at most `windows` of them (by
        default the ring's `windows_per_claim`); the rows of `Claimed` but its lease. Given
        `first` (the subscriptions a wake named: new work), looks at those
        alone first, and when it takes any, ends there: their attempts start as soon as the
        claim commits, not after it has walked the ring (up to four windows of statements);
        the dispatcher claims again at once for the rest."""
        if first:
            taken = await self._lease(conn, first, slots, times)
            if taken:
                return taken
        taken = []
        turn = ring.turn or Turn(ring)
        for _ in range(windows or ring.windows_per_claim):
            window = {"after": ring.after or WALK_FROM_START, "window": ring.window}
            found = [row["id"] for row in await self.walk.rows(conn, window)]
            ring.walked(found)
            walked = turn.clip(found)
            if walked:
                taken += await self._lease(conn, walked, slots - len(taken), times)
            if turn.done or len(taken) >= slots:
                break
        ring.turn = None if turn.done or len(taken) >= slots else turn
        return taken

    async def _lease(
        self,
        conn: AsyncConnection | asyncpg.Connection,
        walked: list[uuid.UUID],
        slots: int,
        times: dict[str, object],
    ) -> list[dict[str, Any]]:
        """Up to `slots` due deliveries of the `walked` subscriptions, leased."""
        params = {**times, "slots": slots, "walked": walked}
        if self.lock is not None and self.lease_and_read is not None:
            assert not isinstance(conn, AsyncConnection)  # PostgreSQL: asyncpg's own
            locked = [row["id"] for row in await self.lock.rows(conn, params)]
            if not locked:
                return []
            return await self.lease_and_read.rows(conn, {**params, "subscriptions": locked})
        assert isinstance(conn, AsyncConnection)  # SQLite's is always SQLAlchemy's
        ids = (await conn.scalars(self.lease, params)).all()
        if not ids:
            return []
        return [dict(row._mapping) for row in await conn.execute(self.read, {"ids": ids})]
