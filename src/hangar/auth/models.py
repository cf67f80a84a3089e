"""Accounts and credentials: a person's account and its browser sessions.

Of a session cookie, only its SHA-256 is ever stored; likewise of a recovery code and of a
sign-in challenge."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import BigInteger, ForeignKey, String
from sqlalchemy.orm import Mapped, mapped_column

from hangar.db.base import Base, id_column


class User(Base):
    """A person's account; one user may belong to several organizations.

    `password_hash` is NULL until the person sets a password through an invitation link that
    made the account, the operator's recovery link (`hangar user reset-password`), or the
    operator's `hangar user create --password`: such an account cannot sign in. `email` is NULL only
    for the placeholder of a pending membership (see the module's docstring), which never
    signs in either; it becomes the person's account if they set their password through the
    invitation, and is deleted if they accept with an account they already have.
    """

    __tablename__ = "users"
    id: Mapped[uuid.UUID] = id_column()
    # Stored lower-cased; unique among the non-NULL values (both databases allow many NULLs).
    email: Mapped[str | None] = mapped_column(String(320), unique=True)
    password_hash: Mapped[str | None] = mapped_column(String(200))
    created_at: Mapped[datetime]


class UserSession(Base):
    """A signed-in browser. The cookie holds a random token; only its SHA-256 is stored."""

    __tablename__ = "sessions"
    id: Mapped[uuid.UUID] = id_column()
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    user_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("users.id"), index=True)
    csrf_token: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime]
    last_seen_at: Mapped[datetime]
    # The absolute end, however active the session is; retention prunes by it.
    expires_at: Mapped[datetime] = mapped_column(index=True)


class TwoFactor(Base):
    """An account's TOTP authenticator (hangar.auth.two_factor): its secret, sealed with
    HANGAR_SECRET_KEY; `confirmed_at` NULL until a first code proves the app holds it (only
    then does sign-in ask for codes); `last_step`, the 30-second step of the last code used,
    so that no code is used twice."""

    __tablename__ = "two_factor"
    user_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("users.id"), primary_key=True)
    secret_encrypted: Mapped[str] = mapped_column(String(300))
    created_at: Mapped[datetime]
    confirmed_at: Mapped[datetime | None]
    last_step: Mapped[int | None] = mapped_column(BigInteger)


class RecoveryCode(Base):
    """One of an account's ten one-time recovery codes: only its SHA-256 is stored."""

    __tablename__ = "recovery_codes"
    id: Mapped[uuid.UUID] = id_column()
    user_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("users.id"), index=True)
    code_hash: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime]
    used_at: Mapped[datetime | None]


class SignInChallenge(Base):
    """A sign-in whose password was right, waiting for its second factor: the cookie holds a
    random token, only its SHA-256 is stored; one per account (a new sign-in replaces it)."""

    __tablename__ = "sign_in_challenges"
    id: Mapped[uuid.UUID] = id_column()
    user_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("users.id"), unique=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime]
    expires_at: Mapped[datetime]
