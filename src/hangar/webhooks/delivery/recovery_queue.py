"""What one Recover queues (recovery.py has its rules): the events the subscription missed,
read a batch at a time, oldest first, and for each either its failed or skipped delivery
queued again, as Redeliver does, or a new delivery."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import case, exists, insert, literal, select, tuple_, update
from sqlalchemy.engine import Row
from sqlalchemy.ext.asyncio import AsyncConnection

from hangar.db.base import UTCDateTime
from hangar.foundation.ids import new_id
from hangar.webhooks.events import outbox
from hangar.webhooks.models import Delivery, DeliveryStatus, Event, Redelivery

# The states of a delivery that Recover leaves alone: sent, or being sent.
_SENT_OR_SENDING: tuple[DeliveryStatus, ...] = ("succeeded", "pending")
# The states it queues again: its attempts spent, or never made (disabled at the time).
_NOT_SENT: tuple[DeliveryStatus, ...] = ("failed", "skipped")
_STEP = timedelta(microseconds=1)


def missed(
    org_id: uuid.UUID,
    sub_id: uuid.UUID,
    names: list[str],
    start: datetime,
    now: datetime,
    after: tuple[datetime, uuid.UUID] | None,
    size: int,
) -> Any:
    """The next `size` events, oldest first, that the subscription takes and has not had
    sent or queued (`ix_events_org_created_at`; each one's deliveries by their event_id)."""
    sent_or_sending = exists().where(
        Delivery.event_id == Event.id,
        Delivery.subscription_id == sub_id,
        Delivery.status.in_(_SENT_OR_SENDING),
    )
    stmt = select(Event.id, Event.name, Event.created_at, Event.resource_id).where(
        Event.org_id == org_id,
        Event.created_at >= start,
        Event.created_at <= now,
        Event.name.in_(names),
        ~sent_or_sending,
    )
    if after is not None:
        at, last = after
        stmt = stmt.where(
            tuple_(Event.created_at, Event.id)
            > tuple_(literal(at, Event.created_at.type), literal(last, Event.id.type))
        )
    return stmt.order_by(Event.created_at, Event.id).limit(size)


class RecoveryQueue:
    """What one recovery queues, batch by batch, in order: each delivery due a microsecond
    after the previous one, all of them due already (the last at `now` at the latest, were
    the recovery to queue its `cap`)."""

    def __init__(
        self,
        org_id: uuid.UUID,
        sub_id: uuid.UUID,
        recovery_id: uuid.UUID,
        user_id: uuid.UUID,
        now: datetime,
        cap: int,
    ) -> None:
        self.org_id, self.sub_id, self._cap = org_id, sub_id, cap
        self._recovery_id, self._user_id, self._now = recovery_id, user_id, now
        self.total = 0
        self.again = 0

    def _due(self, place: int) -> datetime:
        return self._now - (self._cap - 1 - place) * _STEP

    async def add(self, conn: AsyncConnection, events: Sequence[Row[Any]]) -> None:
        due = {e.id: self._due(self.total + n) for n, e in enumerate(events)}
        earlier = await self._requeue(conn, due)
        fresh = [
            {
                **outbox.pending_delivery(
                    self.org_id, self.sub_id, e.id, e.name, self._now, e.resource_id
                ),
                "next_attempt_at": due[e.id],
                "recovery_id": self._recovery_id,
            }
            for e in events
            if e.id not in earlier
        ]
        if fresh:
            await conn.execute(insert(Delivery), fresh)
        self.total += len(events)
        self.again += len(earlier)

    async def _requeue(self, conn: AsyncConnection, due: dict[uuid.UUID, datetime]) -> set[Any]:
        """Queues again the failed or skipped deliveries of these events to the subscription,
        as Redeliver does; returns the events they were of."""
        found = await conn.execute(
            select(Delivery.id, Delivery.event_id)
            .where(
                Delivery.event_id.in_(list(due)),
                Delivery.subscription_id == self.sub_id,
                Delivery.status.in_(_NOT_SENT),
            )
            .order_by(Delivery.event_id, Delivery.created_at.desc(), Delivery.id.desc())
        )
        # One per event, the latest (the outbox makes one per event and subscription).
        chosen: dict[uuid.UUID, uuid.UUID] = {}
        for row in found:
            chosen.setdefault(row.event_id, row.id)
        if not chosen:
            return set()
        next_at = case(
            *((Delivery.id == d, literal(due[e], UTCDateTime())) for e, d in chosen.items()),
            else_=Delivery.next_attempt_at,
        )
        requeued = await conn.execute(
            update(Delivery)
            # Restated: still finished, so a delivery settled or redelivered since is left.
            .where(Delivery.id.in_(list(chosen.values())), Delivery.status.in_(_NOT_SENT))
            .values(
                status="pending",
                series_from=Delivery.attempts_made,
                next_attempt_at=next_at,
                completed_at=None,
                lease_until=None,
                recovery_id=self._recovery_id,
            )
            .returning(Delivery.id, Delivery.event_id, Delivery.attempts_made)
        )
        rows = requeued.all()
        if rows:
            await conn.execute(
                insert(Redelivery),
                [
                    {
                        "id": new_id(),
                        "delivery_id": r.id,
                        "requested_by": self._user_id,
                        "requested_at": self._now,
                        "first_attempt": r.attempts_made + 1,
                    }
                    for r in rows
                ],
            )
        return {r.event_id for r in rows}
