"""HANGAR_DELIVERY_RETENTION_DAYS: whole days from 1 to 3650, 30 when unset; anything else
stops every process that would prune (or serve) at its start, with one line that says so."""

from __future__ import annotations

from pathlib import Path

import pytest

from hangar.foundation.config import ConfigError, load_settings
from tests.fixtures.subprocesses import refused_at_start

REFUSAL = "HANGAR_DELIVERY_RETENTION_DAYS must be a whole number of days from 1 to 3650, not {!r}"


def settings_with(tmp_path: Path, value: str | None) -> int:
    env = {"HANGAR_DATABASE_URL": f"sqlite:///{tmp_path}/x.db"}
    if value is not None:
        env["HANGAR_DELIVERY_RETENTION_DAYS"] = value
    return load_settings(env).delivery_retention_days


@pytest.mark.parametrize(
    ("value", "days"),
    [(None, 30), ("", 30), ("1", 1), ("7", 7), (" 90 ", 90), ("3650", 3650)],
)
def test_whole_days_are_read(tmp_path: Path, value: str | None, days: int) -> None:
    assert settings_with(tmp_path, value) == days


# "\u0661\u0660": Arabic-Indic ten, digits to str.isdigit but not a number of days here.
@pytest.mark.parametrize("value", ["0", "3651", "-1", "1.5", "7d", "thirty", "\u0661\u0660", "1e3"])
def test_anything_else_is_refused_naming_the_setting(tmp_path: Path, value: str) -> None:
    with pytest.raises(ConfigError) as refused:
        settings_with(tmp_path, value)
    assert str(refused.value) == REFUSAL.format(value.strip())


@pytest.mark.parametrize("command", [["serve"], ["worker"], ["jobs", "run", "retention"]])
def test_a_process_does_not_start_with_a_bad_value_and_says_why_in_one_line(
    tmp_path: Path, command: list[str]
) -> None:
    stderr = refused_at_start(tmp_path, command, HANGAR_DELIVERY_RETENTION_DAYS="0")
    assert stderr == f"hangar: {REFUSAL.format('0')}\n"
