"""A subscription's last 7 days, for its health page: the deliveries it finished, by outcome,
and the attempts it sent, with their response times, tallied per slot (each hour of the last
day, each day before it) and per window (the last 24 hours, the last 7 days).

The cost follows the subscription's own last 7 days, never its history or other tenants':
- finished deliveries are counted from an index on (subscription_id, completed_at, status, id)
  (migration 0010), without reading their rows;
- attempts through those deliveries and its pending ones with attempts in the window
  (`ix_webhook_deliveries_queue`), then `ix_webhook_attempts_delivery_id`. No other delivery
  can have an attempt in the window: an attempt leaves its delivery pending with a later
  `next_attempt_at` (a retry) or finished at a later `completed_at`, and Redeliver makes it
  pending again, due from the moment it is asked for.

Percentiles are exact, by nearest rank: the p-th percentile of n durations is the
ceil(p * n / 100)-th smallest. The database counts each duration per slot (one hash
aggregate: a receiver's durations repeat, so this is far fewer rows than attempts), adds the
counts up in duration order (a window function, on both databases) and returns, per slot and
window, the count, the sum and the first duration whose running count reaches the rank: a few
dozen rows cross to Python, whatever the traffic.

That is still a pass over the week's attempts (one to three seconds for 200,000 of them on a
busy 2-core machine), and the delivery log reloads itself every 2 s while anything is
pending, which for a busy endpoint is always. So the week is read over whole minutes, up to
the start of the current one, and each process keeps the result until the next minute begins.
"""

from __future__ import annotations

import uuid
from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import BigInteger, ColumnElement, case, cast, func, literal, or_, select, union_all
from sqlalchemy.ext.asyncio import AsyncConnection

from hangar.webhooks.delivery.attempt_kinds import NOTHING_SENT
from hangar.webhooks.delivery.states import is_pending
from hangar.webhooks.models import Attempt, Delivery, DeliveryStatus

HOUR = timedelta(hours=1)
DAY = timedelta(days=1)
WEEK = 7 * DAY
PERCENTILES = (50, 95)
OUTCOMES: tuple[DeliveryStatus, ...] = ("succeeded", "failed", "skipped")

# Slots, counted back from `until`: hour h of the last day is slot h (0 to 23, the latest
# first), and the day d days before it (1 to 6) is slot 23 + d.
HOURS = range(24)
DAYS_BEFORE = range(1, 7)
SLOTS = range(30)
# The keys that tally several slots at once: the two windows.
LAST_DAY = 30
LAST_WEEK = 31
_SLOTS_OF = {**{s: (s,) for s in SLOTS}, LAST_DAY: tuple(HOURS), LAST_WEEK: tuple(SLOTS)}

# Subscriptions whose week a process keeps, each as of its latest minute read.
_KEPT = 256


def day_slot(d: int) -> int:
    """The slot of the day `d` days before the last one."""
    return 23 + d


@dataclass(frozen=True)
class Times:
    attempts: int
    p50: int | None  # ms
    p95: int | None
    mean: int | None


NO_TIMES = Times(attempts=0, p50=None, p95=None, mean=None)


@dataclass(frozen=True)
class Week:
    """The tallies of the 7 days before `until`."""

    until: datetime
    finished: dict[tuple[int, str], int]  # (slot, status): deliveries
    times: dict[int, Times]  # slot, LAST_DAY or LAST_WEEK: attempts sent

    def outcomes(self, key: int) -> dict[str, int]:
        """Deliveries finished in the slot or window `key`, by status."""
        slots = _SLOTS_OF[key]
        return {o: sum(self.finished.get((s, o), 0) for s in slots) for o in OUTCOMES}

    def times_of(self, key: int) -> Times:
        return self.times.get(key, NO_TIMES)


_weeks: OrderedDict[uuid.UUID, Week] = OrderedDict()


async def week(conn: AsyncConnection, sub_id: uuid.UUID, now: datetime) -> Week:
    """The subscription's 7 days up to the start of `now`'s minute; the caller has checked
    that the subscription is its organization's."""
    until = now.replace(second=0, microsecond=0)
    found = _weeks.get(sub_id)
    if found is None or found.until != until:
        finished = await _finished(conn, sub_id, until)
        found = Week(until=until, finished=finished, times=await _times(conn, sub_id, until))
        # Kept last: the subscriptions read longest ago are the first to go.
        _weeks.pop(sub_id, None)
        _weeks[sub_id] = found
        if len(_weeks) > _KEPT:
            _weeks.popitem(last=False)
    return found


def _slot(moment: Any, until: datetime) -> ColumnElement[int]:
    """The slot of `moment`, a column already within the 7 days before `until`. The day
    first: most of a week's rows are decided by a handful of comparisons, not 30."""
    hour = case(*((moment >= until - HOUR * (h + 1), h) for h in HOURS[:-1]), else_=max(HOURS))
    days = DAYS_BEFORE[:-1]
    day = case(*((moment >= until - DAY * (d + 1), day_slot(d)) for d in days), else_=max(SLOTS))
    return case((moment >= until - DAY, hour), else_=day)


def _finished_in_week(sub_id: uuid.UUID, until: datetime) -> list[ColumnElement[bool]]:
    # The negation of queue.is_pending reads `status != 'pending'`: the predicate of the
    # partial index on (subscription_id, completed_at, status, id).
    return [
        Delivery.subscription_id == sub_id,
        ~is_pending(),
        Delivery.completed_at >= until - WEEK,
    ]


async def _finished(
    conn: AsyncConnection, sub_id: uuid.UUID, until: datetime
) -> dict[tuple[int, str], int]:
    rows = (
        select(_slot(Delivery.completed_at, until).label("slot"), Delivery.status)
        .where(*_finished_in_week(sub_id, until), Delivery.completed_at < until)
        .subquery()
    )
    counted = await conn.execute(
        select(rows.c.slot, rows.c.status, func.count()).group_by(rows.c.slot, rows.c.status)
    )
    return {(slot, status): n for slot, status, n in counted}


async def _times(conn: AsyncConnection, sub_id: uuid.UUID, until: datetime) -> dict[int, Times]:
    rows = await conn.execute(_durations(_sent_in_week(sub_id, until)))
    return {
        key: Times(attempts=n, p50=p50, p95=p95, mean=round(total / n))
        for key, n, total, p50, p95 in rows
    }


def _sent_in_week(sub_id: uuid.UUID, until: datetime) -> Any:
    """The week's attempts that sent something, each as its slot and its duration."""
    week_start = until - WEEK
    # The only deliveries that can have an attempt in the window (see the module's note).
    retrying = select(Delivery.id).where(
        Delivery.subscription_id == sub_id,
        is_pending(),
        Delivery.next_attempt_at >= week_start,
        Delivery.attempts_made > 0,
    )
    candidates = union_all(
        select(Delivery.id).where(*_finished_in_week(sub_id, until)), retrying
    ).subquery("candidates")
    return (
        select(_slot(Attempt.started_at, until).label("slot"), Attempt.duration_ms.label("ms"))
        .join(candidates, candidates.c.id == Attempt.delivery_id)
        .where(
            Attempt.started_at >= week_start,
            Attempt.started_at < until,
            Attempt.duration_ms.is_not(None),
            # Kinds are recorded since migration 0008; attempts from before count as sent.
            or_(Attempt.outcome.is_(None), Attempt.outcome.not_in(sorted(NOTHING_SENT))),
        )
        .subquery("sent")
    )


def _durations(sent: Any) -> Any:
    """Per slot, and per window (LAST_DAY, LAST_WEEK): how many attempts of `sent`, their
    total duration and the PERCENTILES of their durations (nearest rank)."""
    per_slot = (
        select(sent.c.slot.label("key"), sent.c.ms, func.count().label("k"))
        .group_by(sent.c.slot, sent.c.ms)
        .cte("per_slot")
    )
    # Each slot's counts, and again summed into each window's.
    counts = union_all(
        select(per_slot.c.key, per_slot.c.ms, per_slot.c.k),
        select(literal(LAST_DAY), per_slot.c.ms, func.sum(per_slot.c.k))
        .where(per_slot.c.key <= max(HOURS))
        .group_by(per_slot.c.ms),
        select(literal(LAST_WEEK), per_slot.c.ms, func.sum(per_slot.c.k)).group_by(per_slot.c.ms),
    ).subquery("counts")
    k = counts.c.k
    running = select(
        counts.c.key,
        counts.c.ms,
        k,
        func.sum(k).over(partition_by=counts.c.key, order_by=counts.c.ms).label("upto"),
        func.sum(k).over(partition_by=counts.c.key).label("n"),
    ).subquery("running")

    def nearest_rank(p: int) -> Any:
        # The first duration with at least ceil(p * n / 100) at or below it: compared as
        # 100 * running count >= p * n, exact whatever numeric type the database sums in.
        reached = 100 * running.c.upto >= p * running.c.n
        return func.min(case((reached, running.c.ms)))

    return select(
        running.c.key,
        cast(func.sum(running.c.k), BigInteger),
        cast(func.sum(running.c.ms * running.c.k), BigInteger),
        *(nearest_rank(p) for p in PERCENTILES),
    ).group_by(running.c.key)
