"""The delivery path: claims due deliveries from the queue tables and attempts them.

No tenant waits for another. A claim takes only as many deliveries as the dispatcher has free
attempt slots, so nothing it leases waits behind a busy slot; it takes them by turn across
organizations and, within one, across subscriptions (every organization's oldest due
delivery before anyone's second), and never past the shares of `states`: 10 in flight to one
subscription (one while its attempts time out), 100 for one organization, 100 to one
destination, counted from the live leases of every worker. The last `RESERVED_SLOTS` of a
dispatcher's slots go only to organizations with nothing in flight: whatever mix of slow
endpoints holds the rest, a healthy organization's delivery finds a slot at the next claim.
A slow endpoint is served more slowly, never dropped or disabled for being slow.

Claims happen in two places: the loop claims when woken (a new event's NOTIFY, a retry
coming due, an idle dispatcher's timer), and each batch of recorded outcomes claims, in its
own transaction, for the slots it frees (outcomes.Refill, given to the recorder when it is
made): so a slot is refilled as its attempt's outcome is committed, with no claim of its own.
Claims look round a ring of the subscriptions with work (`Ring`): an idle dispatcher's walk
up to four windows of it, a busy one's one window each, the refills of its outcomes walking
on as they come.

A claim sets a lease (`SKIP LOCKED` on PostgreSQL, so workers on any number of machines never
take the same delivery at once; see `Claiming` for how they share the caps). Each claimed
delivery runs as its own task. Outcomes are written in batches (`outcomes`), and only by the
worker whose lease it still is; a worker that dies mid-attempt, or before its outcome is
committed, simply lets its lease run out, and the delivery is attempted again (at least once
delivery).

Stopping (SIGTERM) claims nothing more: attempts under way finish (each within its 10 s
timeout) and are recorded. Since nothing is leased before it has a slot, nothing claimed is
left unstarted, so a stop takes one attempt's time at most and loses no delivery.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import logging
import uuid
from collections.abc import Iterable
from datetime import timedelta

import asyncpg
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from hangar.db.reads import pg_transaction, reader
from hangar.foundation.clock import Clock
from hangar.foundation.crypto import SecretBox
from hangar.foundation.metrics import (
    DATABASE_ERRORS,
    DELIVERIES_HELD,
)
from hangar.webhooks.delivery.attempting import Attempter
from hangar.webhooks.delivery.claims import Claimed, Claiming
from hangar.webhooks.delivery.outcomes import Recorder, Refill
from hangar.webhooks.delivery.ring import Ring
from hangar.webhooks.delivery.sender import Sender
from hangar.webhooks.delivery.states import (
    LEASE,
)

log = logging.getLogger("hangar.webhooks")

# The longest an idle dispatcher sleeps without being kicked.
IDLE_SECONDS = 30.0
# A busy dispatcher whose claim found nothing in its window, with the rest of the ring not
# yet looked at this turn, looks at the next window after this at the latest.
RING_STEP_SECONDS = 0.05
# Attempts under way at once. Most of an attempt is waiting on its receiver, and a waiting
# socket costs a few tens of KB: enough slots that the shares of the claim (states), not the
# slots, bound what slow endpoints can hold.
SLOTS = 400
# The last of them, for organizations with nothing in flight (the claim's `reserve_only`).
RESERVED_SLOTS = 100


class Dispatcher:
    def __init__(
        self,
        engine: AsyncEngine,
        clock: Clock,
        sender: Sender,
        box: SecretBox,
        *,
        batch: int = 50,
        concurrency: int = SLOTS,
        lease: timedelta = LEASE,
    ) -> None:
        self._engine = engine
        # How long a claim holds its deliveries. Tests of a worker killed mid-run shorten it
        # (it must still outlast an attempt and its recording, or two workers deliver twice).
        self.lease = lease
        self._clock = clock
        # Decrypting a secret (Fernet) at every attempt repeats the same work for every
        # delivery to a subscription; a sealed value always opens to the same secret (a
        # rotation seals a new secret: a new sealed value). `hangar secrets reseal` changes
        # the sealed value, never the secret: one more miss, the same answer.
        open_secret = functools.lru_cache(maxsize=1024)(box.open)
        self._batch = batch  # the most one claim takes
        # Attempt slots: attempts under way at once. Tests of several workers shrink it, so
        # that no one worker can take all the work.
        self.concurrency = concurrency
        self._wake = asyncio.Event()
        # Set while the loop sleeps with no kick pending: until a kick, a stop or its next
        # look at the clock, it does nothing. What a test waits for instead of a guessed time.
        self.asleep = asyncio.Event()
        self._tasks: set[asyncio.Task[None]] = set()
        # Set while running and not yet stopping: only then do batches refill (`_refill`).
        self._refilling = False
        self._refill_wanted = 0  # what the batch being written asked to claim
        self._recorder: Recorder[Claimed] = Recorder(engine, Refill(self._refill, self._refilled))
        self._attempter = Attempter(clock, sender, open_secret, self._recorder, self.kick)
        self._claiming = Claiming(engine.dialect.name)
        self._ring = Ring()
        self._named: set[uuid.UUID] = set()  # see `kick`

    # --- the loop -------------------------------------------------------------------

    def kick(self, subscriptions: Iterable[uuid.UUID] = ()) -> None:
        """New work may be due, or a slot (or a subscription's room) came free: stop
        sleeping. `subscriptions`, named by a wake (new events, a redelivery, a recovery),
        are claimed for first by the next claim, before it goes on round the ring: their
        work waits for one claim, however many subscriptions the ring holds."""
        self._named.update(subscriptions)
        self._wake.set()
        self.asleep.clear()

    async def run(self, stop: asyncio.Event) -> None:
        self._refilling = True
        try:
            await self._loop(stop)
        finally:
            self._refilling = False  # a batch still being written claims nothing more
            await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _loop(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            # Cleared before looking for work, so a kick that comes while we look (a new
            # event, a retry just scheduled, an attempt finished) still cuts the coming sleep
            # short.
            self._wake.clear()
            wait = IDLE_SECONDS
            try:
                # Only what there are slots for: a delivery leased here waits for nobody,
                # and what is not leased stays claimable by every worker.
                want, reserve_only = self._room(self.concurrency - len(self._tasks))
                if want > 0:
                    claimed = await self.claim(want, reserve_only=reserve_only)
                    for delivery in claimed:
                        self._start(delivery)
                    if len(claimed) == want:
                        continue  # more may be due; with no slot left, the next turn sleeps
                    if self._ring.unfinished:
                        if claimed or not self._tasks:
                            continue  # on round the ring at once
                        # Busy, and this claim's window had nothing: the outcomes of the
                        # attempts under way walk on round the ring as they are recorded
                        # (each batch's refill claims from the next window); the loop
                        # walks on too, a window a step, should they all be slow.
                        wait = RING_STEP_SECONDS
                # With attempts under way, each that ends wakes the loop, and so does each
                # retry this dispatcher scheduled when it is due: only an idle loop asks the
                # database when to look again (for other workers' retries and dead leases).
                if not self._tasks:
                    wait = await self._seconds_until_next_due()
            except Exception:
                DATABASE_ERRORS.labels("dispatcher").inc()  # claiming is all database work
                log.exception("dispatcher: claiming failed; retrying shortly")
                wait = 5.0
            # The clock's own sleep: what is due at a time the clock tells is waited for on
            # that clock (an injected one ends the wait when it is moved, not in real time).
            sleepers = [
                asyncio.ensure_future(self._wake.wait()),
                asyncio.ensure_future(stop.wait()),
                asyncio.ensure_future(self._clock.sleep(wait)),
            ]
            if not self._wake.is_set():
                self.asleep.set()
            await asyncio.wait(sleepers, return_when=asyncio.FIRST_COMPLETED)
            self.asleep.clear()
            for s in sleepers:
                s.cancel()

    async def run_once(self, slots: int | None = None) -> int:
        """Claims what is due now (up to `slots`, by default one claim's worth) and attempts
        it all; for tests and `jobs`-style use."""
        claimed = await self.claim(slots)
        await asyncio.gather(*(self._attempt_safely(d) for d in claimed))
        return len(claimed)

    async def _seconds_until_next_due(self) -> float:
        """Until something not claimable now may become so: a retry's wait ending, or a
        lease running out (a worker died). Due deliveries held back by their subscription's
        cap are not in it: the attempt that ends and makes room kicks its worker."""
        now = self._clock.now()
        async with reader(self._engine).connect() as conn:
            row = (await conn.execute(self._claiming.next_change, {"now": now})).one()
        # SQLite, through an aggregate, loses the column type: a naive UTC time.
        times = [t if t.tzinfo else t.replace(tzinfo=now.tzinfo) for t in row if t is not None]
        if not times:
            return IDLE_SECONDS  # a new event kicks us awake anyway
        seconds: float = (min(times) - now).total_seconds()
        return min(max(seconds, 0.0), IDLE_SECONDS)

    # --- claiming -------------------------------------------------------------------

    async def claim(self, slots: int | None = None, *, reserve_only: bool = False) -> list[Claimed]:
        """Leases up to `slots` due deliveries (by default one claim's worth), by turn across
        organizations and subscriptions and never past their shares of attempts in flight
        (see `Claiming`), in a transaction of its own; with `reserve_only`, only for
        organizations with nothing in flight."""
        slots = self._batch if slots is None else slots
        if self._claiming.lock is not None:
            async with pg_transaction(self._engine) as pg:
                return await self.claim_on(pg, slots, reserve_only=reserve_only)
        async with self._engine.begin() as conn:
            return await self.claim_on(conn, slots, reserve_only=reserve_only)

    async def claim_on(
        self,
        conn: AsyncConnection | asyncpg.Connection,
        slots: int,
        *,
        reserve_only: bool = False,
    ) -> list[Claimed]:
        """The claim, in the transaction `conn` is in (SQLAlchemy's, or asyncpg's own): also
        how a batch of outcomes refills the slots it frees (`_refill`)."""
        now = self._clock.now()
        lease_until = now + self.lease
        times = {"now": now, "lease": lease_until, "reserve_only": reserve_only}
        if isinstance(conn, AsyncConnection) and self._claiming.lock is not None:
            conn = (await conn.get_raw_connection()).driver_connection
        # Looked at by this claim whatever it finds for them (what it cannot take now, their
        # organization's share full, say, the ring finds in its turn); at most a window's
        # worth, so that a job's transaction naming a thousand costs no claim more than the
        # ring's windows do: the rest are the next claim's.
        named = list(itertools.islice(self._named, self._ring.window))
        self._named.difference_update(named)
        # With attempts under way, one window a claim: every batch of their outcomes claims
        # again from the next (`_refill`), so the ring is walked as fast as slots free. Four
        # at a time, a refill whose first window filled a share (one destination's 100,
        # bench G16) walked three more for nothing at every batch: two statements each, on
        # the event loop the attempts share.
        windows = 1 if self._tasks else None
        rows = await self._claiming.take(
            conn, self._ring, slots, times, first=named, windows=windows
        )
        if (named and rows) or self._named:
            self.kick()  # the ring, or the names left, are the next claim's, at once
        return [Claimed(**row, lease_until=lease_until) for row in rows]

    # --- refilling the slots of recorded outcomes (outcomes.Refill) -------------------

    async def _refill(self, conn: AsyncConnection, finishing: int) -> list[Claimed]:
        """In a batch's transaction: leases what the slots free once its `finishing`
        attempts are recorded can take; nothing unless running and not stopping."""
        if not self._refilling:
            self._refill_wanted = 0
            return []
        free = self.concurrency - len(self._tasks) + finishing
        self._refill_wanted, reserve_only = self._room(free)
        if self._refill_wanted <= 0:
            return []
        return await self.claim_on(conn, self._refill_wanted, reserve_only=reserve_only)

    @property
    def reserve(self) -> int:
        """The slots kept for organizations with nothing in flight: a quarter, at most
        RESERVED_SLOTS. Worked out from the slots as they are now: the multi-process tests
        set `concurrency` after construction, and a reserve of the default's 100 above their
        2 slots left them only reserved claims."""
        return min(RESERVED_SLOTS, self.concurrency // 4)

    def _room(self, free: int) -> tuple[int, bool]:
        """How many to claim with `free` slots, and whether only for organizations with
        nothing in flight: the slots above the reserve go to anyone, the reserve only so."""
        if free > self.reserve:
            return min(free - self.reserve, self._batch), False
        return min(free, self._batch), True

    def _refilled(self, found: list[Claimed] | None) -> None:
        """After a batch's commit: starts what it leased, and wakes the loop when it leased
        nothing because it could not, or all it asked for (more may be due), or nothing in
        a window of a turn not finished (the rest of the ring may hold work). One that took
        some of what it asked for leaves the loop asleep: the next batch's refill walks on
        round the ring, and a loop claim now would mostly find the shares the refill just
        filled."""
        for delivery in found or ():
            self._start(delivery)
        if found is None or len(found) == self._refill_wanted:
            self.kick()  # not refilled, or more may be due: the loop claims
        elif not found and self._ring.unfinished:
            self.kick()  # nothing in its window: the loop walks on round the ring

    # --- one attempt ----------------------------------------------------------------

    def _start(self, delivery: Claimed) -> None:
        task = asyncio.create_task(self._attempt_safely(delivery))
        self._tasks.add(task)
        task.add_done_callback(self._finished)

    def _finished(self, task: asyncio.Task[None]) -> None:
        # The slot was refilled when the attempt's outcome was recorded (`claimed`); an
        # idle loop still looks for when to look again.
        self._tasks.discard(task)
        if not self._tasks:
            self.kick()

    async def _attempt_safely(self, delivery: Claimed) -> None:
        try:
            await self.attempt(delivery)
        except Exception:
            # The lease runs out and the delivery is tried again; never lose it, and never
            # count it against the endpoint.
            DELIVERIES_HELD.labels("error").inc()
            log.exception("dispatcher: attempt of delivery %s failed unexpectedly", delivery.id)
            self.kick()  # nothing was recorded, so nothing refilled its slot

    async def attempt(self, delivery: Claimed) -> None:
        """One attempt of `delivery` (attempting.Attempter), its outcome recorded."""
        await self._attempter.attempt(delivery)
