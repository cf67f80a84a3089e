"""The delivery path: claims due deliveries from the queue tables and attempts them.

A claim sets a lease (`FOR UPDATE SKIP LOCKED` on PostgreSQL, so workers on any number of
machines never take the same delivery at once). Each claimed delivery runs as its own task,
so one slow receiver holds up nobody else. Outcomes are written in batches (`records`), and
only by the worker whose lease it still is; a worker that dies mid-attempt, or before its
outcome is committed, simply lets its lease run out, and the delivery is attempted again
(at least once delivery).

Stopping (SIGTERM) claims nothing more: attempts under way finish (each within its 10 s
timeout) and are recorded, and claimed deliveries not yet started are given back at once
(their leases cleared and the other workers woken), so a stop takes one attempt's time at
most and loses no delivery.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Select, bindparam, func, or_, select, update
from sqlalchemy.ext.asyncio import AsyncEngine

from hangar.clock import Clock
from hangar.crypto import SecretBox, SecretUnreadable
from hangar.db.base import UTCDateTime
from hangar.db.engine import reader
from hangar.ids import new_id
from hangar.metrics import (
    ATTEMPTS,
    ATTEMPTS_IN_PROGRESS,
    DATABASE_ERRORS,
    DELIVERIES_FINISHED,
    FIRST_ATTEMPT_DELAY,
)
from hangar.webhooks.catalogue import EVENT_NAMES, TEST_PING
from hangar.webhooks.models import Delivery, Event, Subscription
from hangar.webhooks.outbox import wake_dispatchers
from hangar.webhooks.records import Outcome, Recorder
from hangar.webhooks.sender import AttemptResult, Sender
from hangar.webhooks.signing import envelope, headers

log = logging.getLogger("hangar.webhooks")

MAX_ATTEMPTS = 3
# The wait before attempt 2 and before attempt 3.
RETRY_WAITS = (timedelta(seconds=2), timedelta(seconds=8))
# Longer than the 10 s attempt timeout with room to record it; after this a delivery is
# considered abandoned by its worker and may be claimed again.
LEASE = timedelta(seconds=60)
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


def _due(now: Any) -> Any:
    return (
        (Delivery.status == "pending")
        & (Delivery.next_attempt_at <= now)
        & or_(Delivery.lease_until.is_(None), Delivery.lease_until <= now)
    )


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


class _Claiming:
    """The claim's statements, built once: constructing them and computing their cache keys
    at every claim was a visible share of the time between a commit and its delivery (G7).
    Bound parameters: `now` and `lease` (the new lease's end); `ids` for `read`."""

    def __init__(self, dialect: str, batch: int) -> None:
        now = bindparam("now", type_=UTCDateTime())
        due = (
            select(Delivery.id)
            .where(_due(now))
            .order_by(Delivery.next_attempt_at)
            .limit(batch)
            .with_for_update(skip_locked=True)
        )
        lease = (
            update(Delivery)
            .where(Delivery.id.in_(due.scalar_subquery()))
            .values(lease_until=bindparam("lease", type_=UTCDateTime()))
        )
        # PostgreSQL: one statement. SQLite (no data-modifying CTEs): `lease`, then `read`,
        # in one transaction.
        self.lease_and_read: Select[Any] | None = None
        if dialect == "postgresql":
            # One statement, so one round trip and its own transaction (autocommit): the
            # lease is taken in a data-modifying CTE and read with what the attempts need.
            leased = lease.returning(
                Delivery.id,
                Delivery.subscription_id,
                Delivery.event_id,
                Delivery.event_name,
                Delivery.attempts_made,
                Delivery.series_from,
                Delivery.next_attempt_at,
            ).cte("leased")
            self.lease_and_read = _with_what_attempts_need(leased)
        self.lease = lease.returning(Delivery.id)
        table = Delivery.__table__
        self.read = _with_what_attempts_need(table).where(
            table.c.id.in_(bindparam("ids", expanding=True))
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
        self._batch = batch
        self._slots = asyncio.Semaphore(concurrency)
        self._wake = asyncio.Event()
        self._tasks: set[asyncio.Task[None]] = set()
        self._recorder = Recorder(engine)
        self._claiming = _Claiming(engine.dialect.name, batch)

    # --- the loop -------------------------------------------------------------------

    def kick(self) -> None:
        """New work may be due: stop sleeping."""
        self._wake.set()

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            # Cleared before looking for work, so a kick that comes while we look (a new
            # event, a retry just scheduled) still cuts the coming sleep short.
            self._wake.clear()
            try:
                claimed = await self.claim()
                for index, delivery in enumerate(claimed):
                    if not await self._take_slot(stop):
                        await self._release(claimed[index:])
                        break
                    task = asyncio.create_task(self._attempt_in_slot(delivery))
                    self._tasks.add(task)
                    task.add_done_callback(self._tasks.discard)
                if len(claimed) == self._batch:
                    continue  # more may be waiting
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
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _take_slot(self, stop: asyncio.Event) -> bool:
        """A slot for one attempt; False, with no slot taken, once `stop` is set (before or
        while waiting for one): a stopping dispatcher starts no attempt."""
        if stop.is_set():
            return False
        if not self._slots.locked():
            await self._slots.acquire()  # free: returns at once
            return True
        acquiring = asyncio.ensure_future(self._slots.acquire())
        stopping = asyncio.ensure_future(stop.wait())
        await asyncio.wait((acquiring, stopping), return_when=asyncio.FIRST_COMPLETED)
        stopping.cancel()
        if not acquiring.done():
            # Semaphore.acquire, cancelled, hands a slot it was just given to the next waiter.
            acquiring.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await acquiring
            return False
        if stop.is_set():
            self._slots.release()
            return False
        return True

    async def _release(self, deliveries: Sequence[Claimed]) -> None:
        """Gives back claimed deliveries that were never attempted: due again at once, for
        any worker (woken by the commit), instead of when their leases would have run out."""
        try:
            async with self._engine.begin() as conn:
                await conn.execute(
                    update(Delivery)
                    .where(
                        Delivery.id == bindparam("r_id"),
                        Delivery.status == "pending",
                        Delivery.lease_until == bindparam("r_lease", type_=UTCDateTime()),
                    )
                    .values(lease_until=None),
                    [{"r_id": d.id, "r_lease": d.lease_until} for d in deliveries],
                )
                await wake_dispatchers(conn)
        except Exception:
            log.exception("dispatcher: could not release %d leases; they run out", len(deliveries))

    async def run_once(self) -> int:
        """Claims what is due now and attempts it all; for tests and `jobs`-style use."""
        claimed = await self.claim()
        await asyncio.gather(*(self._attempt_in_slot(d, acquired=False) for d in claimed))
        return len(claimed)

    async def _seconds_until_next_due(self) -> float:
        now = self._clock.now()
        async with self._engine.connect() as conn:
            soonest = await conn.scalar(
                select(
                    func.min(func.coalesce(Delivery.lease_until, Delivery.next_attempt_at))
                ).where(Delivery.status == "pending")
            )
        if soonest is None:
            return 30.0  # idle: a new event kicks us awake anyway
        if soonest.tzinfo is None:  # SQLite through an aggregate loses the column type
            soonest = soonest.replace(tzinfo=now.tzinfo)
        return min(max((soonest - now).total_seconds(), 0.0), 30.0)

    # --- claiming -------------------------------------------------------------------

    async def claim(self) -> list[Claimed]:
        now = self._clock.now()
        lease_until = now + self.lease
        times = {"now": now, "lease": lease_until}
        statements = self._claiming
        if statements.lease_and_read is not None:
            async with reader(self._engine).connect() as conn:
                rows = (await conn.execute(statements.lease_and_read, times)).all()
        else:
            async with self._engine.begin() as conn:
                ids = (await conn.scalars(statements.lease, times)).all()
                if not ids:
                    return []
                rows = (await conn.execute(statements.read, {"ids": ids})).all()
        return [Claimed(**row._mapping, lease_until=lease_until) for row in rows]

    # --- one attempt ----------------------------------------------------------------

    async def _attempt_in_slot(self, delivery: Claimed, *, acquired: bool = True) -> None:
        try:
            await self.attempt(delivery)
        except Exception:
            # The lease runs out and the delivery is tried again; never lose it.
            log.exception("dispatcher: attempt of delivery %s failed unexpectedly", delivery.id)
        finally:
            if acquired:
                self._slots.release()

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
            # The loop may be asleep until a lease runs out; the retry is due sooner.
            self.kick()
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
