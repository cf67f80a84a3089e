"""The claim: which due deliveries a dispatcher leases, by turn across subscriptions, under
each subscription's cap (`queue.MAX_IN_FLIGHT`) and within the dispatcher's free slots; and
what each claimed delivery carries to its attempt. The statements are built once per process
(`Claiming`); the dispatcher (hangar.webhooks.delivery.dispatcher) runs them."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import asyncpg
from sqlalchemy import (
    Boolean,
    Integer,
    Select,
    Uuid,
    and_,
    any_,
    bindparam,
    func,
    or_,
    select,
    true,
    update,
)
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.ext.asyncio import AsyncConnection

from hangar.db.base import UTCDateTime
from hangar.db.reads import Read
from hangar.webhooks.delivery.ring import Ring, Turn
from hangar.webhooks.delivery.states import (
    DESTINATION_MAX_IN_FLIGHT,
    MAX_IN_FLIGHT,
    ORG_MAX_IN_FLIGHT,
    WALK_FROM_START,
    in_flight_count,
    is_due,
    is_in_flight,
    is_pending,
    subscription_cap,
    walk_of_pending,
    with_due_work,
)
from hangar.webhooks.events.catalogue import TEST_PING
from hangar.webhooks.models import Delivery, Event, Subscription


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


def _with_what_attempts_need(deliveries: Any) -> Select[Any]:
    """The claimed `deliveries` (a table or CTE of delivery rows) with their URL, secret and
    event data: one read for the whole batch, not one per attempt. Each column is named as
    the field of `Claimed` it fills."""
    return (
        select(
            deliveries.c.id,
            deliveries.c.org_id,
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
            (Event.name == TEST_PING).label("is_test"),
        )
        .select_from(deliveries)
        .join(Event, Event.id == deliveries.c.event_id)
        .join(Subscription, Subscription.id == deliveries.c.subscription_id)
        .order_by(deliveries.c.next_attempt_at)
    )


def _census(now: Any) -> tuple[Any, Any]:
    """The attempts in flight (live leases, any worker's) counted by organization and by
    destination: a few hundred rows at most, found through the index of leased deliveries."""
    f = Delivery.__table__.alias("flying")
    s = Subscription.__table__.alias("flying_to")
    flying = (
        select(f.c.org_id, s.c.destination)
        .select_from(f.join(s, s.c.id == f.c.subscription_id))
        .where(is_in_flight(now, f))
        .cte("flying")
    )
    by_org = (
        select(flying.c.org_id, func.count().label("n"))
        .group_by(flying.c.org_id)
        .cte("flying_by_org")
    )
    by_destination = (
        select(flying.c.destination, func.count().label("n"))
        .group_by(flying.c.destination)
        .cte("flying_by_destination")
    )
    return by_org, by_destination


def _shares(subscriptions: Any, census: tuple[Any, Any]) -> tuple[Any, Any, Any]:
    """`subscriptions` (rows with `org_id` and `destination`) joined to the census: (the
    join, its organization's attempts in flight, its destination's)."""
    by_org, by_destination = census
    joined = subscriptions.outerjoin(by_org, by_org.c.org_id == subscriptions.c.org_id)
    joined = joined.outerjoin(
        by_destination, by_destination.c.destination == subscriptions.c.destination
    )
    return joined, func.coalesce(by_org.c.n, 0), func.coalesce(by_destination.c.n, 0)


def _has_room(org_busy: Any, destination_busy: Any, reserve_only: Any) -> Any:
    """Room under the organization's and the destination's shares; with `reserve_only`, only
    an organization with nothing in flight (the dispatcher's last slots are kept for those)."""
    return and_(
        org_busy < ORG_MAX_IN_FLIGHT,
        destination_busy < DESTINATION_MAX_IN_FLIGHT,
        or_(~reserve_only, org_busy == 0),
    )


def _turns(room: Any, now: Any, dialect: str) -> Any:
    """For each subscription of `room` (subscription_id, busy, cap, org_id, destination,
    org_busy, destination_busy), its oldest due deliveries, at most MAX_IN_FLIGHT of them,
    each with its turn in its subscription (its attempts in flight plus its place in the
    subscription's queue), those that fit under the subscription's cap then ranked in their
    organization and in their destination the same way. Claiming by turn is round robin:
    every organization's first waiting delivery before anyone's second, every subscription's
    before anyone's second within an organization, and those with attempts in flight after
    those without."""
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
    turns = (
        select(
            candidates.c.id,
            candidates.c.next_attempt_at,
            candidates.c.lease_until,  # as read: a lease that ran out, or none
            room.c.cap,
            room.c.org_id,
            room.c.destination,
            room.c.org_busy,
            room.c.destination_busy,
            (room.c.busy + place).label("turn"),
        )
        .select_from(source)
        .cte("turns")
    )
    order = (turns.c.turn, turns.c.next_attempt_at, turns.c.id)
    in_org = func.row_number().over(partition_by=turns.c.org_id, order_by=order)
    in_destination = func.row_number().over(partition_by=turns.c.destination, order_by=order)
    return (
        select(
            turns.c.id,
            turns.c.next_attempt_at,
            turns.c.lease_until,
            turns.c.turn,
            turns.c.org_busy,
            (turns.c.org_busy + in_org).label("org_turn"),
            (turns.c.destination_busy + in_destination).label("destination_turn"),
        )
        .where(turns.c.turn <= turns.c.cap)
        .cte("shares")
    )


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
        now = bindparam("now", type_=UTCDateTime())
        slots = bindparam("slots", type_=Integer())
        reserve_only = bindparam("reserve_only", type_=Boolean())
        table = Delivery.__table__
        subscriptions = Subscription.__table__
        cap = subscription_cap(subscriptions)
        # The window's subscriptions (`walked`), found by `walk` (`after`, `window`).
        self.walk: Read[dict[str, Any]] = Read(walk_of_pending())
        walked = (
            bindparam("walked", type_=ARRAY(Uuid()))
            if dialect == "postgresql"
            else bindparam("walked", expanding=True)
        )
        self.lock: Read[dict[str, Any]] | None = None
        if dialect == "postgresql":
            waiting = with_due_work(now, dialect, walked)
            # The census joined to the subscriptions walked, not to the whole table.
            joined, org_busy, destination_busy = _shares(waiting, _census(now))
            # Which subscriptions, in turn across organizations; ranked apart from the lock
            # (PostgreSQL locks no row of a query with window functions).
            ranked = (
                select(
                    waiting.c.subscription_id.label("id"),
                    waiting.c.busy,
                    waiting.c.head,
                    (
                        org_busy
                        + func.row_number().over(
                            partition_by=waiting.c.org_id,
                            order_by=(waiting.c.busy, waiting.c.head),
                        )
                    ).label("org_turn"),
                )
                .select_from(joined)
                .where(
                    waiting.c.head.is_not(None),
                    waiting.c.busy < waiting.c.cap,
                    _has_room(org_busy, destination_busy, reserve_only),
                )
                .cte("ranked")
            )
            lock = (
                select(subscriptions.c.id)
                .join(ranked, ranked.c.id == subscriptions.c.id)
                .order_by(ranked.c.org_turn, ranked.c.busy, ranked.c.head)
                .limit(slots)
                .with_for_update(of=subscriptions, key_share=True, skip_locked=True)
            )
            self.lock = Read(lock)
            their_ids = bindparam("subscriptions", type_=ARRAY(Uuid()))
            joined, org_busy, destination_busy = _shares(subscriptions, _census(now))
            room = (
                select(
                    subscriptions.c.id.label("subscription_id"),
                    in_flight_count(subscriptions.c.id, now).label("busy"),
                    cap.label("cap"),
                    subscriptions.c.org_id,
                    subscriptions.c.destination,
                    org_busy.label("org_busy"),
                    destination_busy.label("destination_busy"),
                )
                .select_from(joined)
                .where(subscriptions.c.id == any_(their_ids))
                .cte("room")
            )
        else:
            waiting = with_due_work(now, dialect, walked)
            joined, org_busy, destination_busy = _shares(waiting, _census(now))
            room = (
                select(
                    waiting.c.subscription_id,
                    waiting.c.busy,
                    waiting.c.cap,
                    waiting.c.org_id,
                    waiting.c.destination,
                    org_busy.label("org_busy"),
                    destination_busy.label("destination_busy"),
                )
                .select_from(joined)
                .where(waiting.c.head.is_not(None))
                .cte("room")
            )
        shares = _turns(room, now, dialect)
        chosen = (
            select(shares.c.id, shares.c.lease_until)
            .where(
                shares.c.org_turn <= ORG_MAX_IN_FLIGHT,
                shares.c.destination_turn <= DESTINATION_MAX_IN_FLIGHT,
                # The reserve: one delivery of an organization with nothing in flight.
                or_(~reserve_only, and_(shares.c.org_busy == 0, shares.c.org_turn == 1)),
            )
            .order_by(shares.c.org_turn, shares.c.turn, shares.c.next_attempt_at)
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
                Delivery.id.in_(chosen.with_only_columns(shares.c.id)), is_due(now)
            )
        self.lease_and_read: Read[dict[str, Any]] | None = None
        if dialect == "postgresql":
            leased = lease.returning(
                Delivery.id,
                Delivery.org_id,
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

    async def take(
        self,
        conn: AsyncConnection | asyncpg.Connection,
        ring: Ring,
        slots: int,
        times: dict[str, object],
    ) -> list[dict[str, Any]]:
        """Leases up to `slots` due deliveries, a window of `ring` at a time, in the
        transaction `conn` is in (asyncpg's own on PostgreSQL): the rows of `Claimed` but its
        lease."""
        turn = ring.turn or Turn(ring)
        taken: list[dict[str, Any]] = []
        for _ in range(ring.windows_per_claim):
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
