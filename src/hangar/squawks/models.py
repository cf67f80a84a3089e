"""Squawks: discrepancies reported against an aircraft."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Literal

from sqlalchemy import ForeignKey, String
from sqlalchemy.orm import Mapped, mapped_column

from hangar.db.base import Base, id_column

Severity = Literal["minor", "major", "grounding"]
SquawkStatus = Literal["open", "in_progress", "resolved", "deferred"]


class Squawk(Base):
    __tablename__ = "squawks"
    id: Mapped[uuid.UUID] = id_column()
    org_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("organizations.id"))
    aircraft_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("aircraft.id"))
    description: Mapped[str] = mapped_column(String(4000))
    severity: Mapped[str] = mapped_column(String(20))
    status: Mapped[str] = mapped_column(String(20), default="open")
    is_grounding: Mapped[bool] = mapped_column(default=False)
    reported_by: Mapped[uuid.UUID | None] = mapped_column(ForeignKey("users.id"))
    resolved_by: Mapped[uuid.UUID | None] = mapped_column(ForeignKey("users.id"))
    created_at: Mapped[datetime | None]
    resolved_at: Mapped[datetime | None]
    deleted_at: Mapped[datetime | None]
