"""A subscription's health, as its page and the session API show it: what waits in its queue,
how its endpoint answered over the last 24 hours and 7 days (webhooks/inspection/health_stats.py),
and a sentence that says whether the per-endpoint cap is what holds its deliveries back. Stripe's
and Svix's endpoint pages are the models.

The queue is read live, by delivery/states.py's definitions, from the subscription's pending
rows (the partial indexes of migration 0009); the windows and the chart's series are over
whole minutes, up to the start of the current one.
"""

from __future__ import annotations

import math
import uuid
from datetime import datetime
from typing import TypedDict

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncConnection

from hangar.webhooks.delivery.states import (
    MAX_IN_FLIGHT_TIMING_OUT,
    in_flight_count,
    is_due,
    is_pending,
    subscription_cap,
)
from hangar.webhooks.inspection import health_stats as stats
from hangar.webhooks.inspection.health_stats import DAY, HOUR, WEEK, Week
from hangar.webhooks.models import Delivery, Subscription
from hangar.webhooks.subscriptions import manage as subs


class QueueView(TypedDict):
    waiting: int  # pending and not in flight: due now, or waiting out a retry's wait
    due: int  # the part of `waiting` that is due now
    in_flight: int
    max_in_flight: int
    oldest_due_at: datetime | None  # when the longest-waiting due delivery became due


class ResponseTimes(TypedDict):
    """Over the attempts sent (a timeout counts with its duration; an attempt that sent
    nothing, its URL refused, does not); None without any."""

    p50: int | None  # ms, nearest rank
    p95: int | None
    mean: int | None


class WindowView(TypedDict):
    window: str  # "24h" or "7d"
    since: datetime
    until: datetime
    # Deliveries finished in the window, by outcome. Skipped ones (the subscription was
    # disabled or deleted) are counted apart: they are not the endpoint's doing.
    succeeded: int
    failed: int
    skipped: int
    success_rate: float | None  # succeeded / (succeeded + failed); None when both are 0
    attempts: int  # attempts sent in the window: what `response_ms` is over
    response_ms: ResponseTimes


class BucketView(TypedDict):
    since: datetime
    until: datetime
    succeeded: int
    failed: int
    skipped: int
    attempts: int
    response_ms: ResponseTimes


class SeriesView(TypedDict):
    window: str
    bucket: str  # each bucket's length: "1h" or "1d"
    buckets: list[BucketView]  # oldest first


class HealthView(TypedDict):
    subscription_id: str
    at: datetime  # the moment the queue is counted at
    queue: QueueView
    windows: list[WindowView]
    series: list[SeriesView]
    held_back: bool  # due deliveries wait because the subscription's cap is reached
    summary: str
    retention_days: int  # how far back the delivery log reaches
    # When it was disabled (five failed deliveries in a row), None while it is enabled: read
    # with the queue, at this moment, not from the minute's windows.
    disabled_at: datetime | None


async def subscription_health(
    conn: AsyncConnection,
    org_id: uuid.UUID,
    sub_id: uuid.UUID,
    now: datetime,
    *,
    retention_days: int,
) -> HealthView:
    # Another organization's subscription, or a deleted one, is not found. Past this check
    # the subscription's rows are read by its id alone: they are all its organization's.
    sub = await subs.get_subscription(conn, org_id, sub_id)
    # Whether it is disabled is read now, like the queue: the windows are the minute's (and
    # a process keeps them until the next), so they may not hold yet the failures that
    # disabled it, and alone they would go on saying "all succeeded".
    disabled_at = None if sub["enabled"] else sub["disabled_at"] or now
    queue = await _queue(conn, sub_id, now)
    week = await stats.week(conn, sub_id, now)
    until = week.until
    hours = [
        _bucket(week, h, until - (h + 1) * HOUR, until - h * HOUR) for h in reversed(stats.HOURS)
    ]
    days = [
        _bucket(week, stats.day_slot(d), until - (d + 1) * DAY, until - d * DAY)
        for d in reversed(stats.DAYS_BEFORE)
    ]
    days.append(_bucket(week, stats.LAST_DAY, until - DAY, until))
    windows = [
        _window("24h", _bucket(week, stats.LAST_DAY, until - DAY, until)),
        _window("7d", _bucket(week, stats.LAST_WEEK, until - WEEK, until)),
    ]
    # The cap, and nothing else, is what holds them: due, and every slot of it taken.
    held_back = queue["due"] > 0 and queue["in_flight"] >= queue["max_in_flight"]
    return HealthView(
        subscription_id=str(sub_id),
        at=now,
        queue=queue,
        windows=windows,
        series=[
            SeriesView(window="24h", bucket="1h", buckets=hours),
            SeriesView(window="7d", bucket="1d", buckets=days),
        ],
        held_back=held_back,
        summary=summary(
            queue, windows, last_hour=hours[-1], held_back=held_back, disabled_at=disabled_at
        ),
        retention_days=retention_days,
        disabled_at=disabled_at,
    )


async def _queue(conn: AsyncConnection, sub_id: uuid.UUID, now: datetime) -> QueueView:
    due = is_due(now)
    row = (
        await conn.execute(
            select(
                func.count(),
                func.count().filter(due),
                func.min(Delivery.next_attempt_at).filter(due),
                in_flight_count(sub_id, now),
            ).where(Delivery.subscription_id == sub_id, is_pending())
        )
    ).one()
    pending, due_now, oldest, flying = row
    # Its cap as the claim reads it: one while its attempts time out.
    cap = (
        await conn.execute(select(subscription_cap()).where(Subscription.id == sub_id))
    ).scalar_one()
    return QueueView(
        waiting=pending - flying,
        due=due_now,
        in_flight=flying,
        max_in_flight=int(cap),
        oldest_due_at=oldest,
    )


def _bucket(week: Week, key: int, since: datetime, until: datetime) -> BucketView:
    outcomes, times = week.outcomes(key), week.times_of(key)
    return BucketView(
        since=since,
        until=until,
        succeeded=outcomes["succeeded"],
        failed=outcomes["failed"],
        skipped=outcomes["skipped"],
        attempts=times.attempts,
        response_ms=ResponseTimes(p50=times.p50, p95=times.p95, mean=times.mean),
    )


def _window(name: str, totals: BucketView) -> WindowView:
    decided = totals["succeeded"] + totals["failed"]
    return WindowView(
        window=name,
        since=totals["since"],
        until=totals["until"],
        succeeded=totals["succeeded"],
        failed=totals["failed"],
        skipped=totals["skipped"],
        success_rate=round(totals["succeeded"] / decided, 4) if decided else None,
        attempts=totals["attempts"],
        response_ms=totals["response_ms"],
    )


# --- in words ------------------------------------------------------------------------


def duration_words(ms: int) -> str:
    """`180 ms`, or `6.1 s` from a second on."""
    return f"{ms} ms" if ms < 1000 else f"{ms / 1000:.1f} s"


def percent_words(rate: float) -> str:
    """Rounded down, so that 99.96% is never shown as a perfect 100%."""
    return f"{math.floor(rate * 1000) / 10:g}%"


def _deliveries(n: int) -> str:
    return f"{n:,} delivery" if n == 1 else f"{n:,} deliveries"


def _are(n: int) -> str:
    """`1 delivery is`, `280 deliveries are`."""
    return f"{_deliveries(n)} {'is' if n == 1 else 'are'}"


def _answered(times: ResponseTimes, over: str) -> str | None:
    mean = times["mean"]
    return None if mean is None else f"Your endpoint answered in {duration_words(mean)} {over}"


def summary(
    queue: QueueView,
    windows: list[WindowView],
    *,
    last_hour: BucketView,
    held_back: bool,
    disabled_at: datetime | None = None,
) -> str:
    """One or two sentences for an administrator: how the endpoint has done, and what waits;
    first of all, whether it is disabled (`disabled_at`), since nothing else matters then."""
    if disabled_at is not None:
        return (
            f"Disabled since {disabled_at:%Y-%m-%d %H:%M} UTC, after 5 failed deliveries in a "
            "row: nothing is sent to this endpoint until it is enabled again. Once it answers, "
            "enable it, then recover what it missed."
        )
    day, week = windows
    waiting, flying = queue["waiting"], queue["in_flight"]
    if held_back:
        answered = (
            _answered(last_hour["response_ms"], "on average over the last hour")
            or _answered(day["response_ms"], "on average over the last 24 hours")
            or "Your endpoint has not answered yet"
        )
        if queue["max_in_flight"] == MAX_IN_FLIGHT_TIMING_OUT:
            return (
                f"Your endpoint's attempts time out (no answer within 10 s); {_are(waiting)} "
                "waiting. Until it answers again hangar sends it one delivery at a time, so "
                "that its backlog does not hold the slots other endpoints need."
            )
        return (
            f"{answered}; {_are(waiting)} waiting. hangar sends at most {queue['max_in_flight']} "
            "deliveries at a time to one endpoint, so a slow endpoint is served more slowly; "
            "it is not disabled for being slow."
        )
    history = (
        _history(day, "the last 24 hours")
        or _history(week, "the last 7 days")
        or "Nothing was delivered to this endpoint in the last 7 days."
    )
    if flying and waiting:
        return f"{history} {_are(flying)} being sent now and {waiting:,} waiting."
    if flying:
        return f"{history} {_are(flying)} being sent now."
    if waiting:
        return f"{history} {_are(waiting)} waiting to be sent."
    return history


def _history(window: WindowView, over: str) -> str | None:
    """How the endpoint did over `window`, or None when nothing happened in it."""
    succeeded, failed = window["succeeded"], window["failed"]
    times = window["response_ms"]
    if succeeded + failed == 0:
        answered = _answered(times, f"on average over {over}")
        return None if answered is None else f"{answered}."
    if failed:
        rate = percent_words(succeeded / (succeeded + failed))
        of_all = f"{succeeded:,} of {succeeded + failed:,}"
        outcome = f"{rate} of the deliveries of {over} succeeded ({of_all})"
    elif succeeded == 1:
        outcome = f"The one delivery of {over} succeeded"
    else:
        outcome = f"All {succeeded:,} deliveries of {over} succeeded"
    if times["mean"] is None or times["p95"] is None:
        return f"{outcome}."
    return (
        f"{outcome}; your endpoint answered in {duration_words(times['mean'])} on average "
        f"(95% within {duration_words(times['p95'])})."
    )
