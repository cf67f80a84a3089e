"""A squawk, as the public API and its OpenAPI description show it.

The single list of the resource's public fields: the queries select exactly these names.
Open (extra keys allowed: `hangar.kit.schemas.Open`), as the spec's versioning asks.
"""

from __future__ import annotations

from datetime import datetime

from hangar.kit.schemas import Open
from hangar.squawks.models import Severity, SquawkStatus


class Squawk(Open):
    id: str
    aircraft_id: str
    description: str
    severity: Severity
    status: SquawkStatus
    is_grounding: bool
    created_at: datetime | None
    resolved_at: datetime | None
