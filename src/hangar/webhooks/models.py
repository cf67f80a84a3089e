"""Webhook subscriptions, the events they receive, and the delivery queue.

The delivery tables are both the queue the dispatcher works from and the record the
delivery log shows: one row per (event, subscription), one row per attempt.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Literal, get_args

from sqlalchemy import JSON, BigInteger, ForeignKey, Index, Integer, String, Text, text
from sqlalchemy.orm import Mapped, mapped_column

from hangar.db.base import Base, id_column

# A delivery's state: pending (waiting or in flight, delivery/states.py), or finished as
# succeeded, failed (its attempts ran out) or skipped (never sent: its subscription was
# disabled or deleted first).
DeliveryStatus = Literal["pending", "succeeded", "failed", "skipped"]
DELIVERY_STATUSES: tuple[DeliveryStatus, ...] = get_args(DeliveryStatus)


class Subscription(Base):
    __tablename__ = "webhook_subscriptions"
    id: Mapped[uuid.UUID] = id_column()
    org_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("organizations.id"), index=True)
    name: Mapped[str] = mapped_column(String(200))
    url: Mapped[str] = mapped_column(String(2048))
    events: Mapped[list[str]] = mapped_column(JSON)
    secret_encrypted: Mapped[str] = mapped_column(Text)  # Fernet, key from HANGAR_SECRET_KEY
    secret_prefix: Mapped[str] = mapped_column(String(8))
    # The secret a rotation replaced, sealed the same way: it signs every attempt too until
    # previous_secret_expires_at (X-Service-Signature-Previous). NULL when none does.
    previous_secret_encrypted: Mapped[str | None] = mapped_column(Text)
    previous_secret_expires_at: Mapped[datetime | None]
    enabled: Mapped[bool] = mapped_column(default=True)
    consecutive_failures: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]
    disabled_at: Mapped[datetime | None]
    deleted_at: Mapped[datetime | None]
    # Where it delivers, `host:port` (url_parsing.ParsedUrl.destination): the claim caps the
    # attempts in flight to one destination, whichever organizations' they are.
    destination: Mapped[str] = mapped_column(String(300), default="", server_default=text("''"))
    # When its attempts began to time out; NULL once one is answered. Until then it has one
    # attempt in flight at a time (hangar.webhooks.delivery.states).
    timing_out_since: Mapped[datetime | None]


class Event(Base):
    """Something that happened, recorded in the transaction that made it happen."""

    __tablename__ = "events"
    id: Mapped[uuid.UUID] = id_column()
    org_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("organizations.id"), index=True)
    name: Mapped[str] = mapped_column(String(60))
    # The `data` object serialized once, so every delivery sends the same bytes.
    data: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(index=True)  # retention prunes the oldest
    # Its place in the organization's event log (the events API's order): given after the
    # event's transaction has committed, so in commit order (webhooks/events/event_log.py says
    # why); NULL until then.
    position: Mapped[int | None] = mapped_column(BigInteger)
    # What it concerns: the id of the reservation, squawk, aircraft or MEL deferral that is
    # its data's own `id` (outbox.resource_of); NULL when the data has none (test.ping).
    # Each delivery copies it, for the delivery log's search (migration 0020).
    resource_id: Mapped[uuid.UUID | None]

    __table_args__ = (
        Index("ix_events_org_position", "org_id", "position", unique=True),
        # An organization's events by time: what Recover reads (webhooks/delivery/recovery.py),
        # from a time on, oldest first, without walking every other organization's (migration 0016).
        Index("ix_events_org_created_at", "org_id", "created_at", "id"),
        # What is still to be placed: small, as placing follows soon after the commit.
        Index(
            "ix_events_unplaced",
            "org_id",
            postgresql_where=text("position IS NULL"),
            sqlite_where=text("position IS NULL"),
        ),
    )


class EventLogEnd(Base):
    """The last position given in an organization's event log. Its row is locked while the
    log's newly committed events are placed, so two placers never interleave."""

    __tablename__ = "event_log_ends"
    org_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("organizations.id"), primary_key=True)
    last_position: Mapped[int] = mapped_column(BigInteger)


class Delivery(Base):
    __tablename__ = "webhook_deliveries"
    id: Mapped[uuid.UUID] = id_column()
    org_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("organizations.id"))
    subscription_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("webhook_subscriptions.id"))
    # Indexed: an event is pruned only when no delivery refers to it.
    event_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("events.id"), index=True)
    event_name: Mapped[str] = mapped_column(String(60))
    status: Mapped[DeliveryStatus] = mapped_column(String(20), default="pending")
    attempts_made: Mapped[int] = mapped_column(Integer, default=0)
    next_attempt_at: Mapped[datetime]
    lease_until: Mapped[datetime | None]  # a worker holds it until then
    created_at: Mapped[datetime]
    completed_at: Mapped[datetime | None]
    # attempts_made when the current series began: 0, or where a redelivery started a new
    # series of up to 3 attempts (its retries wait 2 s and 8 s like the first series').
    series_from: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    # The Recover that queued it (or queued it again), else NULL. Not a foreign key: adding one
    # would make SQLite copy the whole table (migration 0016), and a recovery's row is pruned
    # by age (retention) whatever still names it.
    recovery_id: Mapped[uuid.UUID | None]
    # Its event's resource_id, copied when queued: the log's search by resource reads
    # `ix_webhook_deliveries_resource` (subscription_id, resource_id, created_at, id), and
    # by event `ix_webhook_deliveries_subscription_event` (migration 0020).
    resource_id: Mapped[uuid.UUID | None]


class Recovery(Base):
    """An administrator's Recover: every event since `since` that the subscription's list
    matches and that has no succeeded or pending delivery to it, queued
    (webhooks/delivery/recovery.py). Its deliveries name it (`Delivery.recovery_id`): while any of
    them is pending, the subscription's next Recover is refused."""

    __tablename__ = "webhook_recoveries"
    id: Mapped[uuid.UUID] = id_column()
    org_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("organizations.id"))
    subscription_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("webhook_subscriptions.id"))
    requested_by: Mapped[uuid.UUID] = mapped_column(ForeignKey("users.id"))
    requested_at: Mapped[datetime] = mapped_column(index=True)  # retention prunes the oldest
    since: Mapped[datetime]  # as applied: never before the subscription was created
    deliveries: Mapped[int] = mapped_column(Integer)  # queued, new and again

    # A subscription's latest recovery, read at each Recover and on its page.
    __table_args__ = (Index(None, "subscription_id", "requested_at"),)


class DisabledNotice(Base):
    """The mail that tells an organization's admins that one of its subscriptions was disabled
    (webhooks/delivery/alerts.py). Written in the transaction that disables it, so a crash loses no
    notice; sent by the worker's `webhook-alerts` job, which clears `due_at`. One row per
    subscription, kept: `sent_at` is what holds the mails to one a day."""

    __tablename__ = "webhook_disabled_notices"
    subscription_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("webhook_subscriptions.id"), primary_key=True
    )
    disabled_at: Mapped[datetime]  # the disabling the notice is about: the latest
    due_at: Mapped[datetime | None]  # when to send it (again); NULL: nothing to send
    sent_at: Mapped[datetime | None]  # when the last notice mail went out
    failures: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    last_error: Mapped[str | None] = mapped_column(String(500))  # why the last send failed

    __table_args__ = (
        # What the job reads each minute: the few notices waiting to go out.
        Index(
            "ix_webhook_disabled_notices_due_at",
            "due_at",
            postgresql_where=text("due_at IS NOT NULL"),
            sqlite_where=text("due_at IS NOT NULL"),
        ),
    )


class Redelivery(Base):
    """An administrator's request to send a finished delivery again: same delivery id, same
    event; its attempts are those numbered from `first_attempt` on."""

    __tablename__ = "webhook_redeliveries"
    id: Mapped[uuid.UUID] = id_column()
    delivery_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("webhook_deliveries.id"), index=True)
    requested_by: Mapped[uuid.UUID] = mapped_column(ForeignKey("users.id"))
    requested_at: Mapped[datetime]
    first_attempt: Mapped[int] = mapped_column(Integer)


class Attempt(Base):
    __tablename__ = "webhook_attempts"
    id: Mapped[uuid.UUID] = id_column()
    delivery_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("webhook_deliveries.id"), index=True)
    number: Mapped[int] = mapped_column(Integer)
    started_at: Mapped[datetime]
    duration_ms: Mapped[int | None] = mapped_column(Integer)
    status_code: Mapped[int | None] = mapped_column(Integer)
    error: Mapped[str | None] = mapped_column(String(500))
    response_body: Mapped[str | None] = mapped_column(Text)  # the first 2 KB
    # The rest is NULL on attempts recorded before the log explained them (migration 0008).
    outcome: Mapped[str | None] = mapped_column(String(40))  # webhooks.explain.AttemptKind
    outcome_detail: Mapped[str | None] = mapped_column(String(500))
    # [[name, value], ...] as sent, the signature included (never the secret). The body is
    # not stored: it is the envelope of the event's stored data, delivered_at = started_at,
    # rebuilt byte for byte by signing.envelope.
    request_headers: Mapped[list[list[str]] | None] = mapped_column(JSON)
    response_reason: Mapped[str | None] = mapped_column(String(500))
    response_headers: Mapped[list[list[str]] | None] = mapped_column(JSON)
