"""Aircraft and their Minimum Equipment List deferrals."""

from __future__ import annotations

import uuid
from datetime import date, datetime
from typing import Literal

from sqlalchemy import ForeignKey, String
from sqlalchemy.orm import Mapped, mapped_column

from hangar.db.base import Base, id_column

MelCategory = Literal["a", "b", "c", "d"]
MelStatus = Literal["deferred", "expired", "cleared"]


class Aircraft(Base):
    __tablename__ = "aircraft"
    id: Mapped[uuid.UUID] = id_column()
    org_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("organizations.id"), index=True)
    tail_number: Mapped[str] = mapped_column(String(20))
    aircraft_type: Mapped[str] = mapped_column(String(100))
    display_name: Mapped[str | None] = mapped_column(String(100))
    is_active: Mapped[bool] = mapped_column(default=True)
    hobbs_current: Mapped[float | None]
    tach_current: Mapped[float | None]
    annual_due_date: Mapped[date | None]
    last_100hr_hobbs: Mapped[float | None]
    created_at: Mapped[datetime]
    deleted_at: Mapped[datetime | None]


class MelItem(Base):
    __tablename__ = "mel_items"
    id: Mapped[uuid.UUID] = id_column()
    org_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("organizations.id"), index=True)
    aircraft_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("aircraft.id"))
    item_description: Mapped[str] = mapped_column(String(2000))
    mel_category: Mapped[str] = mapped_column(String(1))
    status: Mapped[str] = mapped_column(String(20), default="deferred")
    deferral_date: Mapped[date]
    due_date: Mapped[date]
    expired_at: Mapped[datetime | None]
    created_at: Mapped[datetime]
