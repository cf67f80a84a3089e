"""Retention of the delivery log: the batches that delete finished deliveries (with their
attempts and redeliveries), the events no delivery refers to and the records of Recover;
and of the secrets a rotation replaced, erased once their grace has ended.

- Finished deliveries are read from `ix_webhook_deliveries_finished` (completed_at, WHERE
  status <> 'pending') and locked FOR UPDATE SKIP LOCKED on PostgreSQL: a row that Redeliver
  holds is skipped, not waited for, and a pending row is never read, so never locked. Their
  attempts and redeliveries go first (through their delivery_id indexes), then they do. Each
  delete restates "still finished, still old": on SQLite the read comes before the write
  transaction begins, and a delivery redelivered in between is pending again.
- A previous secret goes (`PreviousSecrets`) once its grace has ended: it signs nothing any
  more, and a secret kept, sealed or not, is one more to leak. Until then its row holds it,
  as the dispatcher needs it; the screens and the API stop showing it at the grace's end.
- A recovery's record (`webhook_recoveries`, who asked for a Recover and when) goes when it
  is older than the window, oldest first (`ix_webhook_recoveries_requested_at`), as the log
  of what it queued does. Its deliveries name it without a foreign key, so nothing waits on
  them; a delivery still pending then (a month on) only loses the name of who asked.
- Events go when they are older than the window and no delivery refers to them (NOT EXISTS
  through `ix_webhook_deliveries_event_id`): those of the deliveries a batch deletes in the
  same transaction, by their ids; the others (events that no subscription received) read
  from `ix_events_created_at`, by keyset.

The statements are built here by name, so that tests hold each to its index.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import (
    ColumnElement,
    Delete,
    Select,
    Update,
    and_,
    delete,
    exists,
    or_,
    select,
    update,
)
from sqlalchemy.ext.asyncio import AsyncEngine

from hangar.kit.batches import Batch, Oldest, written
from hangar.webhooks.delivery.states import is_finished
from hangar.webhooks.models import Attempt, Delivery, Event, Recovery, Redelivery, Subscription

DELIVERIES = Delivery.__tablename__
ATTEMPTS = Attempt.__tablename__
REDELIVERIES = Redelivery.__tablename__
EVENTS = Event.__tablename__
# Not a table: the previous secrets erased from their subscriptions, counted as the rows are.
PREVIOUS_SECRETS = "webhook_previous_secrets"
RECOVERIES = Recovery.__tablename__
TABLES = (DELIVERIES, ATTEMPTS, REDELIVERIES, EVENTS, PREVIOUS_SECRETS, RECOVERIES)


# --- deliveries, with their attempts and redeliveries ------------------------------------


def finished_before(cutoff: datetime) -> ColumnElement[bool]:
    return and_(is_finished(), Delivery.completed_at < cutoff)


def finished_deliveries(
    cutoff: datetime, since: datetime | None, size: int
) -> Select[uuid.UUID, datetime | None, uuid.UUID]:
    """The oldest finished deliveries older than `cutoff` (from `since` on: where the last
    batch ended), locked for deletion; a row another transaction holds is skipped."""
    stmt = select(Delivery.id, Delivery.completed_at, Delivery.event_id).where(
        finished_before(cutoff)
    )
    if since is not None:
        stmt = stmt.where(Delivery.completed_at >= since)
    return (
        stmt.order_by(Delivery.completed_at)
        .limit(written(size))
        .with_for_update(skip_locked=True)  # SQLite: nothing (one writer at a time)
    )


def _still_finished(ids: Sequence[uuid.UUID], cutoff: datetime) -> Select[uuid.UUID]:
    return select(Delivery.id).where(Delivery.id.in_(ids), finished_before(cutoff))


# The ids are given twice to the two below, as a list and through the restated condition:
# the planner then reads each table through its delivery_id index.


def attempts_of(ids: Sequence[uuid.UUID], cutoff: datetime) -> Delete:
    still = _still_finished(ids, cutoff)
    return delete(Attempt).where(Attempt.delivery_id.in_(ids), Attempt.delivery_id.in_(still))


def redeliveries_of(ids: Sequence[uuid.UUID], cutoff: datetime) -> Delete:
    still = _still_finished(ids, cutoff)
    return delete(Redelivery).where(
        Redelivery.delivery_id.in_(ids), Redelivery.delivery_id.in_(still)
    )


def deliveries_of(ids: Sequence[uuid.UUID], cutoff: datetime) -> Delete:
    return delete(Delivery).where(Delivery.id.in_(ids), finished_before(cutoff))


UNREFERENCED = ~exists().where(Delivery.event_id == Event.id)


def events_of(ids: Sequence[uuid.UUID], cutoff: datetime) -> Delete:
    """The events of deleted deliveries that no other delivery refers to: found by their
    ids here, as the deliveries go, rather than read again from the events' index."""
    return delete(Event).where(Event.id.in_(ids), Event.created_at < cutoff, UNREFERENCED)


@dataclass
class Deliveries:
    cutoff: datetime
    size: int
    since: datetime | None = None  # where the last batch ended

    async def run(self, engine: AsyncEngine) -> Batch:
        async with engine.begin() as conn:
            found = finished_deliveries(self.cutoff, self.since, self.size)
            rows = (await conn.execute(found)).all()
            if not rows:
                return Batch({}, more=False)
            self.since = rows[-1].completed_at
            ids, events = [r.id for r in rows], list({r.event_id for r in rows})
            deleted = {
                ATTEMPTS: (await conn.execute(attempts_of(ids, self.cutoff))).rowcount,
                REDELIVERIES: (await conn.execute(redeliveries_of(ids, self.cutoff))).rowcount,
                DELIVERIES: (await conn.execute(deliveries_of(ids, self.cutoff))).rowcount,
                EVENTS: (await conn.execute(events_of(events, self.cutoff))).rowcount,
            }
        return Batch(deleted, more=len(rows) == self.size)


# --- events no delivery refers to --------------------------------------------------------


def old_events(
    cutoff: datetime, after: tuple[datetime, uuid.UUID] | None, size: int
) -> Select[uuid.UUID, datetime]:
    """The oldest events created before `cutoff`, past `after` (where the last batch ended)."""
    stmt = select(Event.id, Event.created_at).where(Event.created_at < cutoff)
    if after is not None:
        at, last = after
        stmt = stmt.where(
            Event.created_at >= at,  # where the index's range starts
            or_(Event.created_at > at, Event.id > last),
        )
    return stmt.order_by(Event.created_at, Event.id).limit(written(size))


@dataclass
class Events:
    """Events older than `cutoff` that no delivery refers to: those that no subscription
    received (the events of deliveries go with them), and any a batch of deliveries left.

    Read as a list of ids, then deleted by it, where a range of the index (as `Oldest`
    deletes) would do: given a range, PostgreSQL's planner, unsure how many rows it holds,
    may check "no delivery refers to it" by hashing every delivery rather than by the
    event_id index."""

    cutoff: datetime
    size: int
    after: tuple[datetime, uuid.UUID] | None = None  # where the last batch ended

    async def run(self, engine: AsyncEngine) -> Batch:
        async with engine.begin() as conn:
            rows = (await conn.execute(old_events(self.cutoff, self.after, self.size))).all()
            if not rows:
                return Batch({}, more=False)
            self.after = (rows[-1].created_at, rows[-1].id)
            gone = await conn.execute(events_of([r.id for r in rows], self.cutoff))
        return Batch({EVENTS: gone.rowcount}, more=len(rows) == self.size)


# --- the records of Recover ---------------------------------------------------------------


def recoveries(cutoff: datetime, size: int) -> Oldest:
    """Recoveries asked for before `cutoff`, oldest first, `size` at a time."""
    return Oldest(Recovery, Recovery.requested_at, cutoff, size)


# --- secrets a rotation replaced ---------------------------------------------------------


def expired_previous_secrets(now: datetime) -> Update:
    """Erases each previous secret whose grace has ended by `now`. The condition is tested on
    each row as it is written (under its lock on PostgreSQL; SQLite has one writer), so a
    rotation that commits first, with a grace of its own, is left alone."""
    return (
        update(Subscription)
        .where(Subscription.previous_secret_expires_at <= now)
        .values(previous_secret_encrypted=None, previous_secret_expires_at=None)
    )


@dataclass
class PreviousSecrets:
    """The previous secrets past their grace, all in one statement: a subscription holds one
    at most, and rotations are rare."""

    now: datetime

    async def run(self, engine: AsyncEngine) -> Batch:
        async with engine.begin() as conn:
            erased = (await conn.execute(expired_previous_secrets(self.now))).rowcount
        return Batch({PREVIOUS_SECRETS: erased}, more=False)
