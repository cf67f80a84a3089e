"""The accounts feature's own table: the operator's password-reset links."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import ForeignKey, String
from sqlalchemy.orm import Mapped, mapped_column

from hangar.db.base import Base, id_column


class PasswordReset(Base):
    """A live recovery link for one account (accounts.service).

    Only the SHA-256 of the token is stored, so a database dump holds no usable link. At most
    one per account (`user_id` is unique: a new link replaces the last), and the row is
    deleted when the link is used, so the table never holds more rows than there are
    accounts, and a used or replaced link finds nothing.
    """

    __tablename__ = "password_resets"
    id: Mapped[uuid.UUID] = id_column()
    user_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("users.id"), unique=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime]
    expires_at: Mapped[datetime]
