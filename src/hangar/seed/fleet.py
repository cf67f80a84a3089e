"""Seed aircraft, and the hours model every other generator reads meters from.

An aircraft flies a steady number of hours a day, so its Hobbs at any moment of the past is
`hobbs_now - rate * days_ago`: reservations, maintenance entries and the aircraft's own
meters agree, and meters grow with time.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta

from hangar.foundation.ids import new_id
from hangar.seed.common import DAY, Row, at, between, ms, table
from hangar.seed.vocab import AIRCRAFT_TYPES, TAIL_LETTERS

COLUMNS = (
    "id",
    "org_id",
    "tail_number",
    "aircraft_type",
    "display_name",
    "is_active",
    "hobbs_current",
    "tach_current",
    "annual_due_date",
    "last_100hr_hobbs",
    "created_at",
    "deleted_at",
)

# How far back the oldest seeded record with a meter reading goes (maintenance history).
HISTORY_DAYS = 3 * 365
_TYPES = table((type_, weight) for type_, _, weight in AIRCRAFT_TYPES)
_NICKNAMES = {type_: nickname for type_, nickname, _ in AIRCRAFT_TYPES}
# Airframes built since the 2000s have flown fewer hours than a 1970s Cessna.
_NEWER = ("Diamond", "Cirrus", "Cessna 172S", "Cessna 182T")


@dataclass(frozen=True)
class Plane:
    """A live aircraft as the other generators see it."""

    id: uuid.UUID
    is_active: bool
    hobbs_now: float | None
    tach_ratio: float
    hours_per_day: float
    now_ts: float

    def hobbs_at(self, ts: float) -> float | None:
        if self.hobbs_now is None:
            return None
        return round(self.hobbs_now - self.hours_per_day * (self.now_ts - ts) / DAY, 1)

    def tach_at(self, ts: float) -> float | None:
        hobbs = self.hobbs_at(ts)
        return None if hobbs is None else round(hobbs * self.tach_ratio, 1)


def plane(
    rng: random.Random,
    now: datetime,
    *,
    id: uuid.UUID,
    is_active: bool,
    hobbs: float | None,
    tach: float | None,
) -> Plane:
    """The hours model of an aircraft already in the database (seeded now or before)."""
    ratio = tach / hobbs if hobbs and tach and tach < hobbs else 0.85
    # Never so fast that the meter would read below zero at the start of the history.
    rate = min(between(rng, 1.2, 3.0), (hobbs or 0.0) / (HISTORY_DAYS + 30))
    return Plane(id, is_active, hobbs, ratio, rate, now.timestamp())


def tail_number(rng: random.Random) -> str:
    """A US registration: N, then a digit 1-9, up to five characters in all, letters last."""
    letters = rng.choice((0, 1, 1, 2, 2, 2))
    digits = rng.randint(2, 5 - letters)
    body = str(rng.randint(1, 9)) + "".join(str(rng.randint(0, 9)) for _ in range(digits - 1))
    return "N" + body + "".join(rng.choice(TAIL_LETTERS) for _ in range(letters))


def aircraft_rows(
    org_id: uuid.UUID, count: int, rng: random.Random, now: datetime, taken: Collection[str]
) -> Iterator[Row]:
    """`count` aircraft; every tenth from the fourth is grounded, from the seventh retired."""
    used = set(taken)
    today = now.date()
    now_ts = now.timestamp()
    for i in range(count):
        tail = tail_number(rng)
        while tail in used:
            tail = tail_number(rng)
        used.add(tail)
        type_ = rng.choice(_TYPES)
        newer = type_.startswith(_NEWER)
        hobbs = round(between(rng, 1500, 6000) if newer else between(rng, 4000, 12000), 1)
        is_active = i % 10 != 3
        # A grounded aircraft is often one whose annual ran out.
        annual_in = rng.randint(-40, -1) if not is_active and rng.random() < 0.5 else None
        created_ts = now_ts - between(rng, 1, 6) * 365 * DAY
        deleted = at(now_ts - between(rng, 30, 400) * DAY) if i % 10 == 6 else None
        yield (
            new_id(ms(created_ts)),
            org_id,
            tail,
            type_,
            f"{_NICKNAMES[type_]} {tail[-3:]}" if rng.random() < 0.7 else None,
            is_active,
            hobbs,
            round(hobbs * between(rng, 0.80, 0.90), 1),
            today + timedelta(days=annual_in if annual_in is not None else rng.randint(5, 360)),
            round(hobbs - between(rng, 3, 97), 1),
            at(created_ts),
            deleted,
        )
