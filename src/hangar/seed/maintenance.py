"""Seed maintenance records: FAR 43.9 log entries and work orders."""

from __future__ import annotations

import calendar
import random
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta

from hangar.foundation.ids import new_id
from hangar.seed.common import DAY, HOUR, Row, at, between, ms, pick, table
from hangar.seed.fleet import HISTORY_DAYS, Plane
from hangar.seed.vocab import (
    AD_STEPS,
    IA_SIGN_OFF,
    IA_SIGN_OFF_DISCREPANCIES,
    INSPECTION_STEPS,
    MECHANIC_NAMES,
    OIL_CHANGE_STEPS,
    OTHER_STEPS,
    WORK_ORDER_TITLES,
)

LOG_COLUMNS = (
    "id",
    "org_id",
    "aircraft_id",
    "event_type",
    "event_date",
    "hobbs_at_event",
    "tach_at_event",
    "ap_cert_number",
    "ia_cert_number",
    "ia_name",
    "ia_sign_off",
    "return_to_service",
    "performed_by_name",
    "performed_by_cert_number",
    "performed_at",
    "last_100hr_hobbs",
    "annual_due_date",
    "work_performed",
    "created_at",
    "deleted_at",
)
WORK_ORDER_COLUMNS = (
    "id",
    "org_id",
    "aircraft_id",
    "title",
    "work_type",
    "status",
    "ap_signer_id",
    "ia_signer_id",
    "created_at",
    "completed_at",
    "deleted_at",
)

_EVENTS = table((("oil_change", 35), ("100hr", 30), ("annual", 10), ("ad", 12), ("other", 13)))
_FIRST_EVENTS = (
    ("annual", ""),
    ("100hr", ""),
    ("oil_change", ""),
    ("ad", ""),
    ("other", "undated"),
    ("oil_change", "deleted"),
)
_WORK_STATUSES = table((("open", 20), ("in_progress", 20), ("completed", 50), ("cancelled", 10)))
_FIRST_WORK = (
    ("open", ""),
    ("in_progress", ""),
    ("completed", ""),
    ("cancelled", ""),
    ("completed", "untitled"),
    ("completed", "legacy"),
    ("open", "deleted"),
)


@dataclass(frozen=True)
class Mechanic:
    """Who signs: an in-house mechanic (with a user id) or an outside shop's (without)."""

    user_id: uuid.UUID | None
    name: str
    certificate: str
    is_ia: bool


def mechanics(rng: random.Random, staff: Sequence[tuple[uuid.UUID, str]]) -> list[Mechanic]:
    """The organization's mechanics, and outside shops' for when it has none or is busy;
    the first in-house one holds Inspection Authorization."""
    inside = [
        Mechanic(user_id, name, str(rng.randint(2_000_000, 3_999_999)), i == 0)
        for i, (user_id, name) in enumerate(staff)
    ]
    outside = [
        Mechanic(None, name, str(rng.randint(2_000_000, 3_999_999)), i < 2)
        for i, name in enumerate(MECHANIC_NAMES)
    ]
    return inside * 3 + outside  # most work is done in-house


def _steps(rng: random.Random, pool: Sequence[str], target: int) -> list[str]:
    """Most steps of a checklist, in its order, until the text is about `target` long."""
    picked: list[str] = []
    length = 0
    for step in pool:
        if length >= target:
            break
        if rng.random() < 0.8:
            picked.append(step)
            length += len(step) + 1
    return picked or [pool[0]]


def _work_performed(rng: random.Random, event: str, hobbs: float | None) -> str:
    if event == "oil_change":
        return " ".join(_steps(rng, OIL_CHANGE_STEPS, rng.randint(200, 500)))
    if event == "ad":
        return " ".join(_steps(rng, AD_STEPS, rng.randint(150, 600)))
    if event == "other":
        return " ".join(_steps(rng, OTHER_STEPS, rng.randint(80, 400)))
    kind = "an annual" if event == "annual" else "a 100-hour"
    meter = f" at {hobbs:.1f} Hobbs" if hobbs is not None else ""
    intro = (
        f"Performed {kind} inspection{meter} in accordance with 14 CFR Part 43 Appendix D "
        "and the manufacturer's inspection checklist."
    )
    # Long on purpose: the API cuts this field at 1000 characters, and inspection entries
    # in a real logbook run to a few thousand.
    body = _steps(rng, INSPECTION_STEPS, rng.randint(900, 2400))
    ads = _steps(rng, AD_STEPS, 200) if event == "annual" else []
    closing = "All work performed in accordance with current FAA-approved data."
    return " ".join([intro, *body, *ads, closing])


def _year_later(day: date) -> date:
    """The end of the twelfth calendar month after `day`, when an annual runs out."""
    month = day.month
    return date(day.year + 1, month, calendar.monthrange(day.year + 1, month)[1])


def log_rows(
    org_id: uuid.UUID,
    count: int,
    rng: random.Random,
    now: datetime,
    planes: Sequence[Plane],
    crew: Sequence[Mechanic],
) -> Iterator[Row]:
    """Entries at random dates of the history; each reads its aircraft's meters at that
    date, so per aircraft the Hobbs grows with the date."""
    today = now.date()
    now_ts = now.timestamp()
    inspectors = [m for m in crew if m.is_ia]
    for i in range(count):
        event, shape = _FIRST_EVENTS[i] if i < len(_FIRST_EVENTS) else (rng.choice(_EVENTS), "")
        if not shape:
            r = rng.random()
            shape = "deleted" if r < 0.02 else "undated" if r < 0.03 and event == "other" else ""
        plane = rng.choice(planes)
        day = today - timedelta(days=rng.randint(0, HISTORY_DAYS))
        performed_ts = datetime.combine(day, time(15), now.tzinfo).timestamp()
        performed_ts += rng.randint(0, 8 * 60) * 60
        performed_ts = min(performed_ts, now_ts)
        undated = shape == "undated"  # a paper entry with no date or meter reading
        hobbs = None if undated else plane.hobbs_at(performed_ts)
        mechanic = rng.choice(crew)
        annual = event == "annual"
        inspector = rng.choice(inspectors) if annual and inspectors else None
        airworthy = not annual or rng.random() < 0.9
        sign_off = None
        if inspector is not None:
            sign_off = IA_SIGN_OFF if airworthy else IA_SIGN_OFF_DISCREPANCIES.format(date=day)
        created_ts = min(performed_ts + between(rng, 0.1, 3) * DAY, now_ts)
        yield (
            new_id(ms(created_ts)),
            org_id,
            plane.id,
            event,
            None if undated else day,
            hobbs,
            None if undated else plane.tach_at(performed_ts),
            mechanic.certificate,
            inspector.certificate if inspector else None,
            inspector.name if inspector else None,
            sign_off,
            None if event == "other" and rng.random() < 0.3 else airworthy,
            mechanic.name,
            mechanic.certificate,
            None if undated else at(performed_ts),
            hobbs if event in ("100hr", "annual") else None,
            _year_later(day) if annual else None,
            _work_performed(rng, event, hobbs),
            at(created_ts),
            at(between(rng, created_ts, now_ts)) if shape == "deleted" else None,
        )


def work_order_rows(
    org_id: uuid.UUID,
    count: int,
    rng: random.Random,
    now: datetime,
    planes: Sequence[Plane],
    crew: Sequence[Mechanic],
) -> Iterator[Row]:
    now_ts = now.timestamp()
    signers = [m.user_id for m in crew if m.user_id is not None]
    inspectors = [m.user_id for m in crew if m.user_id is not None and m.is_ia]
    for i in range(count):
        status, shape = _FIRST_WORK[i] if i < len(_FIRST_WORK) else (rng.choice(_WORK_STATUSES), "")
        if not shape:
            r = rng.random()
            shape = "deleted" if r < 0.02 else "untitled" if r < 0.04 else ""
        title, work_type = rng.choice(WORK_ORDER_TITLES)
        age_days = between(rng, 0, 45 if status in ("open", "in_progress") else 540)
        created_ts = now_ts - age_days * DAY
        done_ts = min(created_ts + between(rng, 2 * HOUR / DAY, 14) * DAY, now_ts)
        legacy = shape == "legacy"  # carried over from the paper system: no dates
        untitled = shape == "untitled"  # opened in a hurry from the ramp
        yield (
            new_id(ms(created_ts)),
            org_id,
            rng.choice(planes).id,
            None if untitled else title,
            None if untitled else work_type,
            status,
            pick(rng, signers) if status in ("in_progress", "completed") else None,
            pick(rng, inspectors) if status == "completed" and title.startswith("Annual") else None,
            None if legacy else at(created_ts),
            at(done_ts) if status == "completed" and not legacy else None,
            at(between(rng, created_ts, now_ts)) if shape == "deleted" else None,
        )
