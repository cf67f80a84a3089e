"""HANGAR_SECRET_KEY_PREVIOUS: former keys, comma-separated; a malformed list stops every
process at start with one line that names the setting and the key's place, never a key."""

from __future__ import annotations

from pathlib import Path

import pytest

from hangar.cli.processes import environment
from hangar.db.engine import make_engine
from hangar.foundation.config import ConfigError, load_settings
from tests.fixtures.key_rotation import NEW_KEY, OLD_KEY, hangar_with

SHORT = "too-short-to-be-a-key"


def loaded(previous: str) -> tuple[str, ...]:
    env = {
        "HANGAR_DATABASE_URL": "postgresql://hangar@db.example/hangar",
        "HANGAR_SECRET_KEY": NEW_KEY,
        "HANGAR_SECRET_KEY_PREVIOUS": previous,
    }
    return load_settings(env).previous_secret_keys


def test_previous_keys_are_read_in_order_around_spaces_and_empty_places() -> None:
    third = "a-third-key-from-long-ago-" + "t" * 32
    assert loaded(f" {OLD_KEY} ,, {third},{OLD_KEY}, ") == (OLD_KEY, third)
    assert loaded("") == ()
    assert loaded(" , ") == ()


@pytest.mark.parametrize(
    ("previous", "reason"),
    [
        (f"{OLD_KEY},{SHORT}", "key 2 of 2 is shorter than 32 characters"),
        (f"{NEW_KEY}", "key 1 of 1 is the current key"),
    ],
)
def test_a_short_key_or_the_current_key_is_refused_without_showing_it(
    previous: str, reason: str
) -> None:
    with pytest.raises(ConfigError) as refused:
        loaded(previous)
    message = str(refused.value)
    assert message.startswith("HANGAR_SECRET_KEY_PREVIOUS: " + reason)
    for key in (SHORT, OLD_KEY, NEW_KEY):
        assert key not in message


def test_the_previous_keys_reach_the_server_processes() -> None:
    current = load_settings(
        {
            "HANGAR_DATABASE_URL": "postgresql://hangar@db.example/hangar",
            "HANGAR_SECRET_KEY": NEW_KEY,
            "HANGAR_SECRET_KEY_PREVIOUS": OLD_KEY,
        }
    )
    assert load_settings(environment(current)) == current
    assert "HANGAR_SECRET_KEY_PREVIOUS" not in environment(
        load_settings(
            {
                "HANGAR_DATABASE_URL": "postgresql://hangar@db.example/hangar",
                "HANGAR_SECRET_KEY": NEW_KEY,
            }
        )
    )


@pytest.mark.parametrize("command", [["secrets", "reseal"], ["worker"], ["serve"]])
async def test_a_bad_previous_key_stops_each_process_at_start_with_one_line(
    tmp_path: Path, command: list[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'hangar.db'}"
    engine = make_engine(url)  # never connected: the settings are refused first
    try:
        hangar = hangar_with(engine, url, tmp_path, NEW_KEY, OLD_KEY, SHORT)
        line = (await hangar.run(*command)).refused()
    finally:
        await engine.dispose()
    assert line == (
        "hangar: HANGAR_SECRET_KEY_PREVIOUS: key 2 of 2 is shorter than 32 characters; list "
        "whole keys, as HANGAR_SECRET_KEY takes them, comma-separated"
    )
