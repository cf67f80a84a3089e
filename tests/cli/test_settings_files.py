"""A command reads HANGAR_SECRET_KEY from HANGAR_SECRET_KEY_FILE, and refuses in one line when
the file cannot be read (issue 40; the rules: tests/operations/test_container_settings.py)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from tests.fixtures.cli import Cli


async def test_commands_read_the_key_from_its_file(cli: Cli, tmp_path: Path) -> None:
    key_file = tmp_path / "secret-key"
    key_file.write_text(f"{cli.env['HANGAR_SECRET_KEY']}\n")
    keyless = {k: v for k, v in cli.env.items() if k != "HANGAR_SECRET_KEY"}
    filed = dataclasses.replace(cli, env=keyless | {"HANGAR_SECRET_KEY_FILE": str(key_file)})
    assert (await filed.run("org", "create", "--name", "Filed Aero")).code == 0

    gone = tmp_path / "gone"
    refused = await filed.run(
        "org", "create", "--name", "Never", env={"HANGAR_SECRET_KEY_FILE": str(gone)}
    )
    assert refused.refused() == (
        f"hangar: HANGAR_SECRET_KEY_FILE: cannot read {gone}: No such file or directory"
    )
