"""Ticks of scheduled jobs: one row per job and minute, so each tick runs once in a cluster."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import String
from sqlalchemy.orm import Mapped, mapped_column

from hangar.db.base import Base


class JobTick(Base):
    __tablename__ = "job_ticks"
    job: Mapped[str] = mapped_column(String(60), primary_key=True)
    tick: Mapped[datetime] = mapped_column(primary_key=True)
    ran_at: Mapped[datetime]
