"""Reads of the webhooks for operators: the queue's gauges, as GET /metrics reports them."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import false, func, select
from sqlalchemy.ext.asyncio import AsyncConnection

from hangar.webhooks.delivery.states import (
    is_due,
    is_in_flight,
    is_pending,
    with_due_work,
)
from hangar.webhooks.models import Delivery, Subscription


@dataclass(frozen=True)
class Gauges:
    """The queue as an operator watches it (GET /metrics)."""

    pending: int
    in_flight: int
    held_by_cap: int  # due, but their subscription has its cap of attempts out
    oldest_due_age_s: float  # of what a worker could take now; 0 when none is due
    disabled: int  # subscriptions disabled now, not deleted


async def gauges(conn: AsyncConnection, now: datetime) -> Gauges:
    waiting = with_due_work(now, conn.dialect.name)
    capped = waiting.c.busy >= waiting.c.cap
    count = await conn.scalar(select(func.count()).select_from(Delivery).where(is_pending()))
    in_flight = await conn.scalar(
        select(func.count()).select_from(Delivery).where(is_in_flight(now))
    )
    # Due work splits in two: held back by its subscription's cap (the endpoint's pace), or
    # claimable now (waiting for a worker's slot).
    oldest = await conn.scalar(select(func.min(waiting.c.head)).where(~capped))
    held = await conn.scalar(
        select(func.count())
        .select_from(Delivery)
        .join(waiting, waiting.c.subscription_id == Delivery.subscription_id)
        .where(capped, is_due(now))
    )
    disabled = await conn.scalar(
        select(func.count())
        .select_from(Subscription)
        .where(Subscription.enabled == false(), Subscription.deleted_at.is_(None))
    )
    age = 0.0
    if oldest is not None:
        if oldest.tzinfo is None:  # SQLite through an aggregate loses the column type
            oldest = oldest.replace(tzinfo=now.tzinfo)
        age = max((now - oldest).total_seconds(), 0.0)
    return Gauges(count or 0, in_flight or 0, held or 0, age, disabled or 0)
