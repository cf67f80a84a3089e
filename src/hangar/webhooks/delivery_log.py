"""A subscription's recent deliveries as the log shows them, and Redeliver.

Each attempt says in a sentence what became of it (webhooks/explain.py), what was sent (the
headers as they went out, the signature included, and the body) and what came back (status
line, headers, the first 2 KB of the body). The body is not stored per attempt: it is the
envelope of the event's stored data with `delivered_at` = the attempt's start, rebuilt here
by the function that built it for the wire, so it is byte for byte what was signed.

Redeliver sends a finished delivery again: the same row, so the same event (X-Service-Event-Id)
and the same X-Service-Delivery id (and webhook-id), back to pending with a new series of up
to 3 attempts. It is a row written in the request's transaction, so a restart loses nothing;
the dispatcher signs it with the subscription's secret at send time (a new webhook-timestamp)
and checks the URL like any attempt.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, TypedDict

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from hangar.auth import users
from hangar.kit.container import Services
from hangar.kit.errors import Conflict, NotFound, RateLimited
from hangar.kit.ratelimit import Limit
from hangar.kit.rows import insert_new
from hangar.webhooks import outbox
from hangar.webhooks import subscriptions as subs
from hangar.webhooks.explain import explain
from hangar.webhooks.models import Attempt, Delivery, Event, Redelivery
from hangar.webhooks.signing import envelope

DELIVERY = "delivery"
# Its own budget per subscription, the Test action's size: redelivering must not use up the
# tests an administrator needs while repairing a receiver, nor the other way round.
REDELIVERY_LIMITS = (Limit(10, 3600, "10 redeliveries per hour"),)
FINISHED = ("succeeded", "failed")


def kept_for(days: int) -> str:
    """How far back the log reaches (HANGAR_DELIVERY_RETENTION_DAYS, hangar.retention), said
    where a delivery may be missing because of it."""
    return f"Deliveries are kept for {days} day{'' if days == 1 else 's'} after they finish."


def not_found(days: int) -> NotFound:
    return NotFound(detail=f"No such delivery. {kept_for(days)}")


class RequestView(TypedDict):
    headers: list[list[str]]  # [name, value] in the order sent
    body: str


class ResponseView(TypedDict):
    status_code: int
    reason: str | None
    headers: list[list[str]]
    body: str | None  # the first 2 KB


class AttemptView(TypedDict):
    number: int
    started_at: datetime
    duration_ms: int | None
    status_code: int | None
    error: str | None
    explanation: str
    redelivery_id: str | None  # the redelivery this attempt belongs to; None: the first series
    request: RequestView | None  # None: nothing sent, or not recorded then
    response: ResponseView | None  # None: no answer


class RequesterView(TypedDict):
    id: str
    email: str | None


class RedeliveryView(TypedDict):
    id: str
    requested_at: datetime
    requested_by: RequesterView
    first_attempt: int  # its attempts are numbered from here


class DeliveryView(TypedDict):
    id: str
    event: str
    event_id: str  # its X-Service-Event-Id: the id the events API lists the event under
    status: str
    attempts: list[AttemptView]
    created_at: datetime
    completed_at: datetime | None
    redeliveries: list[RedeliveryView]


async def recent_deliveries(
    conn: AsyncConnection, org_id: uuid.UUID, sub_id: uuid.UUID, limit: int
) -> list[DeliveryView]:
    await subs.get_subscription(conn, org_id, sub_id)
    deliveries = (
        await conn.execute(
            select(
                Delivery.id,
                Delivery.event_name,
                Delivery.event_id,
                Delivery.status,
                Delivery.created_at,
                Delivery.completed_at,
                Event.data,
            )
            .join(Event, Event.id == Delivery.event_id)
            .where(Delivery.org_id == org_id, Delivery.subscription_id == sub_id)
            .order_by(Delivery.created_at.desc(), Delivery.id.desc())
            .limit(limit)
        )
    ).all()
    ids = [d.id for d in deliveries]
    redeliveries = await _redeliveries(conn, ids)
    attempts: dict[uuid.UUID, list[AttemptView]] = {d.id: [] for d in deliveries}
    if deliveries:
        by_id = {d.id: d for d in deliveries}
        rows = await conn.execute(
            select(Attempt)
            .where(Attempt.delivery_id.in_(ids))
            .order_by(Attempt.delivery_id, Attempt.number)
        )
        for a in rows:
            delivery = by_id[a.delivery_id]
            attempts[a.delivery_id].append(
                _attempt_view(a, delivery.event_name, delivery.data, redeliveries[a.delivery_id])
            )
    return [
        DeliveryView(
            id=str(d.id),
            event=d.event_name,
            event_id=str(d.event_id),
            status=d.status,
            attempts=attempts[d.id],
            created_at=d.created_at,
            completed_at=d.completed_at,
            redeliveries=redeliveries[d.id],
        )
        for d in deliveries
    ]


async def _redeliveries(
    conn: AsyncConnection, ids: list[uuid.UUID]
) -> dict[uuid.UUID, list[RedeliveryView]]:
    found: dict[uuid.UUID, list[RedeliveryView]] = {i: [] for i in ids}
    if not ids:
        return found
    records = await conn.execute(
        select(
            Redelivery.id,
            Redelivery.delivery_id,
            Redelivery.requested_at,
            Redelivery.requested_by,
            Redelivery.first_attempt,
        )
        .where(Redelivery.delivery_id.in_(ids))
        .order_by(Redelivery.requested_at, Redelivery.id)
    )
    rows = records.all()
    emails = await users.emails_of(conn, {r.requested_by for r in rows})
    for r in rows:
        found[r.delivery_id].append(
            RedeliveryView(
                id=str(r.id),
                requested_at=r.requested_at,
                requested_by=RequesterView(
                    id=str(r.requested_by), email=emails.get(r.requested_by)
                ),
                first_attempt=r.first_attempt,
            )
        )
    return found


def _attempt_view(
    a: Any,  # a webhook_attempts row
    event_name: str,
    data: str,
    redeliveries: list[RedeliveryView],
) -> AttemptView:
    # The latest redelivery that began at or before this attempt (several may begin at one
    # number: one whose series was skipped, with the subscription disabled, sent nothing).
    series = [r for r in redeliveries if r["first_attempt"] <= a.number]
    request = None
    if a.request_headers is not None:
        body = envelope(event_name, a.started_at, data).decode()
        request = RequestView(headers=a.request_headers, body=body)
    response = None
    if a.status_code is not None:
        response = ResponseView(
            status_code=a.status_code,
            reason=a.response_reason,
            headers=a.response_headers or [],
            body=a.response_body,
        )
    return AttemptView(
        number=a.number,
        started_at=a.started_at,
        duration_ms=a.duration_ms,
        status_code=a.status_code,
        error=a.error,
        explanation=explain(a.outcome, a.outcome_detail, a.status_code, a.response_reason, a.error),
        redelivery_id=series[-1]["id"] if series else None,
        request=request,
        response=response,
    )


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
    if row.status not in FINISHED:
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
    await outbox.wake_dispatchers(conn)
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
