"""HANGAR_LOG_LEVEL: the level of hangar's and uvicorn's loggers in every format and process;
other libraries write warnings and errors only, whatever it is."""

from __future__ import annotations

import logging

import pytest

from hangar.cli.processes import environment
from hangar.foundation.config import (
    LOG_FORMATS,
    LOG_LEVELS,
    ConfigError,
    LogFormat,
    LogLevel,
    load_settings,
    log_level,
)
from hangar.logs import formats
from tests.fixtures.environment import SECRET
from tests.fixtures.logs import captured_logs

NUMBERS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING}
NUMBERS["error"] = logging.ERROR
OURS = ("hangar.webhooks", "uvicorn.error")
OTHERS = ("alembic.runtime.migration", "sqlalchemy.engine")
PROCESSES: tuple[formats.Process, ...] = ("serve", "worker", "command")


@pytest.mark.parametrize("given", ["", "debug", "INFO", " Warning ", "error"])
def test_the_level_is_read_in_any_case(given: str) -> None:
    expected = given.strip().lower() or "info"
    assert log_level({"HANGAR_LOG_LEVEL": given} if given else {}) == expected


@pytest.mark.parametrize("given", ["verbose", "trace", "10", "warn"])
def test_another_level_is_refused(given: str) -> None:
    with pytest.raises(ConfigError) as refused:
        log_level({"HANGAR_LOG_LEVEL": given})
    assert str(refused.value) == (
        f"HANGAR_LOG_LEVEL must be debug, info, warning or error, not {given!r}"
    )


def test_every_process_of_serve_workers_gets_the_level() -> None:
    settings = load_settings({"HANGAR_SECRET_KEY": SECRET, "HANGAR_LOG_LEVEL": "DEBUG"})
    assert settings.log_level == "debug"
    assert load_settings(environment(settings)).log_level == "debug"


@pytest.mark.parametrize("fmt", LOG_FORMATS)
@pytest.mark.parametrize("process", PROCESSES)
@pytest.mark.parametrize("level", LOG_LEVELS)
def test_what_each_level_writes(fmt: LogFormat, process: formats.Process, level: LogLevel) -> None:
    shown = NUMBERS[level]
    with captured_logs(fmt, process, level) as output:
        for name in OURS + OTHERS:
            for number in NUMBERS.values():
                logging.getLogger(name).log(number, "%s at %s", name, number)
    text = output.getvalue()
    for name in OURS:
        for number in NUMBERS.values():
            assert (f"{name} at {number}" in text) == (number >= shown), (name, number, text)
    for name in OTHERS:
        for number in NUMBERS.values():
            assert (f"{name} at {number}" in text) == (number >= logging.WARNING), (name, text)
