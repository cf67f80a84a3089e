"""A process that cannot start says why in one line on stderr: `hangar: <reason>` in text, one
JSON object (level error) when HANGAR_LOG_FORMAT is json; and never quotes a secret."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fixtures.cli import Cli
from tests.fixtures.environment import SECRET

FORMATS = ["text", "json"]
SHORT_TOKEN = "tiny-metrics-token"
UNREACHABLE = "postgresql://hangar:pw-n0t-printed@127.0.0.1:1/hangar?password=pw-nor-this"


def reason(line: str, fmt: str) -> str:
    """The reason of a one-line failure in `fmt`."""
    if fmt == "text":
        assert line.startswith("hangar: "), line
        return line.removeprefix("hangar: ")
    record = json.loads(line)
    assert (record["level"], record["logger"]) == ("error", "hangar"), record
    assert record["timestamp"].endswith("Z")
    return str(record["message"])


@pytest.fixture
def taken_port() -> Iterator[int]:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        yield held.getsockname()[1]


@pytest.mark.parametrize("fmt", FORMATS)
async def test_a_bad_log_level_is_one_line_in_the_format(cli: Cli, fmt: str) -> None:
    env = {"HANGAR_LOG_FORMAT": fmt, "HANGAR_LOG_LEVEL": "verbose"}
    ran = await cli.run("worker", env=env)
    assert reason(ran.refused(), fmt) == (
        "HANGAR_LOG_LEVEL must be debug, info, warning or error, not 'verbose'"
    )


@pytest.mark.parametrize("fmt", FORMATS)
async def test_a_short_metrics_token_is_refused_without_quoting_it(cli: Cli, fmt: str) -> None:
    env = {"HANGAR_LOG_FORMAT": fmt, "HANGAR_METRICS_TOKEN": SHORT_TOKEN}
    ran = await cli.run("serve", "--port", "1", env=env)
    said = reason(ran.refused(), fmt)
    assert said.startswith("HANGAR_METRICS_TOKEN must be at least 32 characters")
    assert "secrets.token_urlsafe(32)" in said
    assert SHORT_TOKEN not in ran.stderr


@pytest.mark.parametrize("fmt", FORMATS)
# serve on port 0: its address check (before the migration) passes whatever runs on 8000.
@pytest.mark.parametrize("command", [["serve", "--port", "0"], ["worker"], ["db", "upgrade"]])
async def test_a_database_out_of_reach_is_one_line_without_its_password(
    cli: Cli, fmt: str, command: list[str]
) -> None:
    env = {"HANGAR_LOG_FORMAT": fmt, "HANGAR_DATABASE_URL": UNREACHABLE}
    ran = await cli.run(*command, env=env)
    said = reason(ran.refused(), fmt)
    assert said.startswith("cannot migrate the database (")
    assert said.endswith("check that it is up and reachable and that HANGAR_DATABASE_URL names it")
    assert "pw-n0t-printed" not in ran.stderr
    assert "pw-nor-this" not in ran.stderr
    assert SECRET not in ran.stderr


@pytest.mark.parametrize("fmt", FORMATS)
async def test_a_port_in_use_is_one_error_line_in_the_format(
    cli: Cli, fmt: str, taken_port: int
) -> None:
    ran = await cli.run(
        "serve", "--no-worker", "--port", str(taken_port), env={"HANGAR_LOG_FORMAT": fmt}
    )
    assert reason(ran.refused(), fmt) == (
        f"cannot serve on 127.0.0.1:{taken_port}: Address already in use; stop what listens "
        "there, or choose another --port or --host"
    )


@pytest.mark.parametrize("fmt", FORMATS)
async def test_worker_metrics_in_use_or_without_a_token_are_refused(
    cli: Cli, fmt: str, taken_port: int
) -> None:
    token = {"HANGAR_METRICS_TOKEN": "m" * 32, "HANGAR_LOG_FORMAT": fmt}
    in_use = await cli.run("worker", "--metrics-port", str(taken_port), env=token)
    assert reason(in_use.refused(), fmt) == (
        f"cannot serve the worker's metrics on 127.0.0.1:{taken_port}: Address already in use; "
        "choose another --metrics-port or --metrics-host"
    )
    tokenless = await cli.run("worker", "--metrics-port", "0", env={"HANGAR_LOG_FORMAT": fmt})
    assert reason(tokenless.refused(), fmt).startswith(
        "--metrics-port needs HANGAR_METRICS_TOKEN: "
    )


async def test_a_shared_metrics_directory_is_refused_and_left_as_it_was(
    cli: Cli, tmp_path: Path
) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "counter_1.db").write_bytes(b"another instance's")
    ran = await cli.run("worker", env={"PROMETHEUS_MULTIPROC_DIR": str(shared)})
    assert reason(ran.refused(), "text").startswith(
        "PROMETHEUS_MULTIPROC_DIR is set: take it out of the environment"
    )
    assert [p.name for p in shared.iterdir()] == ["counter_1.db"]
