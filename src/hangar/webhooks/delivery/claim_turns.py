"""The fair shares of a claim, as SQL: the attempts in flight counted by organization and by
destination (the census), and the turn of each due delivery in its subscription, its
organization and its destination. Claiming by turn is round robin: every organization's first
waiting delivery before anyone's second, every subscription's before anyone's second within an
organization. claim_statements.py builds the claim from these."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    and_,
    case,
    func,
    or_,
    select,
    true,
)

from hangar.webhooks.delivery.states import (
    DESTINATION_MAX_IN_FLIGHT,
    DESTINATION_MAX_IN_FLIGHT_TIMING_OUT,
    MAX_IN_FLIGHT,
    ORG_MAX_IN_FLIGHT,
    is_due,
    is_in_flight,
)
from hangar.webhooks.models import Delivery, Subscription


def census(now: Any) -> tuple[Any, Any]:
    """The attempts in flight (live leases, any worker's) counted by organization and by
    destination (`n`, and `slow`: those of subscriptions timing out): a few hundred rows at
    most, found through the index of leased deliveries."""
    f = Delivery.__table__.alias("flying")
    s = Subscription.__table__.alias("flying_to")
    flying = (
        select(
            f.c.org_id,
            s.c.destination,
            case((s.c.timing_out_since.is_not(None), 1), else_=0).label("slow"),
        )
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
        select(flying.c.destination, func.count().label("n"), func.sum(flying.c.slow).label("slow"))
        .group_by(flying.c.destination)
        .cte("flying_by_destination")
    )
    return by_org, by_destination


@dataclass(frozen=True)
class Shares:
    """Rows with `org_id` and `destination` joined to the census, and what it counts for each."""

    joined: Any
    org_busy: Any  # its organization's attempts in flight
    destination_busy: Any  # its destination's
    destination_slow: Any  # its destination's, to subscriptions timing out


def shares(subscriptions: Any, census: tuple[Any, Any]) -> Shares:
    """`subscriptions` (rows with `org_id` and `destination`) joined to the census."""
    by_org, by_destination = census
    joined = subscriptions.outerjoin(by_org, by_org.c.org_id == subscriptions.c.org_id)
    joined = joined.outerjoin(
        by_destination, by_destination.c.destination == subscriptions.c.destination
    )
    return Shares(
        joined,
        func.coalesce(by_org.c.n, 0),
        func.coalesce(by_destination.c.n, 0),
        func.coalesce(by_destination.c.slow, 0),
    )


def has_room(found: Shares, reserve_only: Any) -> Any:
    """Room under the organization's and the destination's shares; with `reserve_only`, only
    an organization with nothing in flight (the dispatcher's last slots are kept for those)."""
    return and_(
        found.org_busy < ORG_MAX_IN_FLIGHT,
        found.destination_busy < DESTINATION_MAX_IN_FLIGHT,
        or_(~reserve_only, found.org_busy == 0),
    )


def fits_timing_out(timing_out: Any, slow_turn: Any) -> Any:
    """A subscription that answers, or a timing-out one whose turn among its destination's
    timing-out subscriptions (their attempts in flight plus its place) is within their share."""
    return or_(~timing_out, slow_turn <= DESTINATION_MAX_IN_FLIGHT_TIMING_OUT)


def _candidates(room: Any, now: Any, dialect: str) -> tuple[Any, Any]:
    """Each subscription of `room` joined to its oldest due deliveries, at most MAX_IN_FLIGHT
    of them: (those deliveries, the join)."""
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
    return candidates, source


def turns(room: Any, now: Any, dialect: str) -> Any:
    """For each subscription of `room` (subscription_id, busy, cap, timing_out, org_id,
    destination, org_busy, destination_busy, destination_slow), its oldest due deliveries, at
    most MAX_IN_FLIGHT of them, each with its turn in its subscription (its attempts in flight
    plus its place in the subscription's queue); those that fit under the subscription's cap
    (and, timing out, under their destination's share for such subscriptions) then ranked in
    their organization and in their destination the same way. Claiming by turn is round
    robin: every organization's first waiting delivery before anyone's second, every
    subscription's before anyone's second within an organization, and those with attempts in
    flight after those without."""
    candidates, source = _candidates(room, now, dialect)
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
            room.c.timing_out,
            room.c.org_id,
            room.c.destination,
            room.c.org_busy,
            room.c.destination_busy,
            room.c.destination_slow,
            (room.c.busy + place).label("turn"),
        )
        .select_from(source)
        .cte("turns")
    )
    order = (turns.c.turn, turns.c.next_attempt_at, turns.c.id)
    # Among those under their subscription's cap, each one's place among its destination's
    # deliveries to subscriptions alike (timing out, or not): its turn in their share.
    alike = func.row_number().over(
        partition_by=(turns.c.destination, turns.c.timing_out), order_by=order
    )
    fitting = (
        select(turns, (turns.c.destination_slow + alike).label("slow_turn"))
        .where(turns.c.turn <= turns.c.cap)
        .cte("fitting")
    )
    order = (fitting.c.turn, fitting.c.next_attempt_at, fitting.c.id)
    in_org = func.row_number().over(partition_by=fitting.c.org_id, order_by=order)
    in_destination = func.row_number().over(partition_by=fitting.c.destination, order_by=order)
    return (
        select(
            fitting.c.id,
            fitting.c.next_attempt_at,
            fitting.c.lease_until,
            fitting.c.turn,
            fitting.c.org_busy,
            (fitting.c.org_busy + in_org).label("org_turn"),
            (fitting.c.destination_busy + in_destination).label("destination_turn"),
        )
        .where(fits_timing_out(fitting.c.timing_out, fitting.c.slow_turn))
        .cte("shares")
    )
