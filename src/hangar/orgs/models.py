"""Organizations, people, and the membership that ties a person to an organization with a role."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import ForeignKey, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from hangar.db.base import Base, id_column

ROLE_NAMES = ("admin", "instructor", "mechanic", "member")
MEMBER_STATUSES = ("active", "inactive", "pending")


class Organization(Base):
    __tablename__ = "organizations"
    id: Mapped[uuid.UUID] = id_column()
    name: Mapped[str] = mapped_column(String(200))
    created_at: Mapped[datetime]


class User(Base):
    """A person; one user may belong to several organizations."""

    __tablename__ = "users"
    id: Mapped[uuid.UUID] = id_column()
    email: Mapped[str] = mapped_column(String(320), unique=True)  # stored lower-cased
    password_hash: Mapped[str | None] = mapped_column(String(200))
    first_name: Mapped[str] = mapped_column(String(100), default="")
    last_name: Mapped[str] = mapped_column(String(100), default="")
    phone: Mapped[str | None] = mapped_column(String(40))
    created_at: Mapped[datetime]


class Role(Base):
    """One of the four built-in roles, one row each per organization."""

    __tablename__ = "roles"
    __table_args__ = (UniqueConstraint("org_id", "name"),)
    id: Mapped[uuid.UUID] = id_column()
    org_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("organizations.id"))
    name: Mapped[str] = mapped_column(String(40))


class Membership(Base):
    __tablename__ = "memberships"
    id: Mapped[uuid.UUID] = id_column()
    org_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("organizations.id"), index=True)
    user_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("users.id"), index=True)
    role_id: Mapped[uuid.UUID | None] = mapped_column(ForeignKey("roles.id"))
    status: Mapped[str] = mapped_column(String(20), default="active")
    is_discovery: Mapped[bool] = mapped_column(default=False)
    joined_at: Mapped[datetime | None]
    deleted_at: Mapped[datetime | None]
