"""What the delivery queue's states mean, in one place: the dispatcher claims by them, and a
subscription's health (what waits, what is in flight) is counted by them.

A pending delivery is either *in flight* (leased: a worker is attempting it, or died while
it did and the lease has not run out) or *waiting*: due now, or due later (a retry's wait).
Each subscription has at most `MAX_IN_FLIGHT` in flight at once (one while it times out),
each organization at most `ORG_MAX_IN_FLIGHT` and each destination at most
`DESTINATION_MAX_IN_FLIGHT` (`DESTINATION_MAX_IN_FLIGHT_TIMING_OUT` to its subscriptions that
time out), counted from the live leases in the database, so the bounds hold
across every worker on every machine.
"""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Integer,
    Select,
    String,
    Uuid,
    any_,
    bindparam,
    case,
    func,
    literal,
    literal_column,
    or_,
    select,
    true,
)

from hangar.webhooks.models import Delivery, Subscription

# Attempts in flight at once to one subscription, across all workers. Ten keeps a small
# receiver (a few threads or processes behind it) from being sent a worker's 100 POSTs at
# once, and serves far more than a flight school produces: 60 a minute to an endpoint that
# takes the whole 10 s timeout, 600 a minute at 1 s, about 330 a second at 10 ms (bench G6's
# one-subscription row), where an organization records about 10 events a minute. (What slow
# endpoints may hold of a worker's slots is bounded by the shares below, not by this cap.)
# Fewer would protect more (4: 25 slow endpoints per worker) but cost throughput wherever a few
# busy subscriptions carry the load: each slot waits for its outcome to be recorded before the
# claim that refills it, and bench G6 (10 subscriptions) measured 0.62-0.71 of a bare client
# with 4, 0.76-0.81 with 8, 0.81-0.86 with 10 (bench/RESULTS.md, 2026-11-26).
MAX_IN_FLIGHT = 10
# A subscription whose attempts time out holds a slot for the whole 10 s of each: until one
# is answered again it has one attempt in flight at a time, a probe, and its backlog waits
# for it rather than taking ten slots of every worker.
MAX_IN_FLIGHT_TIMING_OUT = 1
# Shares of the attempts in flight across all workers: at most this many for one
# organization, however many subscriptions it has, and at most this many to one destination
# (host and port), however many organizations deliver there. Each is as many as a busy
# organization's ten subscriptions at their cap (bench G6), so neither costs a healthy
# organization throughput; what they stop is one organization's endpoints that all time
# out (or one partner's, shared by many organizations) taking every slot of every worker.
ORG_MAX_IN_FLIGHT = 100
DESTINATION_MAX_IN_FLIGHT = 100
# The subscriptions timing out at one destination, together, across organizations: one probe
# each would still be a hundred attempts (one partner's endpoint, shared by 200
# organizations, bench G13b (b)) that time out together every 10 s and are followed by as
# many new TLS connections, all on the event loop that also serves every healthy
# organization. A few at a time keep that burst small; each subscription still gets its
# probe in turn, and one that answers again has its full cap at once. Subscriptions that
# answer at the same destination are not counted in it.
DESTINATION_MAX_IN_FLIGHT_TIMING_OUT = 10

# Longer than the 10 s attempt timeout with room to record it; after this a delivery is
# considered abandoned by its worker and may be claimed again.
LEASE = timedelta(seconds=60)


# Written into the SQL, not bound: only then can the planners use the partial indexes on
# pending deliveries (a parameter's value is unknown when a statement is prepared).
PENDING = literal_column("'pending'", String)


def is_pending(table: Any = Delivery.__table__) -> ColumnElement[bool]:
    status: ColumnElement[str] = table.c.status
    return status == PENDING


def is_finished(table: Any = Delivery.__table__) -> ColumnElement[bool]:
    """Succeeded, failed or skipped: what the delivery log keeps and retention prunes. Inlined
    like `is_pending`, so the partial index on finished deliveries is usable."""
    status: ColumnElement[str] = table.c.status
    return status != PENDING


def is_due(now: Any, table: Any = Delivery.__table__) -> ColumnElement[bool]:
    """Pending, due by `now`, and leased by nobody (or by a worker whose lease ran out)."""
    c = table.c
    due: ColumnElement[bool] = c.next_attempt_at <= now
    return is_pending(table) & due & or_(c.lease_until.is_(None), c.lease_until <= now)


def is_in_flight(now: Any, table: Any = Delivery.__table__) -> ColumnElement[bool]:
    """Pending and leased: a worker holds it until its lease runs out (at `now` or later)."""
    leased: ColumnElement[bool] = table.c.lease_until > now
    return is_pending(table) & leased


def subscription_cap(subscriptions: Any = Subscription.__table__) -> Any:
    """A subscription's cap of attempts in flight: one while its attempts time out."""
    return case(
        (subscriptions.c.timing_out_since.is_not(None), MAX_IN_FLIGHT_TIMING_OUT),
        else_=MAX_IN_FLIGHT,
    )


def in_flight_count(subscription_id: Any, now: Any) -> Any:
    """How many attempts the subscription has in flight (live leases, any worker's)."""
    f = Delivery.__table__.alias("in_flight")
    return (
        select(func.count())
        .select_from(f)
        .where(f.c.subscription_id == subscription_id, is_in_flight(now, f))
        .scalar_subquery()
    )


def _next_pending(q: Any, previous: Any) -> Any:
    """The first subscription, after `previous` (None: from the start), with a pending
    delivery: one probe of the queue index, however long a backlog it steps over."""
    step = select(q.c.subscription_id).where(is_pending(q))
    if previous is not None:
        step = step.where(q.c.subscription_id > previous)
    # The queue index's own order: ordered by subscription alone, the planner may take the
    # index of every delivery instead, and step over each subscription's finished deliveries
    # (millions, within retention) to find the next pending one.
    return step.order_by(q.c.subscription_id, q.c.next_attempt_at).limit(1).scalar_subquery()


# Where a walk of the subscriptions from the start begins: below every subscription's id
# (hangar's are random or time-ordered UUIDs, never the nil one).
WALK_FROM_START = uuid.UUID(int=0)


def walk_of_pending() -> Select[Any]:
    """The ids of the next subscriptions with pending deliveries, in id order: at most
    `window` (a bound parameter) of them, after `after` (WALK_FROM_START: from the first).
    Each is one probe of the queue index (a skip scan), so a walk costs what it returns,
    however many subscriptions have work beyond it."""
    q = Delivery.__table__.alias("q")
    after = bindparam("after", type_=Uuid())
    window = bindparam("window", type_=Integer())
    first = select(_next_pending(q, after).label("id"), literal(1, Integer).label("n"))
    walk = first.cte("walk", recursive=True)
    walk = walk.union_all(
        select(_next_pending(q, walk.c.id), walk.c.n + 1).where(
            walk.c.id.is_not(None), walk.c.n < window
        )
    )
    return select(walk.c.id).where(walk.c.id.is_not(None)).order_by(walk.c.n)


def with_due_work(now: Any, dialect: str, among: Any = None) -> Any:
    """Subscriptions with pending deliveries, with how many attempts each has in flight, when
    its oldest due delivery became due (NULL: nothing due now), and what the claim shares by:
    its organization, its destination, its cap and whether it is timing out. `among` (a bound
    list of ids) limits it to those subscriptions, as the claim's window does; without it,
    every subscription with pending deliveries is found by a skip scan of the queue index (one
    probe per subscription, however long its backlog)."""
    head = Delivery.__table__.alias("head")
    walked: Any
    sub: Any
    if among is not None:
        s = Subscription.__table__.alias("among")
        listed = s.c.id == any_(among) if dialect == "postgresql" else s.c.id.in_(among)
        walked = sub = source = (
            select(s.c.id, s.c.org_id, s.c.destination, s.c.timing_out_since)
            .where(listed)
            .cte("walk")
        )
    else:
        q = Delivery.__table__.alias("q")
        walk = select(_next_pending(q, None).label("id")).cte("walk", recursive=True)
        walked = walk.union_all(select(_next_pending(q, walk.c.id)).where(walk.c.id.is_not(None)))
        s = Subscription.__table__.alias("walked")
        sub, source = s, walked.join(s, s.c.id == walked.c.id)
        if dialect == "postgresql":
            # Looked up by primary key for each subscription walked: LIMIT keeps PostgreSQL
            # from hashing the whole table instead, which cost more than the walk when a few
            # of many subscriptions have work (the statement is planned before the walk's
            # size is known).
            sub = (
                select(s.c.org_id, s.c.destination, s.c.timing_out_since)
                .where(s.c.id == walked.c.id)
                .limit(1)
                .lateral("walked_to")
            )
            source = walked.join(sub, true())
    oldest_due = (
        select(head.c.next_attempt_at)
        .where(head.c.subscription_id == walked.c.id, is_due(now, head))
        .order_by(head.c.subscription_id, head.c.next_attempt_at)  # the queue index's order
        .limit(1)
        .scalar_subquery()
    )
    found = (
        select(
            walked.c.id.label("subscription_id"),
            in_flight_count(walked.c.id, now).label("busy"),
            oldest_due.label("head"),
            sub.c.org_id,
            sub.c.destination,
            subscription_cap(sub).label("cap"),
            sub.c.timing_out_since.is_not(None).label("timing_out"),
        )
        .select_from(source)
        .where(walked.c.id.is_not(None))
        .cte("with_due_work")
    )
    # Worked out once per statement, however often the claim refers to it.
    return found.prefix_with("MATERIALIZED") if dialect == "postgresql" else found
