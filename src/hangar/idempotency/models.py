"""The idempotency keys' one table."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import ForeignKey, Index, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from hangar.db.base import Base


class IdempotencyKey(Base):
    """One key an account sent to one organization's management API, and what became of it.

    Scoped to the organization and the account that sent it: another admin's key, or the
    same key sent to another organization, is another row, so a stored answer (which may hold
    a secret shown once) is only ever replayed to the person whose request made it. The
    route is part of the fingerprint, not of the key: the same key on another route is a
    reuse (422), as Stripe answers.

    `state` is "running" from the claim until the action's answer is kept ("done"); an
    answer not kept deletes the row. `created_at` is when the key was claimed (a claim taken
    over after ABANDONED_AFTER is claimed anew) and doubles as the claim's identity: keeping
    or letting go of an answer changes the row only while it is still that claim. The
    account's id has no foreign key: the row lives a day, and must never stand in the way
    of an account's removal.
    """

    __tablename__ = "idempotency_keys"
    org_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("organizations.id"), primary_key=True)
    user_id: Mapped[uuid.UUID] = mapped_column(primary_key=True)
    key: Mapped[str] = mapped_column(String(255), primary_key=True)
    # SHA-256 (hex) of the method, the path and the body (hangar.idempotency.replay).
    fingerprint: Mapped[str] = mapped_column(String(64))
    state: Mapped[str] = mapped_column(String(7))  # running or done
    created_at: Mapped[datetime]
    # The kept answer, once done: its status, and its headers and body sealed (Fernet under
    # HANGAR_SECRET_KEY): a new API key's or webhook secret's answer holds the secret.
    status: Mapped[int | None]
    answer_sealed: Mapped[str | None] = mapped_column(Text)

    __table_args__ = (
        # Retention deletes keys a day old, oldest first, a range of this index.
        Index("ix_idempotency_keys_created_at", "created_at"),
    )
