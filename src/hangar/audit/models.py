"""The audit log's one table."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import JSON, ForeignKey, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from hangar.db.base import Base, id_column


class AuditEntry(Base):
    """One admin action, or hangar's own change to a setting (audit.commands.record).

    The actor's id is kept without a foreign key, and their email as it was: an entry
    outlives the account, and says who acted even once the account is gone or renamed.
    `actor_kind` tells the two actors without an account apart (the operator's command
    line, hangar itself), which the API shows alike, as a null actor.
    """

    __tablename__ = "audit_entries"
    id: Mapped[uuid.UUID] = id_column()
    org_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("organizations.id"))
    at: Mapped[datetime]
    actor_kind: Mapped[str] = mapped_column(String(10))  # user, operator or system
    actor_user_id: Mapped[uuid.UUID | None]
    actor_email: Mapped[str | None] = mapped_column(String(320))
    client_address: Mapped[str | None] = mapped_column(String(64))
    action: Mapped[str] = mapped_column(String(40))
    target_type: Mapped[str] = mapped_column(String(30))
    target_id: Mapped[str] = mapped_column(String(64))
    details: Mapped[dict[str, Any]] = mapped_column(JSON)

    __table_args__ = (
        # A page of one organization's log, newest first, from where the last one ended.
        Index("ix_audit_entries_org_id_at_id", "org_id", "at", "id"),
        # Retention deletes the oldest of every organization's, a range of this index.
        Index("ix_audit_entries_at", "at"),
    )
