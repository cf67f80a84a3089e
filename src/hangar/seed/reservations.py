"""Seed reservations: 18 months of history and 3 months of bookings ahead.

This is the generator that runs a million times, so the per-row work is table lookups and
float arithmetic; every datetime a row can start at is built once, up front.
"""

from __future__ import annotations

import functools
import random
import uuid
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime, timedelta
from typing import Protocol, TypeVar

from hangar.foundation.ids import new_id
from hangar.seed.common import DAY, Row, at, ms, table
from hangar.seed.fleet import Plane
from hangar.seed.vocab import CANCELLATION_REASONS

COLUMNS = (
    "id",
    "org_id",
    "aircraft_id",
    "pilot_id",
    "instructor_id",
    "activity_type",
    "start_time",
    "end_time",
    "status",
    "is_backup",
    "checked_in_at",
    "completed_at",
    "cancellation_reason",
    "hobbs_out",
    "hobbs_in",
    "created_at",
    "deleted_at",
)

T = TypeVar("T")

PAST_DAYS = 548
AHEAD_DAYS = 92

# Local flying day 06:00-19:00 at UTC-7, mostly on the hour: many bookings share a start.
_SLOT_MINUTES = table(
    ((h * 60 + m, w) for h in (*range(13, 24), 0, 1) for m, w in ((0, 6), (30, 3), (15, 1)))
)
_ACTIVITIES = table(
    (
        ("dual_training", 45),
        ("solo", 22),
        ("ground", 10),
        ("checkride", 4),
        ("flight_review", 7),
        ("checkout", 12),
    )
)
_HOURS = {
    "dual_training": (1.5, 2.0, 2.0, 2.5),
    "solo": (1.0, 1.5, 2.0, 2.0, 3.0),
    "ground": (1.0, 1.0, 2.0),
    "checkride": (3.0, 4.0),
    "flight_review": (2.0,),
    "checkout": (1.5, 2.0),
}
# Each activity's lengths, as the rows take them: (the timedelta, the hours).
_LENGTHS = {a: [(timedelta(hours=h), h) for h in hours] for a, hours in _HOURS.items()}
_PAST = table(
    (
        ("completed", 78),
        ("cancelled", 11),
        ("no_show", 4),
        ("expired", 3),
        ("confirmed", 3),  # not closed out by the front desk
        ("standby", 1),
    )
)
_AHEAD = table((("confirmed", 86), ("standby", 9), ("cancelled", 5)))
_IN_PAST = {"completed", "cancelled", "no_show", "expired"}
_SHAPES = table((("", 982), ("deleted", 10), ("no_pilot", 4), ("undated", 2), ("open_end", 2)))

# (status, activity, shape) of the first rows, so even a small seed covers every case.
_FIRST = (
    ("completed", "dual_training", ""),
    ("confirmed", "solo", ""),
    ("standby", "ground", ""),
    ("cancelled", "checkride", ""),
    ("no_show", "flight_review", ""),
    ("expired", "checkout", ""),
    ("standby", "dual_training", "undated"),
    ("confirmed", "solo", "open_end"),
    ("completed", "dual_training", "deleted"),
    ("completed", "solo", ""),
    ("confirmed", "checkout", "no_pilot"),
)


def _slots(now: datetime) -> tuple[list[float], list[float]]:
    """Start times (epoch seconds) in the window, split into past and ahead of `now`."""
    midnight = now.replace(hour=0, minute=0, second=0, microsecond=0).timestamp()
    past: list[float] = []
    ahead: list[float] = []
    now_ts = now.timestamp()
    for day in range(-PAST_DAYS, AHEAD_DAYS):
        base = midnight + day * DAY
        for minute in _SLOT_MINUTES:
            ts = base + minute * 60
            (past if ts < now_ts else ahead).append(ts)
    return past, ahead


class _Choose(Protocol):
    def __call__(self, values: Sequence[T], /) -> T: ...


def _chooser(random_: Callable[[], float]) -> _Choose:
    """What rng.choice does, for a third of its cost: it runs ten times a row."""

    def choice(values: Sequence[T]) -> T:
        return values[int(random_() * len(values))]

    return choice


def reservation_rows(
    org_id: uuid.UUID,
    count: int,
    rng: random.Random,
    now: datetime,
    planes: Sequence[Plane],
    pilots: Sequence[uuid.UUID],
    instructors: Sequence[uuid.UUID],
) -> Iterator[Row]:
    """`count` reservations, in the order they were booked (created_at), as the application
    would have written them: ids (UUIDv7 of created_at) ascend, and the table's pages hold
    bookings made about the same time. Writing in that order also keeps the inserts into
    both of the table's indexes on a few hot pages instead of all over them."""
    random_ = rng.random
    choice = _chooser(random_)
    now_ts = now.timestamp()
    starts, created = _booking_times(count, now, choice, random_)
    moment = functools.cache(at)  # each instant's datetime built once: rows share them
    for i in sorted(range(count), key=created.__getitem__):
        start_ts, created_ts = starts[i], created[i]
        if i < len(_FIRST):
            status, activity, shape = _FIRST[i]
        else:
            activity = choice(_ACTIVITIES)
            status = choice(_PAST if start_ts < now_ts else _AHEAD)
            shape = choice(_SHAPES)
        length, hours = choice(_LENGTHS[activity])
        begin = moment(start_ts)
        start: datetime | None = begin
        end: datetime | None = begin + length
        if shape == "undated":  # a waitlist entry without a slot yet
            start = end = None
            status = "cancelled" if status in _IN_PAST else "standby"
        elif shape == "open_end":
            end = None
        aircraft = None if activity == "ground" or not planes else choice(planes)
        checked_in = completed = hobbs_out = hobbs_in = None
        if status == "completed":
            checked_in, completed, hobbs_out, hobbs_in = _closed_out(
                start_ts, end, hours, aircraft, random_
            )
        yield (
            new_id(ms(created_ts)),
            org_id,
            None if aircraft is None else aircraft.id,
            None if shape == "no_pilot" or not pilots else choice(pilots),
            None if activity == "solo" or not instructors else choice(instructors),
            activity,
            start,
            end,
            status,
            status == "standby" and random_() < 0.3,
            checked_in,
            completed,
            choice(CANCELLATION_REASONS) if status == "cancelled" else None,
            hobbs_out,
            hobbs_in,
            at(created_ts),
            at(created_ts + (now_ts - created_ts) * random_()) if shape == "deleted" else None,
        )


def _booking_times(
    count: int,
    now: datetime,
    choice: Callable[[Sequence[float]], float],
    random_: Callable[[], float],
) -> tuple[list[float], list[float]]:
    """When each booking is for and when it was made (epoch seconds), drawn for every row
    first (floats only: a few dozen bytes a row), so that the rows can then be made in
    booking order."""
    now_ts = now.timestamp()
    past, ahead = _slots(now)
    every = past + ahead
    starts = [
        choice(past if _FIRST[i][0] in _IN_PAST else ahead) if i < len(_FIRST) else choice(every)
        for i in range(count)
    ]
    created = [
        min(start_ts - (0.5 + 29.5 * random_() * random_()) * DAY, now_ts - random_() * 3 * DAY)
        for start_ts in starts
    ]
    return starts, created


def _closed_out(
    start_ts: float,
    end: datetime | None,
    hours: float,
    aircraft: Plane | None,
    random_: Callable[[], float],
) -> tuple[datetime | None, datetime | None, float | None, float | None]:
    """A completed booking's check-in, completion and Hobbs times out and in."""
    checked_in = at(start_ts - (5 + 25 * random_()) * 60)
    completed = hobbs_out = hobbs_in = None
    if end is not None:
        completed = end + timedelta(minutes=45 * random_())
    if aircraft is not None:
        hobbs_out = aircraft.hobbs_at(start_ts)
        if hobbs_out is not None:
            hobbs_in = round(hobbs_out + hours * (0.7 + 0.25 * random_()), 1)
    return checked_in, completed, hobbs_out, hobbs_in
