"""Redeliver sends a finished delivery again: the same row, so the same event (X-Service-Event-Id)
and the same X-Service-Delivery id (and webhook-id), back to pending with a new series of up
to 3 attempts. It is a row written in the request's transaction, so a restart loses nothing;
the dispatcher signs it with the subscription's secret at send time (a new webhook-timestamp)
and checks the URL like any attempt.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from hangar.kit.container import Services
from hangar.kit.errors import Conflict, NotFound, RateLimited
from hangar.kit.ratelimit import Limit
from hangar.kit.rows import insert_new
from hangar.webhooks.events import outbox
from hangar.webhooks.models import Delivery, DeliveryStatus, Redelivery
from hangar.webhooks.subscriptions import manage as subs

# Its own budget per subscription, the Test action's size: redelivering must not use up the
# tests an administrator needs while repairing a receiver, nor the other way round.
REDELIVERY_LIMITS = (Limit(10, 3600, "10 redeliveries per hour"),)
# What can be redelivered: a delivery whose attempts finished it. Not a pending one, nor a
# skipped one (finished too, as states.is_finished counts it, but never sent: its
# subscription was disabled or deleted, and a skipped delivery is never replayed).
REDELIVERABLE: tuple[DeliveryStatus, ...] = ("succeeded", "failed")


def kept_for(days: int) -> str:
    """How far back the log reaches (HANGAR_DELIVERY_RETENTION_DAYS, hangar.retention), said
    where a delivery may be missing because of it."""
    return f"Deliveries are kept for {days} day{'' if days == 1 else 's'} after they finish."


def not_found(days: int) -> NotFound:
    return NotFound(detail=f"No such delivery. {kept_for(days)}")


async def redeliver(
    conn: AsyncConnection,
    services: Services,
    org_id: uuid.UUID,
    sub_id: uuid.UUID,
    delivery_id: uuid.UUID,
    user_id: uuid.UUID,
    now: datetime,
) -> uuid.UUID:
    """Queues a finished delivery again, as a new series of attempts; returns the
    redelivery's id. Refusals: 404 (not this organization's, the subscription deleted, or the
    delivery past retention), 409 (disabled subscription, delivery not finished), 429 (past
    the limit)."""
    sub = await subs.get_subscription(conn, org_id, sub_id, lock=True)
    row = (
        await conn.execute(
            select(Delivery.status, Delivery.attempts_made)
            .where(
                Delivery.id == delivery_id,
                Delivery.org_id == org_id,
                Delivery.subscription_id == sub_id,
            )
            .with_for_update()
        )
    ).first()
    if row is None:  # never made here, or deleted once past retention
        raise not_found(services.settings.delivery_retention_days)
    if not sub["enabled"]:
        raise Conflict(
            "This webhook subscription is disabled: enable it first, then redeliver.",
            "WEBHOOK_DISABLED",
        )
    if row.status not in REDELIVERABLE:
        raise Conflict(
            f"Only a finished delivery (succeeded or failed) can be redelivered; "
            f"this one is {row.status}.",
            "DELIVERY_NOT_FINISHED",
        )
    refused = await services.limiter.hit(f"redeliver:{sub_id}", REDELIVERY_LIMITS, now)
    if refused is not None:
        raise RateLimited(f"Redeliver limit reached: {refused.label}")
    await conn.execute(
        update(Delivery)
        .where(Delivery.id == delivery_id)
        .values(**_new_series(row.attempts_made, now))
    )
    redelivery_id = await insert_new(
        conn,
        Redelivery,
        delivery_id=delivery_id,
        requested_by=user_id,
        requested_at=now,
        first_attempt=row.attempts_made + 1,
    )
    await outbox.wake_dispatchers(conn, [sub_id])
    return redelivery_id


def _new_series(attempts_made: int, now: datetime) -> dict[str, Any]:
    """Pending again and due now, its retries counted from here."""
    return {
        "status": "pending",
        "series_from": attempts_made,
        "next_attempt_at": now,
        "completed_at": None,
        "lease_until": None,
    }
