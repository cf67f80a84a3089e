"""Maintenance log entries (FAR 43.9 records) and work orders."""

from __future__ import annotations

import uuid
from datetime import date, datetime
from typing import Literal

from sqlalchemy import ForeignKey, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from hangar.db.base import Base, id_column

EventType = Literal["100hr", "annual", "oil_change", "ad", "other"]
WorkOrderStatus = Literal["open", "in_progress", "completed", "cancelled"]


class MaintenanceLog(Base):
    __tablename__ = "maintenance_logs"
    id: Mapped[uuid.UUID] = id_column()
    org_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("organizations.id"))
    aircraft_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("aircraft.id"))
    event_type: Mapped[str] = mapped_column(String(20))
    event_date: Mapped[date | None]
    hobbs_at_event: Mapped[float | None]
    tach_at_event: Mapped[float | None]
    ap_cert_number: Mapped[str | None] = mapped_column(String(40))
    ia_cert_number: Mapped[str | None] = mapped_column(String(40))
    ia_name: Mapped[str | None] = mapped_column(String(200))
    ia_sign_off: Mapped[str | None] = mapped_column(String(2000))
    return_to_service: Mapped[bool | None]
    performed_by_name: Mapped[str | None] = mapped_column(String(200))
    performed_by_cert_number: Mapped[str | None] = mapped_column(String(40))
    performed_at: Mapped[datetime | None]
    last_100hr_hobbs: Mapped[float | None]
    annual_due_date: Mapped[date | None]
    work_performed: Mapped[str] = mapped_column(Text)  # kept whole; the public API cuts it
    created_at: Mapped[datetime]
    deleted_at: Mapped[datetime | None]


class WorkOrder(Base):
    __tablename__ = "work_orders"
    id: Mapped[uuid.UUID] = id_column()
    org_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("organizations.id"))
    aircraft_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("aircraft.id"))
    title: Mapped[str | None] = mapped_column(String(300))
    work_type: Mapped[str | None] = mapped_column(String(40))
    status: Mapped[str] = mapped_column(String(20), default="open")
    ap_signer_id: Mapped[uuid.UUID | None] = mapped_column(ForeignKey("users.id"))
    ia_signer_id: Mapped[uuid.UUID | None] = mapped_column(ForeignKey("users.id"))
    created_at: Mapped[datetime | None]
    completed_at: Mapped[datetime | None]
    deleted_at: Mapped[datetime | None]
