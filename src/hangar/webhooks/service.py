"""The subscription actions: list, get, create, edit, delete, enable, rotate the secret, Test,
the delivery log, Redeliver, Recover and health, and the subscriptions disabled now; and the
operator's resealing of every secret after a key rotation.

Each action once, for the management API (routes/webhooks.py) and the Org Settings screens
(web/webhooks.py) alike: one implementation, two presentations. Validation and scoping live
here, not in either caller; the caller's request owns the transaction
(`hangar.http.routing.Tx`) and reads the clock once (`Now`). Each change is recorded in the
audit log (`by`: who acted, from where) in that same transaction: never the secret, nor the
URL (which may carry a credential), only its host.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from pydantic import Field
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from hangar.audit import service as audit
from hangar.audit.service import Who
from hangar.foundation.config import Settings
from hangar.foundation.crypto import SecretBox
from hangar.kit.bodies import RequestBody
from hangar.kit.container import WEBHOOK_SECRETS, Services, webhook_secret_box
from hangar.kit.errors import RateLimited
from hangar.kit.ratelimit import Limit
from hangar.webhooks.delivery import alerts, recovery
from hangar.webhooks.delivery import redeliver as redelivery

# What the routes and the screens name besides the actions: the 404s' words, the views they
# present, the words of the health summary, and a rotation's grace window.
from hangar.webhooks.delivery.alerts import DisabledView as DisabledView
from hangar.webhooks.delivery.recovery import RecoverBody as RecoverBody
from hangar.webhooks.delivery.recovery import Recovered as Recovered
from hangar.webhooks.delivery.recovery import RecoveryView as RecoveryView
from hangar.webhooks.delivery.redeliver import REDELIVERY_LIMITS as REDELIVERY_LIMITS
from hangar.webhooks.events import catalogue, outbox, samples
from hangar.webhooks.inspection import delivery_log, health
from hangar.webhooks.inspection import log_filters as filters
from hangar.webhooks.inspection.delivery_log import DELIVERY as DELIVERY
from hangar.webhooks.inspection.delivery_log import InvalidLogCursor as InvalidLogCursor
from hangar.webhooks.inspection.health import BucketView as BucketView
from hangar.webhooks.inspection.health import HealthView as HealthView
from hangar.webhooks.inspection.health import SeriesView as SeriesView
from hangar.webhooks.inspection.health import duration_words as duration_words
from hangar.webhooks.inspection.health import percent_words as percent_words
from hangar.webhooks.inspection.log_filters import LOGGED_EVENTS as LOGGED_EVENTS
from hangar.webhooks.inspection.log_filters import STATUSES as STATUSES
from hangar.webhooks.inspection.log_filters import LogFilters as LogFilters
from hangar.webhooks.subscriptions import manage as subs
from hangar.webhooks.subscriptions import resealing
from hangar.webhooks.subscriptions.manage import SUBSCRIPTION as SUBSCRIPTION
from hangar.webhooks.subscriptions.manage import NewSubscriptionView as NewSubscriptionView
from hangar.webhooks.subscriptions.manage import SubscriptionView as SubscriptionView
from hangar.webhooks.subscriptions.resealing import Resealed as Resealed
from hangar.webhooks.subscriptions.resealing import Unreadable as Unreadable
from hangar.webhooks.subscriptions.signing_secrets import DEFAULT_GRACE_HOURS as DEFAULT_GRACE_HOURS
from hangar.webhooks.subscriptions.signing_secrets import MAX_GRACE_HOURS as MAX_GRACE_HOURS

TEST_FIRE_LIMITS = (Limit(10, 3600, "10 test fires per hour"),)


class NewSubscription(RequestBody):
    name: str = Field(min_length=1, max_length=200)
    url: str = Field(max_length=4096)
    events: list[str] = Field(max_length=20)


class SubscriptionEdit(RequestBody):
    name: str | None = Field(None, min_length=1, max_length=200)
    url: str | None = Field(None, max_length=4096)
    events: list[str] | None = Field(None, max_length=20)


class SecretRotation(RequestBody):
    """How long the replaced secret goes on signing: 0 (it stops at once) to 72 hours."""

    grace_hours: int = Field(DEFAULT_GRACE_HOURS, ge=0, le=MAX_GRACE_HOURS)


# The reads the subscriptions and the delivery log already are, as they are: this layer
# adds nothing to them.
list_all = subs.list_subscriptions
get = subs.get_subscription
# The log, a page at a time (newest first), with its filters by status and event.
deliveries = delivery_log.log_page
log_filters = filters.log_filters
filter_problems = filters.filter_problems
# The organization's subscriptions disabled now: the Org Settings banner.
disabled = alerts.disabled_of
# A subscription's latest Recover, and what of it still waits; the most one queues.
latest_recovery = recovery.latest
MAX_RECOVERED = recovery.MAX_DELIVERIES


def _destination(url: str) -> str:
    """Where a URL delivers, host and port: what the audit log names (a path or query may
    hold a receiver's token)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    return f"{host}:{parts.port}" if parts.port else host


def _described(sub: SubscriptionView) -> dict[str, Any]:
    return {"name": sub["name"], "destination": _destination(sub["url"]), "events": sub["events"]}


def _webhook(sub_id: uuid.UUID | str) -> tuple[audit.TargetType, uuid.UUID | str]:
    return ("webhook", sub_id)


async def delete(
    conn: AsyncConnection, org_id: uuid.UUID, sub_id: uuid.UUID, now: datetime, *, by: Who
) -> None:
    sub = await subs.get_subscription(conn, org_id, sub_id, lock=True)
    await subs.delete_subscription(conn, org_id, sub_id, now)
    await audit.record(conn, org_id, by, "webhook.deleted", _webhook(sub_id), now, _described(sub))


async def enable(
    conn: AsyncConnection, org_id: uuid.UUID, sub_id: uuid.UUID, now: datetime, *, by: Who
) -> SubscriptionView:
    """Enabled, its counter at zero; recorded when it was disabled."""
    was = await subs.get_subscription(conn, org_id, sub_id, lock=True)
    enabled = await subs.enable_subscription(conn, org_id, sub_id, now)
    if not was["enabled"]:
        details = {"name": was["name"], "disabled_at": _text(was["disabled_at"])}
        await audit.record(conn, org_id, by, "webhook.enabled", _webhook(sub_id), now, details)
    return enabled


def _person(by: Who) -> uuid.UUID:
    """The account of an admin's action that the delivery log names (who redelivered, who
    recovered): the API's and the screens' alone, never the operator's."""
    if by.user_id is None:
        raise ValueError("redeliver and recover are an admin's actions, made signed in")
    return by.user_id


def _text(moment: datetime | None) -> str | None:
    return None if moment is None else moment.isoformat()


async def redeliver(
    conn: AsyncConnection,
    services: Services,
    org_id: uuid.UUID,
    sub_id: uuid.UUID,
    delivery_id: uuid.UUID,
    now: datetime,
    *,
    by: Who,
) -> uuid.UUID:
    """Redeliver: a finished delivery queued again, same id and event (10 per hour)."""
    again = await redelivery.redeliver(
        conn, services, org_id, sub_id, delivery_id, _person(by), now
    )
    details = {"delivery_id": str(delivery_id), "redelivery_id": str(again)}
    await audit.record(conn, org_id, by, "webhook.redelivered", _webhook(sub_id), now, details)
    return again


async def subscription_health(
    conn: AsyncConnection,
    services: Services,
    org_id: uuid.UUID,
    sub_id: uuid.UUID,
    now: datetime,
) -> HealthView:
    """Its queue, its endpoint's last 24 hours and 7 days, and how far back its log reaches."""
    retention = services.settings.delivery_retention_days
    return await health.subscription_health(conn, org_id, sub_id, now, retention_days=retention)


async def recover(
    conn: AsyncConnection,
    services: Services,
    org_id: uuid.UUID,
    sub_id: uuid.UUID,
    body: RecoverBody,
    now: datetime,
    *,
    by: Who,
) -> Recovered:
    """Recover: every event since `body.since` (within HANGAR_DELIVERY_RETENTION_DAYS) that the
    subscription takes and never got, queued to it, oldest first (webhooks/delivery/recovery.py)."""
    retention = services.settings.delivery_retention_days
    done = await recovery.recover(
        conn, org_id, sub_id, body.since, user_id=_person(by), now=now, retention_days=retention
    )
    details = {"since": done.since.isoformat(), "deliveries": done.deliveries}
    await audit.record(conn, org_id, by, "webhook.recovered", _webhook(sub_id), now, details)
    return done


async def recover_from(
    conn: AsyncConnection, services: Services, sub: SubscriptionView, now: datetime
) -> datetime:
    """The `since` the Recover form offers for `sub`, a subscription of the caller's
    organization."""
    retention = services.settings.delivery_retention_days
    return await recovery.default_since(conn, sub, now, retention)


async def create(
    conn: AsyncConnection,
    services: Services,
    org_id: uuid.UUID,
    body: NewSubscription,
    now: datetime,
    *,
    by: Who,
) -> NewSubscriptionView:
    made = await subs.create_subscription(
        conn,
        org_id,
        **body.model_dump(),
        box=services.secret_box,
        resolver=services.resolver,
        limit=services.settings.max_subscriptions_per_org,
        now=now,
    )
    await audit.record(
        conn, org_id, by, "webhook.created", _webhook(made["id"]), now, _described(made)
    )
    return made


async def edit(
    conn: AsyncConnection,
    services: Services,
    org_id: uuid.UUID,
    sub_id: uuid.UUID,
    body: SubscriptionEdit,
    now: datetime,
    *,
    by: Who,
) -> SubscriptionView:
    # What the body leaves out is None: unchanged.
    edited = await subs.edit_subscription(
        conn, org_id, sub_id, **body.model_dump(), resolver=services.resolver, now=now
    )
    changed = sorted(name for name, value in body.model_dump().items() if value is not None)
    details = {"changed": changed, **_described(edited)}
    await audit.record(conn, org_id, by, "webhook.updated", _webhook(sub_id), now, details)
    return edited


async def rotate_secret(
    conn: AsyncConnection,
    box: SecretBox,
    org_id: uuid.UUID,
    sub_id: uuid.UUID,
    body: SecretRotation,
    now: datetime,
    *,
    by: Who,
) -> NewSubscriptionView:
    """A new secret, shown once; the replaced one signs too for the body's grace. `box` seals
    it: the services' (the API, the screens) or one made from the settings (the CLI)."""
    rotated = await subs.rotate_secret(
        conn, org_id, sub_id, grace_hours=body.grace_hours, box=box, now=now
    )
    details = {"name": rotated["name"], "grace_hours": body.grace_hours}
    await audit.record(conn, org_id, by, "webhook.secret_rotated", _webhook(sub_id), now, details)
    return rotated


class EventToTest(RequestBody):
    """The Test action's body: `event`, one of the 13 events to send a sample of, or
    test.ping (the default, also with no body)."""

    event: str = catalogue.TEST_PING


async def fire_test(
    conn: AsyncConnection,
    services: Services,
    org_id: uuid.UUID,
    sub_id: uuid.UUID,
    now: datetime,
    *,
    by: Who,
    event: str = catalogue.TEST_PING,
) -> uuid.UUID:
    """The Test action: queue a signed test.ping, or a sample of `event`, for one
    subscription (10 per hour, whatever it sends); a disabled one gets its counter reset."""
    if event not in samples.TESTABLE:
        what = "an event of the catalogue (nor test.ping)"
        raise catalogue.unknown_event(event, ["body", "event"], what=what)
    sub = await subs.get_subscription(conn, org_id, sub_id, lock=True)
    refused = await services.limiter.hit(f"test-fire:{sub_id}", TEST_FIRE_LIMITS, now)
    if refused is not None:
        raise RateLimited(f"Test limit reached: {refused.label}")
    if not sub["enabled"]:
        await subs.reset_failures(conn, sub_id)
    data = samples.sample(event, now, ping=f"Test delivery to {sub['name']} from hangar")
    delivery_id = await outbox.enqueue_to(conn, org_id, sub_id, event, data, now)
    details = {"event": event, "delivery_id": str(delivery_id)}
    await audit.record(conn, org_id, by, "webhook.tested", _webhook(sub_id), now, details)
    return delivery_id


async def reseal_secrets(
    engine: AsyncEngine, settings: Settings, *, progress: Callable[[Resealed], None] | None = None
) -> Resealed:
    """Every webhook secret sealed again under HANGAR_SECRET_KEY, in batches of short
    transactions (safe while serving, idempotent): once it reports no unreadable live
    subscription, HANGAR_SECRET_KEY_PREVIOUS opens nothing that is still needed."""
    return await resealing.reseal_all(engine, webhook_secret_box(settings), progress=progress)


async def key_sealing_secrets(conn: AsyncConnection, settings: Settings) -> str | None:
    """Which of the process's keys (HANGAR_SECRET_KEY first, then the previous ones) the
    stored webhook secrets are sealed with, judged by the newest live one: the current key
    when none is stored, None when none of the keys opens it."""
    sealed = await resealing.newest_sealed(conn)
    if sealed is None:
        return settings.secret_key
    keys = [settings.secret_key, *settings.previous_secret_keys]
    return resealing.key_opening(sealed, WEBHOOK_SECRETS, keys)
