"""An aircraft, as the public API and its OpenAPI description show it.

The single list of the resource's public fields: the queries select exactly these names.
Open (extra keys allowed: `hangar.kit.schemas.Open`), as the spec's versioning asks.
"""

from __future__ import annotations

from datetime import date

from pydantic import Field

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
