"""Recover: every event a subscription missed since a time, queued to it, oldest first.

An outage costs a receiver events twice over: deliveries that spent their 3 attempts, and,
once five failed in a row disabled the subscription, every event recorded while it was
disabled, which has no delivery to it at all (the outbox fans out to enabled subscriptions
only). Recover (`POST .../webhooks/{id}/recover` `{"since"}`, the subscription page's
button) queues one delivery to the subscription for each event since `since` that its event
list matches and that has no succeeded delivery to it:

- An event with no delivery to it gets a new one.
- An event whose delivery to it failed (3 attempts spent) or was skipped (not sent: the
  subscription was disabled when it came due) has that delivery queued again, as Redeliver
  does it (redeliver.py): the same row, so the same X-Service-Delivery id, pending with a
  new series of up to 3 attempts, and a Redelivery row that says who asked. A receiver that
  drops repeats by delivery id sees one delivery per event, whatever it saw of the first
  series; the log keeps the first series' attempts beside the new ones.
- An event with a succeeded delivery to it is left alone (so running Recover twice never
  sends twice what succeeded), and so is one with a pending delivery (its attempts are under
  way or due: it is not queued twice).

`since` may go back as far as the delivery retention window (HANGAR_DELIVERY_RETENTION_DAYS):
within it no finished delivery has been pruned, so "no succeeded delivery" is known for
every event, and the events are all kept; further back, 422. It applies from when the
subscription was created at the earliest: it is not sent what happened before it existed.

The deliveries are ordinary queue rows, claimed by the dispatcher's fair rules like any
other: the subscription's cap on attempts in flight holds, and other organizations' and
destinations' deliveries keep their turns. They are due at once, each a microsecond after the
one of the event before it, so that the claim (oldest due first within a subscription) sends
them oldest event first, ahead of what the subscription gets from now on. The dispatchers
are woken as for a new delivery (outbox.wake_dispatchers).

Bounded: the events are read and queued in batches of `BATCH` (one statement each way per
batch), at most `MAX_DELIVERIES` per recovery. A recovery that reaches the cap says so; the
next one, once these are sent, goes on from where it stopped (what succeeded is left out),
with the same `since`. While a recovery has deliveries waiting, the subscription's next one is
refused (409 RECOVERY_RUNNING): two would queue the same events twice.

Each recovery is a row (who asked, when, from when, how many), which its deliveries name;
its page shows the latest, and the log line records it too.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, TypedDict

from sqlalchemy import (
    exists,
    func,
    insert,
    select,
    update,
)
from sqlalchemy.ext.asyncio import AsyncConnection

from hangar.auth import users
from hangar.foundation.ids import new_id
from hangar.kit.bodies import RequestBody
from hangar.kit.errors import Conflict, invalid
from hangar.kit.params import AwareDateTime
from hangar.webhooks.delivery.recovery_queue import RecoveryQueue, missed
from hangar.webhooks.delivery.states import is_pending
from hangar.webhooks.events import outbox
from hangar.webhooks.events.catalogue import ALL_EVENTS, EVENT_NAMES
from hangar.webhooks.models import (
    Delivery,
    DisabledNotice,
    Recovery,
    Subscription,
)
from hangar.webhooks.subscriptions import manage as subs

log = logging.getLogger("hangar.webhooks")

# Events read, and deliveries queued, per statement.
BATCH = 500
# Deliveries one recovery queues at most: a day's events of a busy organization (about 10 a
# minute) in one request, whose transaction holds SQLite's one write lock while it writes
# (measured: under a second on either database). Past it, recover again once they are sent.
MAX_DELIVERIES = 10_000
# What the form offers when the subscription was never disabled: the last day.
DEFAULT_LOOKBACK = timedelta(hours=24)
# How long the form's `since` stays inside the retention window after it is shown.
FORM_MARGIN = timedelta(minutes=10)


class RecoverBody(RequestBody):
    """`since`: RFC 3339, with its offset (Z or +HH:MM)."""

    since: AwareDateTime


class RecoveredView(TypedDict):
    deliveries: int  # queued: new ones and failed or skipped ones queued again


@dataclass(frozen=True)
class Recovered:
    id: uuid.UUID
    since: datetime  # as applied: `since`, or when the subscription was created if later
    deliveries: int
    again: int  # of those, failed or skipped deliveries queued again
    capped: bool  # MAX_DELIVERIES reached: events may be left for the next recovery

    def view(self) -> RecoveredView:
        return RecoveredView(deliveries=self.deliveries)


def _matched(events: Sequence[str]) -> list[str]:
    """The catalogue's events a subscription's list takes (`*`: all 13; never test.ping,
    which is one subscription's own)."""
    return list(EVENT_NAMES) if ALL_EVENTS in events else [e for e in events if e in EVENT_NAMES]


def _checked_since(since: datetime, now: datetime, retention_days: int) -> None:
    if since > now:
        raise invalid("since", "it is in the future; choose a time before now")
    earliest = now - timedelta(days=retention_days)
    if since < earliest:
        plural = "" if retention_days == 1 else "s"
        raise invalid(
            "since",
            f"it is more than {retention_days} day{plural} ago, beyond what hangar keeps "
            f"(HANGAR_DELIVERY_RETENTION_DAYS); choose {earliest:%Y-%m-%d %H:%M} UTC or later",
        )


def _latest_recovery(sub_id: uuid.UUID) -> Any:
    return (
        select(Recovery.id)
        .where(Recovery.subscription_id == sub_id)
        .order_by(Recovery.requested_at.desc(), Recovery.id.desc())
        .limit(1)
        .scalar_subquery()
    )


def _waiting(recovery_id: Any) -> Any:
    """Its deliveries still pending (`ix_webhook_deliveries_recovering`, migration 0016)."""
    return (Delivery.recovery_id == recovery_id) & Delivery.recovery_id.is_not(None) & is_pending()


async def running(conn: AsyncConnection, sub_id: uuid.UUID) -> bool:
    """Whether the subscription's latest recovery still has deliveries waiting."""
    return bool(await conn.scalar(select(exists().where(_waiting(_latest_recovery(sub_id))))))


async def recover(
    conn: AsyncConnection,
    org_id: uuid.UUID,
    sub_id: uuid.UUID,
    since: datetime,
    *,
    user_id: uuid.UUID,
    now: datetime,
    retention_days: int,
) -> Recovered:
    """Queues what the subscription missed since `since` (the module's rules). Refusals: 404
    (not this organization's, or deleted), 422 (`since` in the future or past retention),
    409 WEBHOOK_DISABLED, 409 RECOVERY_RUNNING."""
    sub = await _locked_to_recover(conn, org_id, sub_id, since, now, retention_days)
    start = max(since, sub["created_at"])
    recovery_id = new_id()
    queue = RecoveryQueue(org_id, sub_id, recovery_id, user_id, now, cap=MAX_DELIVERIES)
    await _queue_missed(conn, queue, _matched(sub["events"]), start, now)
    capped = queue.total >= MAX_DELIVERIES
    await conn.execute(
        insert(Recovery).values(
            id=recovery_id,
            org_id=org_id,
            subscription_id=sub_id,
            requested_by=user_id,
            requested_at=now,
            since=start,
            deliveries=queue.total,
        )
    )
    if queue.total:
        await outbox.wake_dispatchers(conn, [sub_id])
    _logged(recovery_id, sub_id, user_id, start, queue, capped)
    return Recovered(recovery_id, start, queue.total, queue.again, capped)


async def _locked_to_recover(
    conn: AsyncConnection,
    org_id: uuid.UUID,
    sub_id: uuid.UUID,
    since: datetime,
    now: datetime,
    retention_days: int,
) -> subs.SubscriptionView:
    """The subscription, locked until the commit, once every refusal is ruled out."""
    if conn.dialect.name == "sqlite":
        # SQLite's transaction begins at its first write, not its first read (pysqlite), and
        # ignores FOR UPDATE: a write first (changing nothing), so that what follows is read
        # under the one write lock, and a second Recover waits for this one to commit.
        await conn.execute(
            update(Subscription)
            .where(Subscription.id == sub_id, Subscription.org_id == org_id)
            .values(updated_at=Subscription.updated_at)
        )
    # Held until the commit: a second Recover (or an Enable, an edit, a Redeliver) waits for
    # this one and then sees its deliveries; FOR NO KEY UPDATE, so the organization's product
    # actions go on queueing deliveries to it meanwhile.
    sub = await subs.get_subscription(conn, org_id, sub_id, lock=True, key_share=True)
    _checked_since(since, now, retention_days)
    if not sub["enabled"]:
        raise Conflict(
            "This webhook subscription is disabled: enable it first, then recover.",
            "WEBHOOK_DISABLED",
        )
    if await running(conn, sub_id):
        raise Conflict(
            "A recovery of this webhook subscription is still sending: recover again once its "
            "deliveries are done.",
            "RECOVERY_RUNNING",
        )
    return sub


async def _queue_missed(
    conn: AsyncConnection, queue: RecoveryQueue, names: list[str], start: datetime, now: datetime
) -> None:
    """Queues the events of `names` since `start` that the subscription missed, BATCH at a
    time, oldest first, up to MAX_DELIVERIES."""
    after: tuple[datetime, uuid.UUID] | None = None
    while names and queue.total < MAX_DELIVERIES:
        size = min(BATCH, MAX_DELIVERIES - queue.total)
        stmt = missed(queue.org_id, queue.sub_id, names, start, now, after, size)
        found = (await conn.execute(stmt)).all()
        if not found:
            break
        await queue.add(conn, found)
        after = (found[-1].created_at, found[-1].id)
        if len(found) < size:
            break


def _logged(
    recovery_id: uuid.UUID,
    sub_id: uuid.UUID,
    user_id: uuid.UUID,
    start: datetime,
    queue: RecoveryQueue,
    capped: bool,
) -> None:
    log.info(
        "recovery %s of subscription %s since %s: %d queued (%d of them again)%s",
        recovery_id,
        sub_id,
        start.isoformat(),
        queue.total,
        queue.again,
        ", the most one recovery queues" if capped else "",
        extra={
            "recovery_id": str(recovery_id),
            "subscription_id": str(sub_id),
            "requested_by": str(user_id),
            "since": start.isoformat(),
            "deliveries": queue.total,
            "again": queue.again,
        },
    )


# --- what the subscription's page shows --------------------------------------------------


class RecoveryView(TypedDict):
    id: str
    requested_at: datetime
    requested_by: str | None  # the requester's email
    since: datetime
    deliveries: int
    waiting: int  # of its deliveries, those still pending


async def latest(conn: AsyncConnection, sub_id: uuid.UUID) -> RecoveryView | None:
    """The subscription's latest recovery, and how many of its deliveries wait; the caller
    has checked that the subscription is its organization's."""
    row = (
        await conn.execute(select(Recovery).where(Recovery.id == _latest_recovery(sub_id)).limit(1))
    ).first()
    if row is None:
        return None
    waiting = await conn.scalar(select(func.count()).select_from(Delivery).where(_waiting(row.id)))
    email = (await users.emails_of(conn, [row.requested_by])).get(row.requested_by)
    return RecoveryView(
        id=str(row.id),
        requested_at=row.requested_at,
        requested_by=email,
        since=row.since,
        deliveries=row.deliveries,
        waiting=waiting or 0,
    )


async def default_since(
    conn: AsyncConnection,
    sub: subs.SubscriptionView,
    now: datetime,
    retention_days: int,
) -> datetime:
    """What the Recover form offers, to the minute (the form's precision): from the last time
    the subscription was disabled (its notice keeps when, after Enable has cleared
    `disabled_at`) or the last 24 hours, whichever is earlier; not before it was created
    (which Recover would not go back to anyway), and a margin inside retention, so that a
    form sent a few minutes after it was shown is not refused for a window that moved."""
    disabled = sub["disabled_at"] or await conn.scalar(
        select(DisabledNotice.disabled_at).where(
            DisabledNotice.subscription_id == uuid.UUID(sub["id"])
        )
    )
    since = now - DEFAULT_LOOKBACK
    if disabled is not None:
        since = min(since, disabled)
    kept = now - timedelta(days=retention_days) + FORM_MARGIN
    since = max(since, sub["created_at"], kept)
    minute = since.replace(second=0, microsecond=0)
    return minute if minute >= kept else minute + timedelta(minutes=1)
