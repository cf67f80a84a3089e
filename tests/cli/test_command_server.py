"""The command server the command-line tests fork `hangar` from (tests/fixtures/
command_server.py): a forked command answers as the installed entry point does; each has its
own environment (replaced, not added to the server's) and directory; several run at once; one
that outlives its timeout is killed; a dead server fails loudly; and what it relies on holds,
that importing hangar.cli reads no HANGAR_* setting."""

from __future__ import annotations

import ast
import asyncio
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fixtures.cli import ENTRY_POINT, Cli
from tests.fixtures.command_server import CommandServer
from tests.fixtures.environment import SECRET

BASE = {k: v for k, v in os.environ.items() if not k.startswith("HANGAR_")}


async def test_a_forked_command_answers_as_the_entry_point_does(cli: Cli) -> None:
    cases = [
        ("--version",),  # 0, on stdout
        ("key",),  # a group alone: its help ("Usage: hangar key ...") on stdout, and 2
        ("key", "create", "--org", cli.org_id),  # a mistake: one line on stderr, and 2
    ]

    forked = await asyncio.gather(*(cli.run(*args) for args in cases))
    real = await asyncio.gather(*(cli.run(*args, real=True) for args in cases))

    assert forked == real
    assert [ran.code for ran in forked] == [0, 2, 2]
    assert "Usage: hangar key " in forked[1].stdout
    assert forked[2].refused().startswith("hangar: Missing option '--name'")


@pytest.fixture
def server() -> Iterator[CommandServer]:
    """A server of this test's own, whose environment sets a log level no command accepts."""
    own = CommandServer(BASE | {"HANGAR_LOG_LEVEL": "verbose"})
    yield own
    own.stop()


async def test_each_command_has_its_own_environment_and_directory(
    server: CommandServer, tmp_path: Path
) -> None:
    env = BASE | {"HANGAR_DATABASE_URL": "sqlite:///here.db", "HANGAR_SECRET_KEY": SECRET}
    argv = [str(ENTRY_POINT), "db", "upgrade"]

    upgraded, refused = await asyncio.gather(
        server.run(argv, env, str(tmp_path), 60),
        server.run(argv, env | {"HANGAR_LOG_LEVEL": "loud"}, str(tmp_path), 60),
    )

    # Not the server's HANGAR_LOG_LEVEL (which would refuse it), and in its own directory.
    assert upgraded[0] == 0, upgraded[2]
    assert (tmp_path / "here.db").exists()
    assert refused == (
        1,
        b"",
        b"hangar: HANGAR_LOG_LEVEL must be debug, info, warning or error, not 'loud'\n",
    )


async def test_a_command_past_its_timeout_is_killed_and_a_dead_server_fails_loudly(
    server: CommandServer, tmp_path: Path
) -> None:
    probe = uuid.uuid4().hex
    env = BASE | {
        "HANGAR_DATABASE_URL": f"sqlite:///{tmp_path / 'w.db'}",
        "HANGAR_SECRET_KEY": SECRET,
        "HANGAR_LOG_LEVEL": "info",
        "HANGAR_PROBE": probe,  # how to find the child from outside
    }

    with pytest.raises(TimeoutError):
        await server.run([str(ENTRY_POINT), "worker"], env, str(tmp_path), 3)

    assert running_with(f"HANGAR_PROBE={probe}") == []
    version = await server.run([str(ENTRY_POINT), "--version"], env, str(tmp_path), 60)
    assert version[0] == 0
    server.process.kill()
    server.process.wait()
    with pytest.raises(RuntimeError, match="the command server failed"):
        await server.run([str(ENTRY_POINT), "--version"], env, str(tmp_path), 60)


def running_with(variable: str) -> list[int]:
    """The processes whose environment holds `variable` (NAME=value)."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and variable.encode() in (proc / "environ").read_bytes():
                found.append(int(proc.name))
        except OSError:
            continue  # gone, or not ours
    return found


# Replaces os.environ, before hangar.cli is imported, with one that notes what is read.
READS = """
import os

read = set()


class Reads(type(os.environ)):
    def __getitem__(self, key):  # and .get(), os.getenv()
        read.add(key)
        return super().__getitem__(key)

    def __contains__(self, key):
        read.add(key)
        return super().__contains__(key)


was = os.environ
os.environ = Reads(was._data, was.encodekey, was.decodekey, was.encodevalue, was.decodevalue)
import hangar.cli

print(sorted(read))
"""


def test_importing_the_command_line_reads_no_hangar_setting() -> None:
    done = subprocess.run(  # noqa: S603 (this interpreter, our own snippet)
        [sys.executable, "-c", READS], env=BASE, capture_output=True, text=True, check=True
    )
    read: list[str] = ast.literal_eval(done.stdout)
    assert "PROMETHEUS_MULTIPROC_DIR" in read  # what the server must not serve (it reads it)
    assert [name for name in read if name.startswith("HANGAR_")] == []
