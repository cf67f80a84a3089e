"""`./dev` with no command prints its usage: the comment block at its top, and no code."""

from __future__ import annotations

import subprocess
from pathlib import Path


def test_dev_without_a_command_prints_the_usage(repo_root: Path) -> None:
    done = subprocess.run(  # noqa: S603
        ["/bin/sh", str(repo_root / "dev")], capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 2
    lines = done.stdout.splitlines()
    assert all(line.startswith("#") for line in lines), done.stdout
    for command in ("./dev demo", "./dev test", "./dev hangar", "./dev lock"):
        assert any(command in line for line in lines), command
