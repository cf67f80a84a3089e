"""Organizations, people, and the membership that ties a person to an organization with a role.

An account (hangar.auth.models.User) belongs to its person: it holds only the email and
password. What an
organization knows of the person (email, names, phone) is that organization's own record, kept
on the membership, so no organization can read or change what another has recorded.

An invitation names an email, not an account: a pending membership belongs to a placeholder
user of its own (no email, no password, a fresh id), which the person's account replaces when
they accept, so nothing an organization sees of a pending member says whether, or which,
account the email has.
"""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import ForeignKey, Index, String, UniqueConstraint, false
from sqlalchemy.orm import Mapped, mapped_column

from hangar.db.base import Base, id_column


class Organization(Base):
    __tablename__ = "organizations"
    id: Mapped[uuid.UUID] = id_column()
    name: Mapped[str] = mapped_column(String(200))
    created_at: Mapped[datetime]
    # Admins without two-factor sign-in are kept out of Org Settings (hangar.orgs.actors).
    require_two_factor: Mapped[bool] = mapped_column(server_default=false())


class Role(Base):
    """One of the four built-in roles, one row each per organization."""

    __tablename__ = "roles"
    __table_args__ = (UniqueConstraint("org_id", "name"),)
    id: Mapped[uuid.UUID] = id_column()
    org_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("organizations.id"))
    name: Mapped[str] = mapped_column(String(40))


class Membership(Base):
    """A person in one organization. `pending` is an invitation not yet accepted: it gives no
    access anywhere, and its `user_id` is a placeholder's. The email, names and phone are this
    organization's record of the person (the email as its admin typed it, lower-cased)."""

    __tablename__ = "memberships"
    __table_args__ = (Index(None, "org_id", "email"),)
    id: Mapped[uuid.UUID] = id_column()
    org_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("organizations.id"), index=True)
    user_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("users.id"), index=True)
    role_id: Mapped[uuid.UUID | None] = mapped_column(ForeignKey("roles.id"))
    status: Mapped[str] = mapped_column(String(20), default="active")
    is_discovery: Mapped[bool] = mapped_column(default=False)
    joined_at: Mapped[datetime | None]
    deleted_at: Mapped[datetime | None]
    email: Mapped[str] = mapped_column(String(320))
    first_name: Mapped[str] = mapped_column(String(100), default="")
    last_name: Mapped[str] = mapped_column(String(100), default="")
    phone: Mapped[str | None] = mapped_column(String(40))


class Invitation(Base):
    """The link that turns a pending membership into an active one.

    Only the SHA-256 of the token is stored, so a database dump holds no usable link. One per
    membership; single use (`accepted_at`) and short-lived (`expires_at`). `email` is whom it
    invites: only an account with that email can accept it.
    """

    __tablename__ = "invitations"
    id: Mapped[uuid.UUID] = id_column()
    membership_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("memberships.id"), unique=True)
    org_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("organizations.id"), index=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    email: Mapped[str] = mapped_column(String(320))
    created_at: Mapped[datetime]
    expires_at: Mapped[datetime] = mapped_column(index=True)  # retention prunes by it
    accepted_at: Mapped[datetime | None]
