"""The claim's statements, built once per process for the dialect (`ClaimStatements.of`):
which due deliveries a dispatcher leases, by turn across organizations and subscriptions,
under each subscription's cap (`states.MAX_IN_FLIGHT`), the organization's and the
destination's shares, and within the dispatcher's free slots; and what each claimed delivery
carries to its attempt. claims.Claiming runs them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

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
    update,
)
from sqlalchemy.dialects.postgresql import ARRAY

from hangar.db.base import UTCDateTime
from hangar.db.reads import Read
from hangar.webhooks.delivery import claim_turns
from hangar.webhooks.delivery.states import (
    DESTINATION_MAX_IN_FLIGHT,
    ORG_MAX_IN_FLIGHT,
    in_flight_count,
    is_due,
    is_pending,
    subscription_cap,
    walk_of_pending,
    with_due_work,
)
from hangar.webhooks.events.catalogue import TEST_PING
from hangar.webhooks.models import Delivery, Event, Subscription


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


def _pg_lock(now: Any, slots: Any, reserve_only: Any, walked: Any) -> Any:
    """PostgreSQL's step 1: the walked subscriptions with due work and room under their cap,
    in turn across organizations, locked (FOR NO KEY UPDATE SKIP LOCKED)."""
    subscriptions = Subscription.__table__
    waiting = with_due_work(now, "postgresql", walked)
    # The census joined to the subscriptions walked, not to the whole table.
    found = claim_turns.shares(waiting, claim_turns.census(now))
    # Which subscriptions, in turn across organizations; ranked apart from the lock
    # (PostgreSQL locks no row of a query with window functions).
    ranked = (
        select(
            waiting.c.subscription_id.label("id"),
            waiting.c.busy,
            waiting.c.head,
            waiting.c.timing_out,
            (
                found.org_busy
                + func.row_number().over(
                    partition_by=waiting.c.org_id,
                    order_by=(waiting.c.busy, waiting.c.head),
                )
            ).label("org_turn"),
            # Its place among its destination's subscriptions alike (timing out, or not),
            # after their attempts in flight: a timing-out one past their share is not
            # locked, so it cannot take a place of the claim's that another could use.
            (
                found.destination_slow
                + func.row_number().over(
                    partition_by=(waiting.c.destination, waiting.c.timing_out),
                    order_by=(waiting.c.busy, waiting.c.head),
                )
            ).label("slow_turn"),
        )
        .select_from(found.joined)
        .where(
            waiting.c.head.is_not(None),
            waiting.c.busy < waiting.c.cap,
            claim_turns.has_room(found, reserve_only),
        )
        .cte("ranked")
    )
    return (
        select(subscriptions.c.id)
        .join(ranked, ranked.c.id == subscriptions.c.id)
        .where(claim_turns.fits_timing_out(ranked.c.timing_out, ranked.c.slow_turn))
        .order_by(ranked.c.org_turn, ranked.c.busy, ranked.c.head)
        .limit(slots)
        .with_for_update(of=subscriptions, key_share=True, skip_locked=True)
    )


def _pg_room(now: Any) -> Any:
    """PostgreSQL's step 2 begins here: each locked subscription (`subscriptions`) with its
    live leases counted afresh, its cap and its shares."""
    subscriptions = Subscription.__table__
    their_ids = bindparam("subscriptions", type_=ARRAY(Uuid()))
    found = claim_turns.shares(subscriptions, claim_turns.census(now))
    return (
        select(
            subscriptions.c.id.label("subscription_id"),
            in_flight_count(subscriptions.c.id, now).label("busy"),
            subscription_cap(subscriptions).label("cap"),
            subscriptions.c.timing_out_since.is_not(None).label("timing_out"),
            subscriptions.c.org_id,
            subscriptions.c.destination,
            found.org_busy.label("org_busy"),
            found.destination_busy.label("destination_busy"),
            found.destination_slow.label("destination_slow"),
        )
        .select_from(found.joined)
        .where(subscriptions.c.id == any_(their_ids))
        .cte("room")
    )


def _sqlite_room(now: Any, walked: Any, dialect: str) -> Any:
    """SQLite's: the walked subscriptions with due work, their live leases and shares."""
    waiting = with_due_work(now, dialect, walked)
    found = claim_turns.shares(waiting, claim_turns.census(now))
    return (
        select(
            waiting.c.subscription_id,
            waiting.c.busy,
            waiting.c.cap,
            waiting.c.timing_out,
            waiting.c.org_id,
            waiting.c.destination,
            found.org_busy.label("org_busy"),
            found.destination_busy.label("destination_busy"),
            found.destination_slow.label("destination_slow"),
        )
        .select_from(found.joined)
        .where(waiting.c.head.is_not(None))
        .cte("room")
    )


def _chosen(room: Any, now: Any, dialect: str, slots: Any, reserve_only: Any) -> tuple[Any, Any]:
    """What the claim takes from `room`: by turn, under every share, at most `slots`, with
    the reserve's rule. (The choice, the shares it is made from.)"""
    shares = claim_turns.turns(room, now, dialect)
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
    return chosen, shares


def _pg_leasing(chosen: Any) -> Any:
    """The UPDATE that leases what was chosen, on PostgreSQL."""
    table = Delivery.__table__
    leasing = update(Delivery).values(lease_until=bindparam("lease", type_=UTCDateTime()))
    # The few chosen, worked out once (MATERIALIZED), then each locked by primary key
    # without waiting (a row a late recorder holds is left for the next claim), and only if
    # its lease is still the one read: the lease changes whenever a delivery does (a worker
    # settling it clears it, a claim sets it), so an unchanged lease is a delivery still due.
    # Written so, the claim's plan does not hang on how many deliveries the statistics
    # believe are due: a planner that believed few were (statistics taken when the queue was
    # empty) drove the old form, `id IN (...) AND due`, from every due delivery, working the
    # choice out again for each: a claim of 50 among 5,000 due took 90 s.
    picked = chosen.cte("chosen").prefix_with("MATERIALIZED")
    locked = (
        select(table.c.id)
        .join(picked, picked.c.id == table.c.id)
        .where(table.c.lease_until.is_not_distinct_from(picked.c.lease_until))
        .with_for_update(of=table, skip_locked=True)
        .cte("locked")
        .prefix_with("MATERIALIZED")
    )
    return leasing.where(Delivery.id == locked.c.id)


def _pg_lease_and_read(lease: Any) -> Read[dict[str, Any]]:
    """PostgreSQL's step 2 in one statement: the leases taken, and what attempts need read."""
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
    return Read(_with_what_attempts_need(leased))


def _next_change(now: Any) -> Any:
    """When something not claimable now may become so: the soonest retry wait to end, or the
    soonest live lease to run out (one that has run out is claimable already, or waits under
    its subscription's cap for an attempt that ends)."""
    pending = is_pending()
    return select(
        select(func.min(Delivery.next_attempt_at))
        .where(pending, Delivery.next_attempt_at > now)
        .scalar_subquery()
        .label("retry"),
        select(func.min(Delivery.lease_until))
        .where(pending, Delivery.lease_until > now)
        .scalar_subquery()
        .label("lease"),
    )


@dataclass(frozen=True)
class ClaimStatements:
    """The claim's statements for one dialect (see claims.Claiming for how they run)."""

    walk: Read[dict[str, Any]]
    lock: Read[dict[str, Any]] | None  # PostgreSQL only
    lease_and_read: Read[dict[str, Any]] | None  # PostgreSQL only
    lease: Any  # the UPDATE that leases, returning the ids
    read: Select[Any]  # SQLite: what attempts need, of the leased `ids`
    next_change: Any  # SELECT (retry, lease): the soonest change

    @classmethod
    def of(cls, dialect: str) -> ClaimStatements:
        now = bindparam("now", type_=UTCDateTime())
        slots = bindparam("slots", type_=Integer())
        reserve_only = bindparam("reserve_only", type_=Boolean())
        table = Delivery.__table__
        on_pg = dialect == "postgresql"
        # The window's subscriptions (`walked`), found by `walk` (`after`, `window`).
        walked = (
            bindparam("walked", type_=ARRAY(Uuid()))
            if on_pg
            else bindparam("walked", expanding=True)
        )
        room = _pg_room(now) if on_pg else _sqlite_room(now, walked, dialect)
        chosen, shares = _chosen(room, now, dialect, slots, reserve_only)
        if on_pg:
            lease = _pg_leasing(chosen)
        else:
            leasing = update(Delivery).values(lease_until=bindparam("lease", type_=UTCDateTime()))
            lease = leasing.where(
                Delivery.id.in_(chosen.with_only_columns(shares.c.id)), is_due(now)
            )
        return cls(
            walk=Read(walk_of_pending()),
            lock=Read(_pg_lock(now, slots, reserve_only, walked)) if on_pg else None,
            lease_and_read=_pg_lease_and_read(lease) if on_pg else None,
            lease=lease.returning(Delivery.id),
            read=_with_what_attempts_need(table).where(
                table.c.id.in_(bindparam("ids", expanding=True))
            ),
            next_change=_next_change(now),
        )
