"""Webhook subscriptions, the events they receive, and the delivery queue.

The delivery tables are both the queue the dispatcher works from and the record the
delivery log shows: one row per (event, subscription), one row per attempt.
"""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import JSON, BigInteger, ForeignKey, Index, Integer, String, Text, text
from sqlalchemy.orm import Mapped, mapped_column

from hangar.db.base import Base, id_column


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
    # event's transaction has committed, so in commit order (webhooks/event_log.py says
    # why); NULL until then.
    position: Mapped[int | None] = mapped_column(BigInteger)

    __table_args__ = (
        Index("ix_events_org_position", "org_id", "position", unique=True),
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
    status: Mapped[str] = mapped_column(String(20), default="pending")
    attempts_made: Mapped[int] = mapped_column(Integer, default=0)
    next_attempt_at: Mapped[datetime]
    lease_until: Mapped[datetime | None]  # a worker holds it until then
    created_at: Mapped[datetime]
    completed_at: Mapped[datetime | None]
    # attempts_made when the current series began: 0, or where a redelivery started a new
    # series of up to 3 attempts (its retries wait 2 s and 8 s like the first series').
    series_from: Mapped[int] = mapped_column(Integer, default=0, server_default="0")


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
