"""A subscription's delivery log, a page at a time (Redeliver, its one write, is
webhooks/delivery/redeliver.py).

The log reads newest first, a page at a time, back through the whole retention window: each
page ends with a cursor of the next (older) one, sealed (kit/cursor.py) to the organization,
the subscription and the filters, so it is refused anywhere else. The keyset is
(created_at, id), the order of the subscription's index on its deliveries.

Its filters, each alone or with the others: by status, by event, by event id (the
X-Service-Event-Id), by resource (what the event concerns: its data's own `id`, the
reservation, squawk, aircraft or MEL deferral; outbox.resource_of) and by when the delivery
was queued (`since` inclusive, `until` exclusive). A search by event id or by resource reads
its page in order from an index of its own (migration 0020), however long the log. An id
that is no UUID finds nothing, as the public API's id filters do.

Each attempt says in a sentence what became of it (webhooks/delivery/attempt_kinds.py), what was
sent (the headers as they went out, the signature included, and the body) and what came back (status
line, headers, the first 2 KB of the body). The body is not stored per attempt: it is the
envelope of the event's stored data with `delivered_at` = the attempt's start, rebuilt here
by the function that built it for the wire, so it is byte for byte what was signed.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypedDict

from sqlalchemy import Row, Select, literal, select, tuple_
from sqlalchemy.ext.asyncio import AsyncConnection

from hangar.auth import users
from hangar.kit import cursor as cursors
from hangar.kit.cursor import CursorKeys, InvalidCursor
from hangar.kit.errors import ApiError
from hangar.webhooks.delivery.attempt_kinds import explain
from hangar.webhooks.delivery.signing import envelope, without_signatures
from hangar.webhooks.inspection.log_filters import LogFilters
from hangar.webhooks.models import Attempt, Delivery, DeliveryStatus, Event, Redelivery
from hangar.webhooks.subscriptions import manage as subs

DELIVERY = "delivery"


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
    status: DeliveryStatus
    attempts: list[AttemptView]
    created_at: datetime
    completed_at: datetime | None
    redeliveries: list[RedeliveryView]


@dataclass(frozen=True)
class LogPage:
    deliveries: list[DeliveryView]
    older: str | None  # the cursor of the next (older) page; None: this page is the last


def _context(sub_id: uuid.UUID, filters: LogFilters) -> str:
    """What a cursor is bound to, besides the organization: the log and its filters, each
    in one spelling (an id's canonical form, a time's UTC microseconds). The search's are
    added only when given, so a cursor made before them still reads its next page."""
    parts = ["deliveries", str(sub_id), filters.status or "", filters.event or ""]
    since, until = filters.times
    searched = [
        "" if filters.event_uuid is None else str(filters.event_uuid),
        "" if filters.resource_uuid is None else str(filters.resource_uuid),
        "" if since is None else str(cursors.micros(since)),
        "" if until is None else str(cursors.micros(until)),
    ]
    if any(searched):
        parts += searched
    return "\x00".join(parts)


class InvalidLogCursor(ApiError):
    """400: `before` is not a cursor this log gave under these filters (altered, another
    organization's or subscription's, or made with other filters)."""

    def __init__(self) -> None:
        super().__init__(
            400,
            "INVALID_CURSOR",
            "The cursor is not valid here: follow the Link header's next page as given, "
            "with the same filters",
        )


def _read_cursor(
    keys: CursorKeys, org_id: uuid.UUID, context: str, text: str
) -> tuple[datetime, uuid.UUID]:
    try:
        created, id_hex = cursors.unseal(keys, org_id, context, text)
        # Signed by us, so well formed; still, never let a surprise become a 500.
        return cursors.from_micros(created), uuid.UUID(hex=id_hex)
    except (InvalidCursor, ValueError, TypeError, OverflowError, AttributeError):
        raise InvalidLogCursor from None


async def log_page(
    conn: AsyncConnection,
    keys: CursorKeys,
    org_id: uuid.UUID,
    sub_id: uuid.UUID,
    limit: int,
    filters: LogFilters = LogFilters(),  # frozen: a shared default is safe
    before: str | None = None,
) -> LogPage:
    """Up to `limit` deliveries, newest first, older than the cursor `before` (from the
    newest without it). 404: not this organization's subscription; InvalidLogCursor."""
    await subs.get_subscription(conn, org_id, sub_id)
    if filters.finds_nothing:
        return LogPage([], None)
    context = _context(sub_id, filters)
    after = _read_cursor(keys, org_id, context, before) if before else None
    # One more than asked: whether there is an older page.
    rows = (await conn.execute(_page_query(org_id, sub_id, filters, after, limit + 1))).all()
    shown = rows[:limit]
    older = None
    if len(rows) > limit:
        last = shown[-1]
        older = cursors.seal(keys, org_id, context, [cursors.micros(last.created_at), last.id.hex])
    return LogPage(await _views(conn, shown), older)


def _page_query(
    org_id: uuid.UUID,
    sub_id: uuid.UUID,
    filters: LogFilters,
    after: tuple[datetime, uuid.UUID] | None,
    limit: int,
) -> Select[*tuple[Any, ...]]:
    stmt = (
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
    )
    if filters.status is not None:
        stmt = stmt.where(Delivery.status == filters.status)
    if filters.event is not None:
        stmt = stmt.where(Delivery.event_name == filters.event)
    # Read from ix_webhook_deliveries_subscription_event and ix_webhook_deliveries_resource
    # (migration 0020): in the page's order, so a search reads no more than its page.
    if filters.event_uuid is not None:
        stmt = stmt.where(Delivery.event_id == filters.event_uuid)
    if filters.resource_uuid is not None:
        stmt = stmt.where(Delivery.resource_id == filters.resource_uuid)
    since, until = filters.times
    if since is not None:
        stmt = stmt.where(Delivery.created_at >= since)
    if until is not None:
        stmt = stmt.where(Delivery.created_at < until)
    if after is not None:
        created_at, delivery_id = after
        stmt = stmt.where(
            tuple_(Delivery.created_at, Delivery.id)
            < tuple_(
                literal(created_at, Delivery.created_at.type),
                literal(delivery_id, Delivery.id.type),
            )
        )
    return stmt.order_by(Delivery.created_at.desc(), Delivery.id.desc()).limit(limit)


async def _views(conn: AsyncConnection, deliveries: Sequence[Row[Any]]) -> list[DeliveryView]:
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
        # Masked again here: an attempt an older release recorded during an upgrade.
        request = RequestView(headers=without_signatures(a.request_headers), body=body)
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
