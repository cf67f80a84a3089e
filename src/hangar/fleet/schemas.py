"""An aircraft, as the public API shows it: the schema and its row type (hangar.kit.schemas
says how the two go together). And a MEL item as the fleet's action answers it: it has no
public resource, so a row type only."""

from __future__ import annotations

import uuid
from datetime import date, datetime
from typing import TypedDict

from pydantic import Field

from hangar.fleet.models import MelCategory, MelStatus
from hangar.kit.schemas import Open


class Aircraft(Open):
    id: str
    tail_number: str
    aircraft_type: str
    display_name: str | None
    is_active: bool = Field(description="false while the aircraft is grounded")
    hobbs_current: float | None
    tach_current: float | None
    annual_due_date: date | None
    last_100hr_hobbs: float | None


class AircraftRow(TypedDict):
    """What the public read and the actions return: `Aircraft`'s fields, in its order."""

    id: uuid.UUID
    tail_number: str
    aircraft_type: str
    display_name: str | None
    is_active: bool
    hobbs_current: float | None
    tach_current: float | None
    annual_due_date: date | None
    last_100hr_hobbs: float | None


class MelItemRow(TypedDict):
    """A MEL item, as POST /mel-items answers: the mel.created fields, then the item's state."""

    id: uuid.UUID
    aircraft_id: uuid.UUID
    item_description: str
    mel_category: MelCategory
    deferral_date: date
    due_date: date
    status: MelStatus
    expired_at: datetime | None
    created_at: datetime
