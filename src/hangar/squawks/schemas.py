"""A squawk, as the public API shows it: the schema and its row type (hangar.kit.schemas says
how the two go together)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import TypedDict

from hangar.kit.schemas import Open
from hangar.squawks.models import Severity
from hangar.squawks.models import SquawkStatus as SquawkStatus  # the read API's filter


class Squawk(Open):
    id: str
    aircraft_id: str
    description: str
    severity: Severity
    status: SquawkStatus
    is_grounding: bool
    created_at: datetime | None
    resolved_at: datetime | None


class SquawkRow(TypedDict):
    """What the public read and the actions return: `Squawk`'s fields, in its order."""

    id: uuid.UUID
    aircraft_id: uuid.UUID
    description: str
    severity: Severity
    status: SquawkStatus
    is_grounding: bool
    created_at: datetime | None
    resolved_at: datetime | None
