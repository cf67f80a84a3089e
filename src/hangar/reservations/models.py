"""Reservations: bookings of an aircraft, an instructor, or both."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Literal, get_args

from sqlalchemy import BigInteger, ForeignKey, String
from sqlalchemy.orm import Mapped, mapped_column

from hangar.db.base import Base, id_column

ActivityType = Literal["dual_training", "solo", "ground", "checkride", "flight_review", "checkout"]
ReservationStatus = Literal["confirmed", "standby", "completed", "cancelled", "no_show", "expired"]
STATUSES: tuple[str, ...] = get_args(ReservationStatus)


class Reservation(Base):
    # The read path's index, (org_id, start_time DESC, id DESC) WHERE deleted_at IS NULL,
    # lives in the migration, where each dialect's spelling of it can be written out.
    __tablename__ = "reservations"
    id: Mapped[uuid.UUID] = id_column()
    org_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("organizations.id"))
    aircraft_id: Mapped[uuid.UUID | None] = mapped_column(ForeignKey("aircraft.id"))
    pilot_id: Mapped[uuid.UUID | None] = mapped_column(ForeignKey("users.id"))
    instructor_id: Mapped[uuid.UUID | None] = mapped_column(ForeignKey("users.id"))
    activity_type: Mapped[str] = mapped_column(String(20))
    start_time: Mapped[datetime | None]
    end_time: Mapped[datetime | None]
    status: Mapped[str] = mapped_column(String(20))
    is_backup: Mapped[bool] = mapped_column(default=False)
    checked_in_at: Mapped[datetime | None]
    completed_at: Mapped[datetime | None]
    cancellation_reason: Mapped[str | None] = mapped_column(String(500))
    hobbs_out: Mapped[float | None]
    hobbs_in: Mapped[float | None]
    created_at: Mapped[datetime]
    deleted_at: Mapped[datetime | None]


class ReservationChanges(Base):
    """How many times, and when last, an organization's reservations changed: the calendar
    feed's validators (its ETag and Last-Modified). Every reservation command counts its
    change here in its own transaction, so a poll answered 304 never hides a committed
    change, and the feed's poll reads one row instead of 500."""

    __tablename__ = "reservation_changes"
    org_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("organizations.id"), primary_key=True)
    version: Mapped[int] = mapped_column(BigInteger)
    changed_at: Mapped[datetime]
