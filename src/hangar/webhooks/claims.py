"""The claim: which due deliveries a dispatcher leases, by turn across subscriptions, under
each subscription's cap (`queue.MAX_IN_FLIGHT`) and within the dispatcher's free slots; and
what each claimed delivery carries to its attempt. The statements are built once per process
(`Claiming`); the dispatcher (hangar.webhooks.dispatcher) runs them."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Integer, Select, Uuid, any_, bindparam, func, select, true, update
from sqlalchemy.dialects.postgresql import ARRAY

from hangar.db.base import UTCDateTime
from hangar.db.reads import Read
from hangar.webhooks.models import Delivery, Event, Subscription
from hangar.webhooks.queue import (
    MAX_IN_FLIGHT,
    in_flight_count,
    is_due,
    is_pending,
    with_due_work,
)


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
    # The secret a rotation replaced, and until when it also signs (None: it does not).
    previous_secret_encrypted: str | None
    previous_secret_expires_at: datetime | None
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
            Subscription.previous_secret_encrypted,
            Subscription.previous_secret_expires_at,
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


class Claiming:
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
