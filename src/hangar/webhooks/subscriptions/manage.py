"""Managing webhook subscriptions (interfaces.md §4). Callers own the transaction and have
checked org.settings; every lookup is scoped to the organization and skips deleted rows."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any, TypedDict

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from hangar.foundation.crypto import SecretBox
from hangar.kit.errors import NotFound, Unprocessable, invalid
from hangar.kit.resolver import Resolver
from hangar.kit.rows import public
from hangar.webhooks.egress.url_parsing import UrlRejected
from hangar.webhooks.egress.url_policy import check_webhook_url
from hangar.webhooks.events.catalogue import ALL_EVENTS, EVENT_NAMES
from hangar.webhooks.models import Delivery, Subscription
from hangar.webhooks.subscriptions.limit import insert_within_limit
from hangar.webhooks.subscriptions.signing_secrets import (
    SECRET_PREFIX_LENGTH,
    new_secret,
    whsec_form,
)

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
    Subscription.previous_secret_expires_at,
)


class SubscriptionView(TypedDict):
    """A subscription as the management API and the screens show it: never its secret."""

    id: str
    name: str
    url: str
    events: list[str]
    enabled: bool
    consecutive_failures: int
    secret_prefix: str
    created_at: datetime
    updated_at: datetime
    disabled_at: datetime | None
    # Until when the secret a rotation replaced also signs each delivery; None when none does.
    previous_secret_expires_at: datetime | None


class NewSubscriptionView(SubscriptionView):
    """A subscription just made, or its secret just rotated: the one answer that holds the
    secret, as the contract gives it and in the `whsec_` form Standard Webhooks libraries
    take."""

    secret: str
    secret_whsec: str


def _view(row: Any, now: datetime | None) -> SubscriptionView:
    """A row of `_VIEW` in the view's shape, its id as text and its events a list; as of
    `now`, a previous secret whose grace has ended signs no more, and is not shown."""
    view = public(row._mapping, SubscriptionView)
    view["id"] = str(row.id)
    view["events"] = list(row.events)
    until = row.previous_secret_expires_at
    if now is not None and until is not None and until <= now:
        view["previous_secret_expires_at"] = None
    return view


def checked_events(events: Sequence[str]) -> list[str]:
    if not events:
        raise invalid("events", "choose at least one event, or * for all")
    for name in events:
        if name != ALL_EVENTS and name not in EVENT_NAMES:
            raise Unprocessable(
                "UNKNOWN_EVENT",
                f"Unknown event {name!r}: use one of the 13 event names, or * for all "
                "(prefixes such as squawk.* are not supported)",
            )
    if ALL_EVENTS in events and len(set(events)) > 1:
        # ["*", "squawk.created"] would read as "these, and everything": refused, not guessed,
        # so what is stored is what the admin meant (the screen's form and the API alike).
        raise invalid(
            "events", "* already means every event: choose * alone, or list the events you want"
        )
    return list(dict.fromkeys(events))


async def checked_url(url: str, resolver: Resolver) -> dict[str, str]:
    """The URL as it is stored, and its destination (the host and port the claim shares
    attempts by); 422 with the policy's code if it is refused."""
    url = url.strip()  # pasted URLs often carry a space or newline at either end
    try:
        checked = await check_webhook_url(url, resolver)
    except UrlRejected as exc:
        raise Unprocessable(str(exc.code), exc.detail) from None
    return {"url": url, "destination": checked.url.destination}


async def list_subscriptions(
    conn: AsyncConnection, org_id: uuid.UUID, now: datetime
) -> list[SubscriptionView]:
    rows = await conn.execute(
        select(*_VIEW)
        .where(Subscription.org_id == org_id, Subscription.deleted_at.is_(None))
        .order_by(Subscription.created_at, Subscription.id)
    )
    return [_view(row, now) for row in rows]


async def get_subscription(
    conn: AsyncConnection,
    org_id: uuid.UUID,
    sub_id: uuid.UUID,
    *,
    lock: bool = False,
    key_share: bool = False,
    now: datetime | None = None,
) -> SubscriptionView:
    """The subscription as of `now` (see `_view`). Checks that only ask whether it exists
    (or lock it) leave `now` out: their view shows a previous secret's expiry as stored.
    `key_share` makes the lock FOR NO KEY UPDATE (PostgreSQL): the outbox's inserts, which
    take KEY SHARE on the row through their foreign key, go on meanwhile."""
    stmt = select(*_VIEW).where(
        Subscription.org_id == org_id,
        Subscription.id == sub_id,
        Subscription.deleted_at.is_(None),
    )
    if lock:
        stmt = stmt.with_for_update(key_share=key_share)
    row = (await conn.execute(stmt)).first()
    if row is None:
        raise NotFound(SUBSCRIPTION)
    return _view(row, now)


async def create_subscription(
    conn: AsyncConnection,
    org_id: uuid.UUID,
    *,
    name: str,
    url: str,
    events: Sequence[str],
    box: SecretBox,
    resolver: Resolver,
    limit: int,
    now: datetime,
) -> NewSubscriptionView:
    """A new subscription, its secret shown this once; 422 SUBSCRIPTION_LIMIT when the
    organization already has `limit` live ones (HANGAR_MAX_SUBSCRIPTIONS_PER_ORG)."""
    where = await checked_url(url, resolver)
    wanted = checked_events(events)
    secret = new_secret()
    sub_id = await insert_within_limit(
        conn,
        org_id,
        limit,
        name=name.strip(),
        **where,
        events=wanted,
        secret_encrypted=box.seal(secret),
        secret_prefix=secret[:SECRET_PREFIX_LENGTH],
        enabled=True,
        consecutive_failures=0,
        created_at=now,
        updated_at=now,
    )
    return _with_secret(await get_subscription(conn, org_id, sub_id, now=now), secret)


def _with_secret(view: SubscriptionView, secret: str) -> NewSubscriptionView:
    return NewSubscriptionView(**view, secret=secret, secret_whsec=whsec_form(secret))


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
) -> SubscriptionView:
    """Changes name, URL or events; the secret never changes here (`rotate_secret` does)."""
    await get_subscription(conn, org_id, sub_id, lock=True)
    changes: dict[str, Any] = {"updated_at": now}
    if name is not None:
        changes["name"] = name.strip()
    if url is not None:
        changes |= await checked_url(url, resolver)
    if events is not None:
        changes["events"] = checked_events(events)
    await conn.execute(update(Subscription).where(Subscription.id == sub_id).values(**changes))
    return await get_subscription(conn, org_id, sub_id, now=now)


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
) -> SubscriptionView:
    """Enabled, counter at zero, secret unchanged; events fired while disabled stay unsent."""
    await get_subscription(conn, org_id, sub_id, lock=True)
    await conn.execute(
        update(Subscription)
        .where(Subscription.id == sub_id)
        .values(enabled=True, consecutive_failures=0, disabled_at=None, updated_at=now)
    )
    return await get_subscription(conn, org_id, sub_id, now=now)


async def rotate_secret(
    conn: AsyncConnection,
    org_id: uuid.UUID,
    sub_id: uuid.UUID,
    *,
    grace_hours: int,
    box: SecretBox,
    now: datetime,
) -> NewSubscriptionView:
    """A new signing secret, shown this once; the one it replaces signs every delivery too
    for `grace_hours` (none at all with 0), so receivers switch without losing one.

    Rotating again during a grace: the secret being replaced becomes the previous one, with
    the new grace, and the one before it stops signing at once. Only two secrets ever sign,
    so a receiver that still holds the oldest must move to one of those two."""
    await get_subscription(conn, org_id, sub_id, lock=True)
    replaced = await conn.scalar(
        select(Subscription.secret_encrypted).where(Subscription.id == sub_id)
    )
    secret = new_secret()
    grace = grace_hours > 0
    await conn.execute(
        update(Subscription)
        .where(Subscription.id == sub_id)
        .values(
            secret_encrypted=box.seal(secret),
            secret_prefix=secret[:SECRET_PREFIX_LENGTH],
            # Kept sealed as it was (under whichever key sealed it; resealing covers it).
            previous_secret_encrypted=replaced if grace else None,
            previous_secret_expires_at=now + timedelta(hours=grace_hours) if grace else None,
            updated_at=now,
        )
    )
    return _with_secret(await get_subscription(conn, org_id, sub_id, now=now), secret)


async def reset_failures(conn: AsyncConnection, sub_id: uuid.UUID) -> None:
    """The Test action's effect on the counter; a disabled subscription stays disabled."""
    await conn.execute(
        update(Subscription).where(Subscription.id == sub_id).values(consecutive_failures=0)
    )
