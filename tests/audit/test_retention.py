"""HANGAR_AUDIT_RETENTION_DAYS: entries older than it (365 days by default) are pruned by the
retention job, across organizations, in batches; younger ones stay. A bad value stops a
process at its start with one line, as the other settings do."""

from __future__ import annotations

import dataclasses
import uuid
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from hangar.audit import service as audit
from hangar.audit.service import SYSTEM
from hangar.foundation.config import ConfigError, load_settings
from hangar.kit.container import Services
from tests.fixtures.audit import stored
from tests.fixtures.factories import Org
from tests.fixtures.retention import NOW, pruned
from tests.fixtures.subprocesses import refused_at_start

REFUSAL = "HANGAR_AUDIT_RETENTION_DAYS must be a whole number of days from 1 to 3650, not {!r}"


async def entry_at(services: Services, org: Org, at: datetime) -> uuid.UUID:
    async with services.engine.begin() as conn:
        return await audit.record(conn, org.id, SYSTEM, "webhook.disabled", ("webhook", "w"), at)


async def test_entries_past_the_window_are_pruned_and_younger_ones_kept(
    services: Services, org: Org, other: Org
) -> None:
    await pruned(services)  # what other tests left behind at this moment
    year = timedelta(days=365)
    old = [
        await entry_at(services, o, NOW - year - timedelta(minutes=n + 1))
        for o in (org, other)
        for n in range(3)
    ]
    kept = [
        await entry_at(services, org, NOW - year + timedelta(minutes=1)),
        await entry_at(services, other, NOW - timedelta(days=30)),  # the deliveries' window
    ]

    done = await pruned(services)  # batches of 2

    assert done["audit_entries"] == len(old)
    left = {r["id"] for o in (org, other) for r in await stored(services.engine, o.id)}
    assert left == set(kept)


async def test_the_window_is_the_setting(services: Services, org: Org) -> None:
    await pruned(services)
    week = dataclasses.replace(services.settings, audit_retention_days=7)
    shorter = dataclasses.replace(services, settings=week)
    gone = await entry_at(services, org, NOW - timedelta(days=8))
    stays = await entry_at(services, org, NOW - timedelta(days=6))
    assert (await pruned(shorter))["audit_entries"] >= 1  # with other tests' older ones
    assert {r["id"] for r in await stored(services.engine, org.id)} == {stays}
    assert gone != stays


def days(tmp_path: Path, value: str | None) -> int:
    env = {"HANGAR_DATABASE_URL": f"sqlite:///{tmp_path}/x.db"}
    if value is not None:
        env["HANGAR_AUDIT_RETENTION_DAYS"] = value
    return load_settings(env).audit_retention_days


@pytest.mark.parametrize(
    ("value", "read"), [(None, 365), ("", 365), ("1", 1), (" 30 ", 30), ("3650", 3650)]
)
def test_whole_days_are_read(tmp_path: Path, value: str | None, read: int) -> None:
    assert days(tmp_path, value) == read


@pytest.mark.parametrize("value", ["0", "3651", "-1", "1.5", "1y", "\u0661\u0660"])
def test_anything_else_is_refused_naming_the_setting(tmp_path: Path, value: str) -> None:
    with pytest.raises(ConfigError) as refused:
        days(tmp_path, value)
    assert str(refused.value) == REFUSAL.format(value.strip())


def test_a_process_does_not_start_with_a_bad_value_and_says_why_in_one_line(
    tmp_path: Path,
) -> None:
    stderr = refused_at_start(
        tmp_path, ["jobs", "run", "retention"], HANGAR_AUDIT_RETENTION_DAYS="0"
    )
    assert stderr == f"hangar: {REFUSAL.format('0')}\n"
