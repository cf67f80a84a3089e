"""Seed squawks: discrepancies reported against the fleet and what became of them."""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterator, Sequence
from datetime import datetime

from hangar.foundation.ids import new_id
from hangar.seed.common import DAY, Row, at, between, ms, pick, table
from hangar.seed.fleet import Plane
from hangar.seed.vocab import RESOLUTIONS, SQUAWKS

COLUMNS = (
    "id",
    "org_id",
    "aircraft_id",
    "description",
    "severity",
    "status",
    "is_grounding",
    "reported_by",
    "resolved_by",
    "created_at",
    "resolved_at",
    "deleted_at",
)

_SEVERITIES = table((("minor", 60), ("major", 30), ("grounding", 10)))
_STATUSES = table((("open", 25), ("in_progress", 15), ("resolved", 50), ("deferred", 10)))
_CONTEXT = (
    "",
    "",
    " Noticed on preflight.",
    " Reported after a dual lesson.",
    " Found on the post-flight walkaround.",
    " Student reported it after a solo cross-country.",
)
# (severity, status, shape) of the first rows: every severity and status, an undated legacy
# record and a soft-deleted duplicate.
_FIRST = (
    ("minor", "open", ""),
    ("major", "in_progress", ""),
    ("grounding", "open", ""),
    ("minor", "deferred", ""),
    ("grounding", "resolved", ""),
    ("major", "resolved", "legacy"),
    ("minor", "open", "deleted"),
)


def squawk_rows(
    org_id: uuid.UUID,
    count: int,
    rng: random.Random,
    now: datetime,
    planes: Sequence[Plane],
    reporters: Sequence[uuid.UUID],
    mechanics: Sequence[uuid.UUID],
) -> Iterator[Row]:
    now_ts = now.timestamp()
    grounded = [p for p in planes if not p.is_active]
    for i in range(count):
        if i < len(_FIRST):
            severity, status, shape = _FIRST[i]
        else:
            severity, status = rng.choice(_SEVERITIES), rng.choice(_STATUSES)
            r = rng.random()
            shape = "deleted" if r < 0.02 else "legacy" if r < 0.03 else ""
        grounding = severity == "grounding"
        if grounding and status == "deferred":
            status = "open"  # an item that grounds the aircraft cannot be deferred
        if grounding and status != "resolved" and not grounded:
            status = "resolved"  # an unresolved grounding squawk belongs to a grounded aircraft
        plane = rng.choice(grounded if grounding and status != "resolved" else planes)
        # Open items are recent; the record of resolved ones goes back the whole history.
        age_days = between(rng, 0, 45 if status in ("open", "in_progress") else 540)
        created_ts = now_ts - age_days * DAY
        resolved = status == "resolved"
        resolved_ts = min(created_ts + between(rng, 0.05, 20) * DAY, now_ts)
        description = rng.choice(SQUAWKS) + rng.choice(_CONTEXT)
        if resolved:
            description += f" Resolution: {rng.choice(RESOLUTIONS).lower()}."
        legacy = shape == "legacy"  # imported from paper: no dates were kept
        yield (
            new_id(ms(created_ts)),
            org_id,
            plane.id,
            description,
            severity,
            status,
            grounding,
            pick(rng, reporters),
            pick(rng, mechanics) if resolved else None,
            None if legacy else at(created_ts),
            at(resolved_ts) if resolved and not legacy else None,
            at(between(rng, created_ts, now_ts)) if shape == "deleted" else None,
        )
