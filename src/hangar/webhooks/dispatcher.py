"""The delivery path: claims due deliveries from the queue tables and attempts them.

No tenant waits for another. A claim takes only as many deliveries as the dispatcher has free
attempt slots, so nothing it leases waits behind a busy slot; it takes them by turn across
subscriptions (every subscription's oldest due delivery before anyone's second), and never
more than `queue.MAX_IN_FLIGHT` in flight to one subscription, counted from the live leases
of every worker. So one endpoint's backlog, however slow, holds at most that many slots, and
another subscription's due delivery goes out at the next claim: at once, when a slot is
free. A slow endpoint is served more slowly, never dropped or disabled for being slow.

Claims happen in two places: the loop claims when woken (a new event's NOTIFY, a retry
coming due, an idle dispatcher's timer), and each batch of recorded outcomes claims, in its
own transaction, for the slots it frees (records.Refill): so a slot is refilled as its
attempt's outcome is committed, with no claim of its own.

A claim sets a lease (`SKIP LOCKED` on PostgreSQL, so workers on any number of machines never
take the same delivery at once; see `_Claiming` for how they share the caps). Each claimed
delivery runs as its own task. Outcomes are written in batches (`records`), and only by the
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
import logging
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import asyncpg
from sqlalchemy import Integer, Select, Uuid, any_, bindparam, func, select, true, update
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from hangar.db.base import UTCDateTime
from hangar.db.reads import Read, pg_transaction, reader
from hangar.foundation.clock import Clock
from hangar.foundation.crypto import SecretBox, SecretUnreadable
from hangar.foundation.ids import new_id
from hangar.foundation.metrics import (
    ATTEMPTS,
    ATTEMPTS_IN_PROGRESS,
    DATABASE_ERRORS,
    DELIVERIES_FINISHED,
    FIRST_ATTEMPT_DELAY,
)
from hangar.webhooks.catalogue import EVENT_NAMES, TEST_PING
from hangar.webhooks.models import Delivery, Event, Subscription
from hangar.webhooks.queue import (
    LEASE,
    MAX_IN_FLIGHT,
    in_flight_count,
    is_due,
    is_pending,
    with_due_work,
)
from hangar.webhooks.records import Outcome, Recorder
from hangar.webhooks.sender import AttemptResult, Sender
from hangar.webhooks.signing import envelope, headers

log = logging.getLogger("hangar.webhooks")

MAX_ATTEMPTS = 3
# The wait before attempt 2 and before attempt 3.
RETRY_WAITS = (timedelta(seconds=2), timedelta(seconds=8))
# The longest an idle dispatcher sleeps without being kicked.
IDLE_SECONDS = 30.0
# The metrics' `event` label: a known name, or "other" (the label's values stay bounded).
_EVENT_LABELS = frozenset((*EVENT_NAMES, TEST_PING))


def event_label(name: str) -> str:
    return name if name in _EVENT_LABELS else "other"


@dataclass(frozen=True)
class Claimed:
    """A leased delivery with everything its attempt needs, read in the claiming transaction."""

    id: uuid.UUID
    subscription_id: uuid.UUID
    event_id: uuid.UUID
    event_name: str
    attempts_made: int
    series_from: int  # attempts_made when this series (the first, or a redelivery) began
    lease_until: datetime
    url: str
    secret_encrypted: str
    enabled: bool
    deleted: bool
    data: str
    event_at: datetime  # when the event was recorded: the first attempt's delay is from then


def _with_what_attempts_need(deliveries: Any) -> Select[Any]:
    """The claimed `deliveries` (a table or CTE of delivery rows) with their URL, secret and
    event data: one read for the whole batch, not one per attempt. Each column is named as
    the field of `Claimed` it fills."""
    return (
        select(
            deliveries.c.id,
            deliveries.c.subscription_id,
            deliveries.c.event_id,
            deliveries.c.event_name,
            deliveries.c.attempts_made,
            deliveries.c.series_from,
            Subscription.url,
            Subscription.secret_encrypted,
            Subscription.enabled,
            Subscription.deleted_at.is_not(None).label("deleted"),
            Event.data,
            Event.created_at.label("event_at"),
        )
        .select_from(deliveries)
        .join(Event, Event.id == deliveries.c.event_id)
        .join(Subscription, Subscription.id == deliveries.c.subscription_id)
        .order_by(deliveries.c.next_attempt_at)
    )


def _turns(room: Any, now: Any, dialect: str) -> Any:
    """For each subscription of `room` (subscription_id, busy), its oldest due deliveries,
    at most MAX_IN_FLIGHT of them, each with its turn: the subscription's attempts in flight
    plus its place in the subscription's queue. Claiming by turn is round robin: every
    subscription's first waiting delivery before anyone's second, and one with attempts in
    flight after those without."""
    d = Delivery.__table__.alias("d")
    oldest = (
        select(d.c.id, d.c.next_attempt_at, d.c.lease_until)
        .where(d.c.subscription_id == room.c.subscription_id, is_due(now, d))
        # The queue index's own order (the subscription is one value here): read in order,
        # four rows, where the planner, misjudging how many are due, would otherwise sort
        # every due delivery found through the other index.
        .order_by(d.c.subscription_id, d.c.next_attempt_at, d.c.id)
        .limit(MAX_IN_FLIGHT)
    )
    candidates: Any
    if dialect == "postgresql":
        candidates = oldest.lateral("candidate")
        source = room.join(candidates, true())
    else:
        # SQLite has no LATERAL: the same rows, as a correlated IN on the primary key.
        candidates = Delivery.__table__.alias("candidate")
        source = room.join(
            candidates, candidates.c.id.in_(oldest.with_only_columns(d.c.id).scalar_subquery())
        )
    place = func.row_number().over(
        partition_by=room.c.subscription_id,
        order_by=(candidates.c.next_attempt_at, candidates.c.id),
    )
    return (
        select(
            candidates.c.id,
            candidates.c.next_attempt_at,
            candidates.c.lease_until,  # as read: a lease that ran out, or none
            (room.c.busy + place).label("turn"),
        )
        .select_from(source)
        .cte("turns")
    )


class _Claiming:
    """The claim's statements, built once: constructing them and computing their cache keys
    at every claim was a visible share of the time between a commit and its delivery (G7).
    Bound parameters: `now`, `lease` (the new lease's end) and `slots` (how many to take);
    `subscriptions` for PostgreSQL's `lease_and_read`, `ids` for SQLite's `read`. PostgreSQL's
    are `Read`s, run on asyncpg's own connection: through SQLAlchemy, each statement cost the
    worker more than the database did.

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
        now = bindparam("now", type_=UTCDateTime())
        slots = bindparam("slots", type_=Integer())
        table = Delivery.__table__
        self.lock: Read[dict[str, Any]] | None = None
        if dialect == "postgresql":
            waiting = with_due_work(now)
            lock = (
                select(Subscription.id)
                .join(waiting, waiting.c.subscription_id == Subscription.id)
                .where(waiting.c.head.is_not(None), waiting.c.busy < MAX_IN_FLIGHT)
                .order_by(waiting.c.busy, waiting.c.head)
                .limit(slots)
                .with_for_update(of=Subscription, key_share=True, skip_locked=True)
            )
            self.lock = Read(lock)
            their_ids = bindparam("subscriptions", type_=ARRAY(Uuid()))
            room = (
                select(
                    Subscription.id.label("subscription_id"),
                    in_flight_count(Subscription.id, now).label("busy"),
                )
                .where(Subscription.id == any_(their_ids))
                .cte("room")
            )
        else:
            room = with_due_work(now)
        turns = _turns(room, now, dialect)
        chosen = (
            select(turns.c.id, turns.c.lease_until)
            .where(turns.c.turn <= MAX_IN_FLIGHT)
            .order_by(turns.c.turn, turns.c.next_attempt_at)
            .limit(slots)
        )
        leasing = update(Delivery).values(lease_until=bindparam("lease", type_=UTCDateTime()))
        if dialect == "postgresql":
            # The few chosen, worked out once (MATERIALIZED), then each locked by primary key
            # without waiting (a row a late recorder holds is left for the next claim), and
            # only if its lease is still the one read: the lease changes whenever a delivery
            # does (a worker settling it clears it, a claim sets it), so an unchanged lease is
            # a delivery still due. Written so, the claim's plan does not hang on how many
            # deliveries the statistics believe are due: a planner that believed few were
            # (statistics taken when the queue was empty) drove the old form, `id IN (...)
            # AND due`, from every due delivery, working the choice out again for each: a
            # claim of 50 among 5,000 due took 90 s.
            picked = chosen.cte("chosen").prefix_with("MATERIALIZED")
            locked = (
                select(table.c.id)
                .join(picked, picked.c.id == table.c.id)
                .where(table.c.lease_until.is_not_distinct_from(picked.c.lease_until))
                .with_for_update(of=table, skip_locked=True)
                .cte("locked")
                .prefix_with("MATERIALIZED")
            )
            lease = leasing.where(Delivery.id == locked.c.id)
        else:
            lease = leasing.where(
                Delivery.id.in_(chosen.with_only_columns(turns.c.id)), is_due(now)
            )
        self.lease_and_read: Read[dict[str, Any]] | None = None
        if dialect == "postgresql":
            leased = lease.returning(
                Delivery.id,
                Delivery.subscription_id,
                Delivery.event_id,
                Delivery.event_name,
                Delivery.attempts_made,
                Delivery.series_from,
                Delivery.next_attempt_at,
            ).cte("leased")
            # A SELECT whose CTE takes the leases: `Read` runs it on asyncpg's connection.
            self.lease_and_read = Read(_with_what_attempts_need(leased))
        self.lease = lease.returning(Delivery.id)
        self.read = _with_what_attempts_need(table).where(
            table.c.id.in_(bindparam("ids", expanding=True))
        )
        # When something not claimable now may become so: the soonest retry wait to end, or
        # the soonest live lease to run out (one that has run out is claimable already, or
        # waits under its subscription's cap for an attempt that ends).
        pending = is_pending()
        self.next_change = select(
            select(func.min(Delivery.next_attempt_at))
            .where(pending, Delivery.next_attempt_at > now)
            .scalar_subquery()
            .label("retry"),
            select(func.min(Delivery.lease_until))
            .where(pending, Delivery.lease_until > now)
            .scalar_subquery()
            .label("lease"),
        )


class Dispatcher:
    def __init__(
        self,
        engine: AsyncEngine,
        clock: Clock,
        sender: Sender,
        box: SecretBox,
        *,
        batch: int = 50,
        concurrency: int = 100,
        lease: timedelta = LEASE,
    ) -> None:
        self._engine = engine
        # How long a claim holds its deliveries. Tests of a worker killed mid-run shorten it
        # (it must still outlast an attempt and its recording, or two workers deliver twice).
        self.lease = lease
        self._clock = clock
        self._sender = sender
        # Decrypting a secret (Fernet) at every attempt repeats the same work for every
        # delivery to a subscription; the secret never changes (no rotation in place: a new
        # one means a new subscription, with a new sealed value).
        self._open_secret = functools.lru_cache(maxsize=1024)(box.open)
        self._batch = batch  # the most one claim takes
        # Attempt slots: attempts under way at once. Tests of several workers shrink it, so
        # that no one worker can take all the work.
        self.concurrency = concurrency
        self._wake = asyncio.Event()
        self._tasks: set[asyncio.Task[None]] = set()
        self._recorder: Recorder[Claimed] = Recorder(engine)
        # Set once stopping: batches then refill nothing (`slots_after`).
        self._stopping = False
        self._refill_wanted = 0  # what the batch being written asked to claim
        self._claiming = _Claiming(engine.dialect.name)

    # --- the loop -------------------------------------------------------------------

    def kick(self) -> None:
        """New work may be due, or a slot (or a subscription's room) came free: stop
        sleeping."""
        self._wake.set()

    async def run(self, stop: asyncio.Event) -> None:
        self._stopping = False
        self._recorder.refill = self
        try:
            await self._loop(stop)
        finally:
            self._stopping = True  # a batch still being written claims nothing more
            await asyncio.gather(*self._tasks, return_exceptions=True)
            self._recorder.refill = None

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
                want = min(self.concurrency - len(self._tasks), self._batch)
                if want > 0:
                    claimed = await self.claim(want)
                    for delivery in claimed:
                        self._start(delivery)
                    if len(claimed) == want:
                        continue  # more may be due; with no slot left, the next turn sleeps
                # With attempts under way, each that ends wakes the loop, and so does each
                # retry this dispatcher scheduled when it is due: only an idle loop asks the
                # database when to look again (for other workers' retries and dead leases).
                if not self._tasks:
                    wait = await self._seconds_until_next_due()
            except Exception:
                DATABASE_ERRORS.labels("dispatcher").inc()  # claiming is all database work
                log.exception("dispatcher: claiming failed; retrying shortly")
                wait = 5.0
            sleepers = [
                asyncio.ensure_future(self._wake.wait()),
                asyncio.ensure_future(stop.wait()),
            ]
            await asyncio.wait(sleepers, timeout=wait, return_when=asyncio.FIRST_COMPLETED)
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

    async def claim(self, slots: int | None = None) -> list[Claimed]:
        """Leases up to `slots` due deliveries (by default one claim's worth), by turn across
        subscriptions and never past a subscription's cap of attempts in flight (see
        `_Claiming`), in a transaction of its own."""
        slots = self._batch if slots is None else slots
        if self._claiming.lock is not None:
            async with pg_transaction(self._engine) as pg:
                return await self.claim_on(pg, slots)
        async with self._engine.begin() as conn:
            return await self.claim_on(conn, slots)

    async def claim_on(
        self, conn: AsyncConnection | asyncpg.Connection, slots: int
    ) -> list[Claimed]:
        """The claim, in the transaction `conn` is in (SQLAlchemy's, or asyncpg's own): also
        how a batch of outcomes refills the slots it frees (records.Refill)."""
        now = self._clock.now()
        lease_until = now + self.lease
        times = {"now": now, "lease": lease_until, "slots": slots}
        statements = self._claiming
        if statements.lock is not None and statements.lease_and_read is not None:
            pg = conn
            if isinstance(pg, AsyncConnection):
                pg = (await pg.get_raw_connection()).driver_connection
            locked = [row["id"] for row in await statements.lock.rows(pg, times)]
            if not locked:
                return []
            rows = await statements.lease_and_read.rows(pg, {**times, "subscriptions": locked})
            return [Claimed(**row, lease_until=lease_until) for row in rows]
        assert isinstance(conn, AsyncConnection)  # SQLite's is always SQLAlchemy's
        ids = (await conn.scalars(statements.lease, times)).all()
        if not ids:
            return []
        found = (await conn.execute(statements.read, {"ids": ids})).all()
        return [Claimed(**row._mapping, lease_until=lease_until) for row in found]

    # --- refilling the slots of recorded outcomes (the rest of records.Refill) ---------

    def slots_after(self, finishing: int) -> int:
        if self._stopping:
            return 0
        self._refill_wanted = min(self.concurrency - len(self._tasks) + finishing, self._batch)
        return self._refill_wanted

    def refilled(self, found: list[Claimed] | None) -> None:
        for delivery in found or ():
            self._start(delivery)
        if found is None or len(found) == self._refill_wanted:
            self.kick()  # not refilled, or more may be due: the loop claims

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
            # The lease runs out and the delivery is tried again; never lose it.
            log.exception("dispatcher: attempt of delivery %s failed unexpectedly", delivery.id)
            self.kick()  # nothing was recorded, so nothing refilled its slot

    async def attempt(self, delivery: Claimed) -> None:
        is_test = delivery.event_name == TEST_PING
        if delivery.deleted or (not delivery.enabled and not is_test):
            # Disabled: skipped, and never replayed when the subscription is enabled again.
            now = self._clock.now()
            skipped = await self._recorder.write(
                Outcome(
                    delivery_id=delivery.id,
                    subscription_id=delivery.subscription_id,
                    lease_until=delivery.lease_until,
                    status="skipped",
                    attempts_made=delivery.attempts_made,
                    next_attempt_at=None,
                    completed_at=now,
                    attempt=None,
                    counts=None,
                )
            )
            if skipped:
                DELIVERIES_FINISHED.labels(event_label(delivery.event_name), "skipped").inc()
            return
        started_at = self._clock.now()
        if delivery.attempts_made == 0:
            FIRST_ATTEMPT_DELAY.observe(max((started_at - delivery.event_at).total_seconds(), 0))
        try:
            secret = self._open_secret(delivery.secret_encrypted)
        except SecretUnreadable:
            # A failed attempt, not an exception: left to its lease, it would loop forever.
            error = "the signing secret cannot be decrypted: was HANGAR_SECRET_KEY changed?"
            result = AttemptResult(
                status_code=None,
                error=error,
                response_body=None,
                duration_ms=0,
                kind="secret_unreadable",
            )
        else:
            body = envelope(delivery.event_name, started_at, delivery.data)
            with ATTEMPTS_IN_PROGRESS.track_inprogress():
                result = await self._sender.post(
                    delivery.url, headers(delivery.event_name, str(delivery.id), secret, body), body
                )
        ATTEMPTS.labels(event_label(delivery.event_name), result.outcome).inc()
        await self._record(delivery, started_at, result, counts=not is_test)

    async def _record(
        self, delivery: Claimed, started_at: datetime, result: AttemptResult, *, counts: bool
    ) -> None:
        number = delivery.attempts_made + 1
        # A redelivery is a new series: its own 3 attempts and waits, numbered on from the last.
        in_series = number - delivery.series_from
        now = self._clock.now()
        retry = not result.succeeded and in_series < MAX_ATTEMPTS
        outcome = Outcome(
            delivery_id=delivery.id,
            subscription_id=delivery.subscription_id,
            lease_until=delivery.lease_until,
            status="succeeded" if result.succeeded else "pending" if retry else "failed",
            attempts_made=number,
            next_attempt_at=now + RETRY_WAITS[in_series - 1] if retry else None,
            completed_at=None if retry else now,
            attempt={
                "id": new_id(),
                "delivery_id": delivery.id,
                "number": number,
                "started_at": started_at,
                "duration_ms": result.duration_ms,
                "status_code": result.status_code,
                "error": result.error,
                "response_body": result.response_body,
                "outcome": result.kind,
                "outcome_detail": result.detail,
                "request_headers": _pairs(result.request_headers),
                "response_reason": result.reason,
                "response_headers": _pairs(result.response_headers),
            },
            counts=None if not counts or retry else "success" if result.succeeded else "failure",
        )
        recorded = await self._recorder.write(outcome)
        _log_attempt(delivery, number, "retrying" if retry else outcome.status, result)
        if not recorded:
            return  # the lease was lost: another worker's outcome counts
        if retry:
            # Wake the loop when the retry is due: a busy loop does not look for the next
            # due time in the database (each attempt that ends wakes it anyway).
            # A few ms late rather than early: early, the claim would find it not yet due.
            wait = RETRY_WAITS[in_series - 1].total_seconds() + 0.005
            asyncio.get_running_loop().call_later(wait, self.kick)
        else:
            DELIVERIES_FINISHED.labels(event_label(delivery.event_name), outcome.status).inc()


def _pairs(headers: list[tuple[str, str]] | None) -> list[list[str]] | None:
    return None if headers is None else [[name, value] for name, value in headers]


def _log_attempt(delivery: Claimed, number: int, outcome: str, result: AttemptResult) -> None:
    """One record per attempt, with its ids as fields (JSON logs). Never the URL (its user
    information and query may be credentials), the secret, the signature or any body."""
    log.info(
        "delivery %s attempt %d: %s (%s) in %d ms",
        delivery.id,
        number,
        outcome,
        result.status_code if result.error is None else result.error,
        result.duration_ms,
        extra={
            "delivery_id": str(delivery.id),
            "event_id": str(delivery.event_id),
            "event": delivery.event_name,
            "subscription_id": str(delivery.subscription_id),
            "attempt": number,
            "outcome": outcome,
            "status": result.status_code,
            "error": result.error,
            "duration_ms": result.duration_ms,
        },
    )
