"""Recording events in the transaction that causes them (the transactional outbox).

`record` writes the event rows and one pending delivery per enabled subscription whose list
matches, on the caller's connection and inside the caller's transaction: if the change rolls
back, so do its events; if it commits, they are all there for the dispatcher. Nothing is sent
from here.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import insert, select, text
from sqlalchemy.ext.asyncio import AsyncConnection

from hangar.foundation.ids import ascending_id, new_id, parse_id
from hangar.kit.encoding import dumps
from hangar.kit.rows import insert_new
from hangar.webhooks.events.catalogue import ALL_EVENTS, TEST_PING
from hangar.webhooks.models import Delivery, Event, Subscription

NOTIFY_CHANNEL = "hangar_deliveries"
# Set on a SQLite connection that recorded deliveries (the subscriptions given new work);
# seen when it returns to the pool.
WAKE_FLAG = "hangar_wake_dispatcher"
# The most subscriptions one wake names: a NOTIFY's payload holds under 8,000 bytes, and an
# organization has at most 20 by default.
NAMED_IN_WAKE = 100


def serialize(data: Mapping[str, Any]) -> str:
    """The one serialization of an event's data; every delivery sends these bytes."""
    return dumps(data).decode()


def resource_of(data: Mapping[str, Any]) -> uuid.UUID | None:
    """What an event concerns: its data's own `id` (the reservation's, squawk's, aircraft's,
    MEL deferral's; flight_session.completed carries its reservation's). An `aircraft_id`
    beside it is not the resource: the squawk is. None for data without one (test.ping).
    The delivery log searches by it (migration 0020 gave existing events theirs)."""
    value = data.get("id")
    return parse_id(value) if isinstance(value, str) else None


async def record(
    conn: AsyncConnection,
    org_id: uuid.UUID,
    names: Sequence[str],
    data: Mapping[str, Any],
    now: datetime,
) -> list[uuid.UUID]:
    """Records events `names` (fired in this order) sharing one `data`; returns their ids."""
    body, resource = serialize(data), resource_of(data)
    ids = [ascending_id() for _ in names]  # so the events API lists them in this order
    events = [
        {
            "id": event_id,
            "org_id": org_id,
            "name": name,
            "data": body,
            "created_at": now,
            "resource_id": resource,
        }
        for event_id, name in zip(ids, names, strict=True)
    ]
    await conn.execute(insert(Event), events)
    subscriptions = (
        await conn.execute(
            select(Subscription.id, Subscription.events).where(
                Subscription.org_id == org_id,
                Subscription.enabled.is_(True),
                Subscription.deleted_at.is_(None),
            )
        )
    ).all()
    deliveries = [
        pending_delivery(org_id, sub.id, event_id, name, now, resource)
        for event_id, name in zip(ids, names, strict=True)
        for sub in subscriptions
        if ALL_EVENTS in sub.events or name in sub.events
    ]
    if deliveries:
        await conn.execute(insert(Delivery), deliveries)
        await wake_dispatchers(conn, {d["subscription_id"] for d in deliveries})
    return ids


async def enqueue_to(
    conn: AsyncConnection,
    org_id: uuid.UUID,
    subscription_id: uuid.UUID,
    name: str,
    data: Mapping[str, Any],
    now: datetime,
) -> uuid.UUID:
    """A Test delivery to one chosen subscription, whatever its list: test.ping or a sample
    of the event `name`. Its event row is recorded as test.ping whatever it sends, so no
    Test is ever an event of the log (the events API, Recover) nor fans out; its delivery
    names what it sends, as the X-Service-Event header and the envelope say it."""
    resource = resource_of(data)
    event_id = await insert_new(
        conn,
        Event,
        org_id=org_id,
        name=TEST_PING,
        data=serialize(data),
        created_at=now,
        resource_id=resource,
    )
    delivery = pending_delivery(org_id, subscription_id, event_id, name, now, resource)
    await conn.execute(insert(Delivery).values(**delivery))
    await wake_dispatchers(conn, [subscription_id])
    delivery_id: uuid.UUID = delivery["id"]
    return delivery_id


def pending_delivery(
    org_id: uuid.UUID,
    subscription_id: uuid.UUID,
    event_id: uuid.UUID,
    event_name: str,
    now: datetime,
    resource_id: uuid.UUID | None = None,
) -> dict[str, Any]:
    """The row of a delivery waiting for its first attempt, due at once; `resource_id` is
    its event's (what the log's search by resource finds it by)."""
    return {
        "id": new_id(),
        "org_id": org_id,
        "subscription_id": subscription_id,
        "event_id": event_id,
        "event_name": event_name,
        "status": "pending",
        "attempts_made": 0,
        "next_attempt_at": now,
        "created_at": now,
        "resource_id": resource_id,
    }


async def wake_dispatchers(conn: AsyncConnection, subscriptions: Iterable[uuid.UUID] = ()) -> None:
    """Wakes every worker once this transaction commits; `subscriptions` are those it gave
    new work to (at most NAMED_IN_WAKE of them are named): a woken dispatcher claims for them
    first, before going on round its ring (hangar.webhooks.delivery.ring), so that a new
    event's delivery waits for no other organization's, however many subscriptions with
    work the ring holds. A bulk write names none, and the ring finds its work."""
    named = set(subscriptions)
    if len(named) > NAMED_IN_WAKE:
        named = set()
    # PostgreSQL delivers a NOTIFY only when the transaction commits: a rolled-back change
    # wakes nobody (and identical ones in a transaction arrive once). SQLite has one
    # process; its dispatcher is woken in-process when this connection goes back to the
    # pool, which is after the commit.
    if conn.dialect.name == "postgresql":
        await conn.execute(
            text("SELECT pg_notify(:channel, :payload)"),
            {"channel": NOTIFY_CHANNEL, "payload": ",".join(sorted(map(str, named)))},
        )
    else:
        woken: set[uuid.UUID] = conn.info.setdefault(WAKE_FLAG, set())
        woken.update(named)


def woken_subscriptions(payload: str) -> list[uuid.UUID]:
    """The subscriptions a wake names (see `wake_dispatchers`); none for anything else."""
    try:
        return [uuid.UUID(s) for s in payload.split(",") if s][:NAMED_IN_WAKE]
    except ValueError:
        return []
