"""Managing webhook subscriptions (interfaces.md §4). Callers own the transaction and have
checked org.settings; every lookup is scoped to the organization and skips deleted rows."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import insert, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from hangar.crypto import SecretBox
from hangar.ids import new_id
from hangar.kit.errors import ApiError, NotFound, invalid
from hangar.kit.resolver import Resolver
from hangar.webhooks.catalogue import ALL_EVENTS, EVENT_NAMES
from hangar.webhooks.models import Attempt, Delivery, Subscription
from hangar.webhooks.secrets import SECRET_PREFIX_LENGTH, new_secret
from hangar.webhooks.url_policy import UrlRejected, check_webhook_url

# What a 404 calls one.
SUBSCRIPTION = "webhook subscription"

_VIEW = (
    Subscription.id,
    Subscription.name,
    Subscription.url,
    Subscription.events,
    Subscription.enabled,
    Subscription.consecutive_failures,
    Subscription.secret_prefix,
    Subscription.created_at,
    Subscription.updated_at,
    Subscription.disabled_at,
)


def _view(row: Any) -> dict[str, Any]:
    return {**row._asdict(), "id": str(row.id), "events": list(row.events)}


def checked_events(events: Sequence[str]) -> list[str]:
    if not events:
        raise invalid("events", "choose at least one event, or * for all")
    for name in events:
        if name != ALL_EVENTS and name not in EVENT_NAMES:
            raise ApiError(
                422,
                "UNKNOWN_EVENT",
                f"Unknown event {name!r}: use one of the 13 event names, or * for all "
                "(prefixes such as squawk.* are not supported)",
            )
    return list(dict.fromkeys(events))


async def checked_url(url: str, resolver: Resolver) -> str:
    url = url.strip()  # pasted URLs often carry a space or newline at either end
    try:
        await check_webhook_url(url, resolver)
    except UrlRejected as exc:
        raise ApiError(422, str(exc.code), exc.detail) from None
    return url


async def list_subscriptions(conn: AsyncConnection, org_id: uuid.UUID) -> list[dict[str, Any]]:
    rows = await conn.execute(
        select(*_VIEW)
        .where(Subscription.org_id == org_id, Subscription.deleted_at.is_(None))
        .order_by(Subscription.created_at, Subscription.id)
    )
    return [_view(row) for row in rows]


async def get_subscription(
    conn: AsyncConnection, org_id: uuid.UUID, sub_id: uuid.UUID, *, lock: bool = False
) -> dict[str, Any]:
    stmt = select(*_VIEW).where(
        Subscription.org_id == org_id,
        Subscription.id == sub_id,
        Subscription.deleted_at.is_(None),
    )
    row = (await conn.execute(stmt.with_for_update() if lock else stmt)).first()
    if row is None:
        raise NotFound(SUBSCRIPTION)
    return _view(row)


async def create_subscription(
    conn: AsyncConnection,
    org_id: uuid.UUID,
    *,
    name: str,
    url: str,
    events: Sequence[str],
    box: SecretBox,
    resolver: Resolver,
    now: datetime,
) -> dict[str, Any]:
    url = await checked_url(url, resolver)
    wanted = checked_events(events)
    secret = new_secret()
    sub_id = new_id()
    await conn.execute(
        insert(Subscription).values(
            id=sub_id,
            org_id=org_id,
            name=name.strip(),
            url=url,
            events=wanted,
            secret_encrypted=box.seal(secret),
            secret_prefix=secret[:SECRET_PREFIX_LENGTH],
            enabled=True,
            consecutive_failures=0,
            created_at=now,
            updated_at=now,
        )
    )
    return {**await get_subscription(conn, org_id, sub_id), "secret": secret}


async def edit_subscription(
    conn: AsyncConnection,
    org_id: uuid.UUID,
    sub_id: uuid.UUID,
    *,
    name: str | None,
    url: str | None,
    events: Sequence[str] | None,
    resolver: Resolver,
    now: datetime,
) -> dict[str, Any]:
    """Changes name, URL or events; the secret never changes (delete and recreate for that)."""
    await get_subscription(conn, org_id, sub_id, lock=True)
    changes: dict[str, Any] = {"updated_at": now}
    if name is not None:
        changes["name"] = name.strip()
    if url is not None:
        changes["url"] = await checked_url(url, resolver)
    if events is not None:
        changes["events"] = checked_events(events)
    await conn.execute(update(Subscription).where(Subscription.id == sub_id).values(**changes))
    return await get_subscription(conn, org_id, sub_id)


async def delete_subscription(
    conn: AsyncConnection, org_id: uuid.UUID, sub_id: uuid.UUID, now: datetime
) -> None:
    await get_subscription(conn, org_id, sub_id, lock=True)
    await conn.execute(
        update(Subscription).where(Subscription.id == sub_id).values(deleted_at=now, enabled=False)
    )
    # What was still queued for it will never be sent.
    await conn.execute(
        update(Delivery)
        .where(Delivery.subscription_id == sub_id, Delivery.status == "pending")
        .values(status="skipped", completed_at=now, lease_until=None)
    )


async def enable_subscription(
    conn: AsyncConnection, org_id: uuid.UUID, sub_id: uuid.UUID, now: datetime
) -> dict[str, Any]:
    """Enabled, counter at zero, secret unchanged; events fired while disabled stay unsent."""
    await get_subscription(conn, org_id, sub_id, lock=True)
    await conn.execute(
        update(Subscription)
        .where(Subscription.id == sub_id)
        .values(enabled=True, consecutive_failures=0, disabled_at=None, updated_at=now)
    )
    return await get_subscription(conn, org_id, sub_id)


async def reset_failures(conn: AsyncConnection, sub_id: uuid.UUID) -> None:
    """The Test action's effect on the counter; a disabled subscription stays disabled."""
    await conn.execute(
        update(Subscription).where(Subscription.id == sub_id).values(consecutive_failures=0)
    )


async def recent_deliveries(
    conn: AsyncConnection, org_id: uuid.UUID, sub_id: uuid.UUID, limit: int
) -> list[dict[str, Any]]:
    await get_subscription(conn, org_id, sub_id)
    deliveries = (
        await conn.execute(
            select(
                Delivery.id,
                Delivery.event_name,
                Delivery.status,
                Delivery.created_at,
                Delivery.completed_at,
            )
            .where(Delivery.org_id == org_id, Delivery.subscription_id == sub_id)
            .order_by(Delivery.created_at.desc(), Delivery.id.desc())
            .limit(limit)
        )
    ).all()
    attempts: dict[uuid.UUID, list[dict[str, Any]]] = {d.id: [] for d in deliveries}
    if deliveries:
        rows = await conn.execute(
            select(
                Attempt.delivery_id,
                Attempt.number,
                Attempt.started_at,
                Attempt.duration_ms,
                Attempt.status_code,
                Attempt.error,
            )
            .where(Attempt.delivery_id.in_(list(attempts)))
            .order_by(Attempt.delivery_id, Attempt.number)
        )
        for a in rows:
            attempts[a.delivery_id].append(
                {
                    "number": a.number,
                    "started_at": a.started_at,
                    "duration_ms": a.duration_ms,
                    "status_code": a.status_code,
                    "error": a.error,
                }
            )
    return [
        {
            "id": str(d.id),
            "event": d.event_name,
            "status": d.status,
            "attempts": attempts[d.id],
            "created_at": d.created_at,
            "completed_at": d.completed_at,
        }
        for d in deliveries
    ]
